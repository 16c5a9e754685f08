"""Rows of headline figures (issue 12 items 3 and 4, docs/views.md): a --dim
sweep (NAME=V1,V2, several: their cartesian product) and targets side by side
(--target, repeated), as text, --json and --csv. Each row must be the figures
the JSON report of that one point states (companions §8.3: --dim errors exit
1 with one line)."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from itertools import product

import pytest

from tests.conftest import PROGRAMS, REPO
from tilefoundry.cli.main import main

EXAMPLE = str(REPO / "src" / "tilefoundry" / "examples" / "rmsnorm_tiles.py")
SEQ_POOL = str(PROGRAMS / "p11_seq_variants.py") + ":SeqPool"
FAMILIES = ["--compute-cost", "--memory", "--roofline", "--performance"]

# p25's one-dimension program with a second dimension: a 2 x 2 grid of points
TWO_DIMS = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

TOKENS = DimVar("tokens", 1, 1025)
HIDDEN = DimVar("hidden", 16, 257)
TILE = 16
TILES = ceildiv(TOKENS, TILE)


@module(entry="tile_silu", target=CudaTarget("nvidia.h200_sxm"),
        topologies=(Topology("cta", TILES),))
class TokenTiles:
    @func
    def tile_silu(x: Tensor[(TILES, TILE, HIDDEN), "f32"]) -> Tensor[(TILES, TILE, HIDDEN), "f32"]:
        with Mesh(("cta",), (TILES,), ("t",)) as grid:
            tiles = tf.reshard(x, (TILES @ grid.t, TILE, HIDDEN), "gmem")
            return tf.silu(tiles)
'''


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _report(capsys, *argv) -> dict:
    code, out, err = _run(capsys, "analyze", "--json", *argv)
    assert (code, err) == (0, ""), err
    return json.loads(out)


def _expected_row(report: dict) -> dict:
    """A point's headline figures, read off its own JSON report by the
    families' own keys (analysis §1.2)."""
    records = report["function_records"]
    timeline = records["performance"]["timeline"]
    return {"target": report["target"],
            "flops": records["compute-cost"]["flops"],
            "service": records["compute-cost"]["service"],
            "traffic": records["traffic"]["whole"],
            "peak_bytes": {r["level"]: r["peak_bytes"] for r in records["memory"]["footprint"]},
            "ideal_ns": records["roofline"]["ideal_ns"],
            "bound_by": records["roofline"]["bound_by"],
            "predicted_ns": timeline["end_ns"] - timeline["start_ns"],
            "waves": records["performance"]["waves"]}


@pytest.fixture
def two_dims(tmp_path) -> str:
    path = tmp_path / "two_dims.py"
    path.write_text(TWO_DIMS)
    return str(path)


def test_sweep_cartesian_product_each_row_is_that_points_report(capsys, two_dims):
    tokens, hidden = (100, 200), (32, 64)
    document = _report(capsys, *FAMILIES, "--dim", "tokens=100,200", "--dim", "hidden=32,64", two_dims)
    rows = document["rows"]
    assert [r["dims"] for r in rows] == [{"tokens": t, "hidden": h} for t, h in product(tokens, hidden)]
    for row in rows:
        single = _report(capsys, *FAMILIES, "--dim", f"tokens={row['dims']['tokens']}",
                         "--dim", f"hidden={row['dims']['hidden']}", two_dims)
        assert {k: v for k, v in row.items() if k != "dims"} == _expected_row(single)
    assert document["requested"] == [f[2:] for f in FAMILIES]


