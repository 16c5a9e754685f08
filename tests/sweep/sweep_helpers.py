"""What the sweep tests share: small spaces written into a test's folder, and
the CLI run in-process."""
from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PROGRAMS = HERE.parents[0] / "data" / "programs"
P11 = PROGRAMS / "p11_seq_variants.py"  # SeqPool: one DimVar seq in [1, 4097)
P01 = PROGRAMS / "p01_rownorm_mesh.py"  # RowNormTiles: levels cta and thread, no DimVar


def space(folder: Path, text: str, name: str = "space.toml", copies=(P11,)) -> Path:
    """``text`` as ``folder/name``, with each of ``copies`` beside it (a
    space names its programs relative to its own folder)."""
    for source in copies:
        shutil.copy(source, folder / Path(source).name)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


#: a small space over two programs, two levels of one and three targets
SMALL = """
selections = ["p11_seq_variants.py:SeqPool", "p01_rownorm_mesh.py"]
targets = ["nvidia.h100_sxm", "nvidia.h200_sxm", "nvidia.b200_sxm"]
topologies = ["cta", "thread"]

[dims]
seq = [96, 128, 1024]
"""
SMALL_POINTS = 3 * 2 * 3 + 3 * 2  # SeqPool: targets x levels x seq; RowNormTiles: targets x levels


def small(folder: Path, name: str = "space.toml") -> Path:
    return space(folder, SMALL, name, copies=(P11, P01))


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    from tilefoundry.cli.main import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
