"""``tilefoundry pack FILE.csv --capacity N``: the summary line, --json against
its schema, --plot, and one-line refusals of bad buffer files (exit 1)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tilefoundry.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[2] / "bench" / "data" / "minimalloc" / "input.12.csv"


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_pack_prints_status_peak_and_time(capsys):
    code, out, err = run(capsys, "pack", str(EXAMPLE), "--capacity", "12")
    assert (code, err) == (0, "")
    line, = out.splitlines()
    assert line.startswith(f"# pack file={EXAMPLE} buffers=5 capacity=12 status=optimal peak=12 "
                           "live-peak=12 settled-by=greedy seconds=")


def test_pack_reports_the_search_where_first_fit_fails(capsys, tmp_path):
    # first fit, largest first, leaves a 1-byte gap for a 2-byte buffer here
    # (test_packing_statuses.FIRST_FIT_FAILS); the search packs it at its peak
    path = tmp_path / "tight.csv"
    path.write_text("id,lower,upper,size\nlong,0,5,2\ns1,0,1,2\ns2,0,1,2\nmid,1,3,3\n")
    code, out, err = run(capsys, "pack", str(path), "--capacity", "6")
    assert (code, err) == (0, "")
    assert " status=optimal peak=6 live-peak=6 settled-by=search " in out


def test_pack_that_cannot_fit_is_an_answer(capsys):
    code, out, err = run(capsys, "pack", str(EXAMPLE), "--capacity", "11")
    assert (code, err) == (0, "")
    assert " status=infeasible peak=- live-peak=12 settled-by=live-bytes " in out


def test_pack_json_is_valid_against_its_schema(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    from tilefoundry.render.json_contract import load_schema

    code, out, err = run(capsys, "pack", str(EXAMPLE), "--capacity", "12", "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    jsonschema.validate(document, load_schema("pack"))
    assert (document["status"], document["peak"], document["live_peak"]) == ("optimal", 12, 12)
    assert [o["id"] for o in document["offsets"]] == ["b1", "b2", "b3", "b4", "b5"]


def test_pack_plot_writes_an_svg(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    svg = tmp_path / "packing.svg"
    code, _, err = run(capsys, "pack", str(EXAMPLE), "--capacity", "12", "--plot", str(svg))
    assert (code, err) == (0, "")
    assert "<svg" in svg.read_text()


def test_pack_plot_without_matplotlib_says_how_to_get_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    code, out, err = run(capsys, "pack", str(EXAMPLE), "--capacity", "12", "--plot",
                         str(tmp_path / "p.svg"))
    assert (code, out) == (1, "")
    assert err.splitlines() == ["tilefoundry: error: --plot needs matplotlib, which is not "
                                "installed; pip install 'tilefoundry[plots]'"]


HEADER = "id,lower,upper,size\n"


@pytest.mark.parametrize("content, says", [
    (b"", "{f}:1:1: the file is empty; give a header id,lower,upper,size and one row per buffer"),
    (b"id,lower,size\na,0,4\n", "{f}:1:1: the header lacks column 'upper' (header: id,lower,size); "
                                "give a header id,lower,upper,size and one row per buffer"),
    ((HEADER + "a,0,x,4\n").encode(), "{f}:2:5: upper 'x' is not an integer; give upper as a base-10 integer of ASCII digits 0-9 (an optional leading minus)"),
    ((HEADER + "a,0,2,4\nb,0,2,-1\n").encode(),
     "{f}:3:7: size -1 of buffer 'b' is negative; a size is a byte count >= 0"),
    ((HEADER + "a,2,2,4\n").encode(),
     "{f}:2:5: buffer 'a' lives over [2, 2), which is empty; upper is exclusive and must exceed lower"),
    ((HEADER + "a,0,2,4\na,2,4,4\n").encode(),
     "{f}:3:1: id 'a' repeats the buffer of line 2; ids must be unique (rename one)"),
    ((HEADER + "a,0,2,4,9\n").encode(),
     "{f}:2:1: 5 fields where the header has 4; give a header id,lower,upper,size and one row per buffer"),
    (HEADER.encode() + b"\xe9,0,2,4\n", "{f}:2:1: byte 0xe9 is not UTF-8; a buffer file is UTF-8 text (save it as UTF-8)"),
])
def test_pack_refuses_a_bad_buffer_file_in_one_line(content, says, capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    code, out, err = run(capsys, "pack", str(path), "--capacity", "8")
    assert (code, out) == (1, "")
    assert err.splitlines() == ["tilefoundry: error: " + says.format(f=path)]


def test_pack_missing_file_and_bad_capacity(capsys, tmp_path):
    code, _, err = run(capsys, "pack", str(tmp_path / "none.csv"), "--capacity", "8")
    assert code == 1 and err.startswith(f"tilefoundry: error: {tmp_path / 'none.csv'}: no such file")
    code, _, err = run(capsys, "pack", str(EXAMPLE), "--capacity", "-3")
    assert code == 2 and "-3 is negative" in err and len(err.splitlines()) == 1


def test_pack_progress_stays_off_a_non_terminal_stderr():
    import subprocess

    done = subprocess.run([sys.executable, "-m", "tilefoundry", "pack", str(EXAMPLE), "--capacity", "12"],
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