def test_sweep_json_validates_against_its_schema(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    from tilefoundry.render.json_contract import load_schema

    document = _report(capsys, "--dim", "seq=96,1024", SEQ_POOL)
    jsonschema.Draft202012Validator(load_schema("analyze-rows")).validate(document)
    assert document["schema_version"] and document["tool"]["name"] == "tilefoundry"


def test_sweep_without_family_flags_runs_all_four(capsys):
    rows = _report(capsys, "--dim", "seq=96,128", SEQ_POOL)["rows"]
    assert all({"flops", "traffic", "peak_bytes", "ideal_ns", "predicted_ns"} <= set(r) for r in rows)


def test_sweep_states_only_the_requested_families(capsys):
    rows = _report(capsys, "--roofline", "--dim", "seq=96,128", SEQ_POOL)["rows"]
    assert [sorted(r) for r in rows] == [["bound_by", "dims", "ideal_ns", "target"]] * 2


def test_sweep_text_and_csv_state_the_same_cells(capsys):
    argv = ["analyze", *FAMILIES, "--dim", "seq=96,128,1024", SEQ_POOL]
    code, text, err = _run(capsys, *argv)
    assert (code, err) == (0, "")
    code, table, _ = _run(capsys, *argv, "--csv")
    rows = list(csv.reader(io.StringIO(table)))
    assert rows[0][:2] == ["target", "seq"] and [r[1] for r in rows[1:]] == ["96", "128", "1024"]
    lines = text.splitlines()
    assert lines[0].split() == rows[0]
    for line, cells in zip(lines[1:], rows[1:]):
        assert line.split() == [c or "-" for c in cells]  # a level a point lacks is '-'
    document = _report(capsys, *FAMILIES, "--dim", "seq=96,128,1024", SEQ_POOL)
    column = rows[0].index("traffic.gmem")
    for cells, row in zip(rows[1:], document["rows"]):
        gmem = row["traffic"]["gmem"]
        assert int(cells[column]) == gmem["read"] + gmem["write"]


def test_targets_side_by_side_one_row_per_target(capsys):
    targets = ["nvidia.h100_sxm", "nvidia.h200_sxm", "nvidia.b200_sxm"]
    argv = ["--compute-cost", "--memory", "--roofline"]
    rows = _report(capsys, *argv, *[a for t in targets for a in ("--target", t)], EXAMPLE)["rows"]
    assert [r["target"] for r in rows] == targets
    for row in rows:
        single = _report(capsys, *argv, "--target", row["target"], EXAMPLE)
        records = single["function_records"]
        assert single["target"] == row["target"]
        assert row["ideal_ns"] == records["roofline"]["ideal_ns"]
        assert row["flops"] == records["compute-cost"]["flops"]


def test_one_target_replaces_the_modules_own_in_the_report(capsys):
    code, out, err = _run(capsys, "analyze", "--roofline", "--target", "nvidia.b200_sxm", EXAMPLE)
    assert (code, err) == (0, "")
    assert out.startswith("# analysis target=nvidia.b200_sxm ")


_FP4_MATMUL = """
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="fp4_matmul", target=CudaTarget("nvidia.b200_sxm"), topologies=(Topology("cta", 4),))
class Fp4:
    @func
    def fp4_matmul(a: Tensor[(64, 64), "f4e2m1"], b: Tensor[(64, 64), "f4e2m1"]):
        with Mesh(("cta",), (4,), ("t",)) as grid:
            return tf.reshard(a, (64 @ grid.t, 64), "gmem") @ b
"""


def test_a_refused_point_names_it(capsys, tmp_path):
    # the H200 has no FP4 tensor-core mode: its performance point is refused
    source = tmp_path / "fp4.py"
    source.write_text(_FP4_MATMUL)
    code, out, err = _run(capsys, "analyze", "--performance", "--target", "nvidia.b200_sxm",
                          "--target", "nvidia.h200_sxm", str(source))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("tilefoundry: error: ") and "--target nvidia.h200_sxm: performance:" in err
    assert "no one-unit throughput for dtype 'f4e2m1'" in err


def test_unknown_target_is_one_line(capsys):
    code, out, err = _run(capsys, "analyze", "--target", "nvidia.h300", "--target", "cpu", EXAMPLE)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "nvidia.h300" in err


@pytest.mark.parametrize("argv, message", [
    (["--dim", "seq=96,128", "--top", "3"], "--top shows one analysis"),
    (["--dim", "seq=96,128", "--trace", "t.json"], "--trace shows one analysis"),
    (["--dim", "seq=96,128", "--csv", "--json"], "give either --json or --csv, not both"),
    (["--dim", "seq=96", "--csv"], "--csv prints rows: give several --target or a --dim NAME=V1,V2"),
])
def test_view_combinations_naming_no_one_answer_are_exit_2(capsys, argv, message):
    code, out, err = _run(capsys, "analyze", *argv, SEQ_POOL)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert message in err


def test_progress_is_silent_when_stderr_is_no_terminal():
    result = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--dim", "seq=96,128",
                             SEQ_POOL], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == ""


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_goes_to_stderr_when_it_is_a_terminal():
    pytest.importorskip("tqdm")
    import fcntl
    import struct
    import termios

    leader, follower = os.openpty()
    # a terminal 80 columns wide (a fresh pty has none, and a bar fits in none)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        result = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--csv", "--dim",
                                 "seq=96,128", SEQ_POOL], stdout=subprocess.PIPE, stderr=follower,
                                text=True, timeout=120)
        os.close(follower)
        follower = None
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: all read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert result.returncode == 0
    assert b"0/2" in shown and b"point" in shown  # the bar, cleared at the end (leave=False)
    assert list(csv.reader(io.StringIO(result.stdout)))[0][:2] == ["target", "seq"]  # stdout clean


