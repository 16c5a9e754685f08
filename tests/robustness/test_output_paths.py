"""Issue 22 item 10 (and part of 13): every output flag is checked before the
work — a FIFO never blocks, a directory, a missing folder or an empty path is
one "cannot write"-style line with exit 1, and two flags naming one file are
refused."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tilefoundry.cli.main import main

P03 = str(Path(__file__).resolve().parents[1] / "data" / "programs" / "p03_tiled_gemm.py")
CSV = str(Path(__file__).resolve().parents[2] / "bench" / "data" / "minimalloc" / "input.12.csv")
SPACE = str(Path(__file__).resolve().parents[2] / "examples" / "sweep_zoo.toml")

COMMANDS = [
    ("--trace", ["analyze", "--performance", "--trace", "{path}", P03]),
    ("--html", ["analyze", "--html", "{path}", P03]),
    ("--plot", ["analyze", "--dim", "x=1,2", "--plot", "{path}", P03]),
    ("--output", ["analyze", "--output", "{path}", P03]),
    ("--save", ["run", "--save", "{path}", P03]),
    ("--plot", ["pack", CSV, "--capacity", "12", "--plot", "{path}"]),
    ("--output", ["sweep", "--output", "{path}", SPACE]),
]


def _line(capsys, argv) -> tuple[int, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return code, lines[0]


@pytest.mark.parametrize("flag,argv", COMMANDS, ids=[f"{a[0]}{f}" for f, a in COMMANDS])
def test_bad_output_paths_are_refused_before_the_work(tmp_path, capsys, flag, argv):
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    cases = {
        str(fifo): f"{flag} {fifo} is a pipe, not a file",
        str(tmp_path): f"{flag} {tmp_path} is a directory, not a file",
        str(tmp_path / "no" / "such.svg"): f"cannot write {flag} {tmp_path / 'no' / 'such.svg'}: its folder",
        "": f"{flag} names no file (an empty path)",
    }
    for path, expected in cases.items():
        code, line = _line(capsys, [a.format(path=path) for a in argv])
        assert code == 1 and expected in line, line


def test_two_flags_naming_one_file_are_refused(tmp_path, capsys):
    path = str(tmp_path / "same.html")
    code, line = _line(capsys, ["analyze", "--performance", "--trace", path, "--html", path, P03])
    assert code == 1 and "--trace and --html both name" in line
    assert not os.path.exists(path)