# ------------------------------------------------- companions §8.3: the --dim rules


def test_8_3_comma_list_is_a_sweep_and_a_single_extent_the_report(capsys):
    code, out, _ = _run(capsys, "analyze", "--compute-cost", "--dim", "seq=96", SEQ_POOL)
    assert code == 0 and out.startswith("# analysis ")
    rows = _report(capsys, "--compute-cost", "--dim", "seq=96,128", SEQ_POOL)["rows"]
    assert [r["dims"] for r in rows] == [{"seq": 96}, {"seq": 128}]


@pytest.mark.parametrize("value", ["٩٦", "1_024", "+96", " 96", "96 ", "-96", "0x60", "９６"])
def test_8_3_an_extent_is_ascii_decimal_digits_only(capsys, value):
    code, out, err = _run(capsys, "analyze", "--dim", f"seq={value}", SEQ_POOL)
    assert code == 1 and out == "" and err.count("\n") == 1
    shown = f"'{value}'" if value.isascii() else f"'{value}' ({ascii(value)})"
    assert err == (f"tilefoundry: error: --dim seq: every value must be an integer, got {shown}; "
                   "write each EXTENT in ASCII digits 0-9 only (e.g. --dim seq=96 or "
                   "--dim seq=64,128)\n")


@pytest.mark.parametrize("item, message", [
    ("seq=96,", "--dim seq: every value must be an integer, got ''"),
    ("seq=96,96", "--dim seq lists 96 twice in 'seq=96,96'; list each EXTENT once"),
    ("seq=96,5000", "p11_seq_variants.py:17:7: --dim seq=5000: analyze: dimension 'seq' was declared over "
                    "[1, 4097) and cannot take 5000"),
])
def test_8_3_every_value_of_a_list_is_checked(capsys, item, message):
    code, out, err = _run(capsys, "analyze", "--dim", item, SEQ_POOL)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert message in err


def test_a_target_named_twice_is_exit_2(capsys):
    code, out, err = _run(capsys, "analyze", "--target", "cpu", "--target", "cpu", EXAMPLE)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--target cpu was given twice; name each target once" in err


def test_points_targets_outermost_then_the_dims_product_in_the_order_given():
    from tilefoundry.render.views.sweep import points_of

    points = points_of(["a", "b"], {"x": (1, 2), "y": (7, 8, 9)})
    expected = [(t, (("x", x), ("y", y))) for t in ("a", "b") for x in (1, 2) for y in (7, 8, 9)]
    assert [(p.target, p.dims) for p in points] == expected
    assert [(p.target, p.dims) for p in points_of([], None)] == [(None, ())]
