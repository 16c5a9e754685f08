"""Issue 40 item 8: `tilefoundry diff A B`. Two selections, or one under two --target or
one --dim NAME=V1,V2, side by side: every figure `Analysis.figures()` states for every
family (api.FIGURES, so a family added there is compared too) with the ratio B/A, and the
statements whose time moved most first, each side's time being its own `--top` figure."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest

from tests.conftest import PROGRAMS
from tilefoundry.cli.main import main

GEMM = str(PROGRAMS / "p03_tiled_gemm.py")
SPLIT_K = str(PROGRAMS / "p04_split_k_partial.py")
SEQ_POOL = str(PROGRAMS / "p11_seq_variants.py") + ":SeqPool"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _diff(capsys, *argv) -> dict:
    code, out, err = _run(capsys, "diff", "--json", *argv)
    assert (code, err) == (0, ""), err
    return json.loads(out)


def _flat(figures: dict) -> dict:
    flat = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            for inner, item in _flat(value).items():
                flat[f"{key}.{inner}"] = item
        else:
            flat[key] = value
    return flat


def _expected_figures(side_a: dict, side_b: dict) -> dict:
    """figure -> (a, b, ratio) from each side's own tilefoundry.analyze(...).figures()."""
    import tilefoundry

    found = []
    for side in (side_a, side_b):
        analysis = tilefoundry.analyze(side["selection"], families="all", target=side["target"],
                                       dims=side["dims"] or None)
        found.append(_flat(analysis.figures()))
    expected = {}
    for name in {**found[0], **found[1]}:
        a, b = found[0].get(name), found[1].get(name)
        if a is None and b is None:
            continue
        numeric = all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b))
        ratio = float(round(Fraction(b, a), 4)) if numeric and a else None
        expected[name] = (a, b, ratio)
    return expected


def _top_times(capsys, selection, *flags) -> list[tuple]:
    """(statement, time_ns) of every call, from that side's own `analyze --top --json`."""
    code, out, err = _run(capsys, "analyze", "--top", "1000", "--json", *flags, selection)
    return sorted((row["statement"], row["time_ns"]) for row in json.loads(out)["statements"])


def _check_statements(capsys, document, flags_a, flags_b):
    moved = document["statements"]
    deltas = [abs(row["delta_ns"]) for row in moved]
    assert deltas == sorted(deltas, reverse=True)  # what moved most first
    for row, flags, side in ((moved, flags_a, "a"), (moved, flags_b, "b")):
        ours = sorted((m[side]["statement"], m[side]["time_ns"]) for m in row if m[side])
        assert ours == _top_times(capsys, document[side]["selection"], *flags)
    for row in moved:
        a = row["a"]["time_ns"] if row["a"] else 0
        b = row["b"]["time_ns"] if row["b"] else 0
        assert row["delta_ns"] == b - a
        assert row["ratio"] == (float(round(Fraction(b, a), 4)) if a else None)


def test_item8_one_selection_under_two_targets(capsys):
    document = _diff(capsys, "--top", "100", "--target", "nvidia.h200_sxm",
                     "--target", "nvidia.h100_sxm", GEMM)
    assert (document["a"]["target"], document["b"]["target"]) == ("nvidia.h200_sxm", "nvidia.h100_sxm")
    expected = _expected_figures(document["a"], document["b"])
    assert {row["figure"]: (row["a"], row["b"], row["ratio"]) for row in document["figures"]} == expected
    # every family the targets serve ran on both sides, whichever api.FAMILIES lists
    from tilefoundry.api import FAMILIES

    assert set(document["a"]["families"]) <= set(FAMILIES) and "performance" in document["a"]["families"]
    _check_statements(capsys, document, ("--target", "nvidia.h200_sxm"), ("--target", "nvidia.h100_sxm"))


def test_item8_one_selection_under_two_bindings(capsys):
    document = _diff(capsys, "--top", "100", "--dim", "seq=96,1024", SEQ_POOL)
    assert (document["a"]["dims"], document["b"]["dims"]) == ({"seq": 96}, {"seq": 1024})
    expected = _expected_figures(document["a"], document["b"])
    assert {row["figure"]: (row["a"], row["b"], row["ratio"]) for row in document["figures"]} == expected
    _check_statements(capsys, document, ("--dim", "seq=96"), ("--dim", "seq=1024"))


def test_item8_two_selections_text(capsys):
    code, out, err = _run(capsys, "diff", "--top", "3", GEMM, SPLIT_K)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == [f"# A: {GEMM} --target nvidia.h200_sxm", f"# B: {SPLIT_K} --target nvidia.h200_sxm"]
    expected = _expected_figures({"selection": GEMM, "target": None, "dims": {}},
                                 {"selection": SPLIT_K, "target": None, "dims": {}})
    a, b, ratio = expected["predicted_ns"]
    row = next(line for line in lines if line.startswith("predicted_ns "))
    assert row.split() == ["predicted_ns", str(a), str(b), f"{ratio:.4f}"]
    heading = next(i for i, line in enumerate(lines) if line.startswith("# the 3 statements"))
    assert len(lines) == heading + 2 + 3  # the heading, the column line, three statements


@pytest.mark.parametrize("argv, message", [
    ((GEMM,), "diff compares two analyses: give two selections, or one selection with two "
              "--target or one --dim NAME=V1,V2"),
    (("--target", "nvidia.h200_sxm", "--target", "nvidia.h100_sxm", GEMM, SPLIT_K),
     "diff compares along one thing at a time"),
    ((GEMM, SPLIT_K, GEMM), "diff compares two analyses, got 3 selections"),
    (("--dim", "seq=96,128,1024", SEQ_POOL), "diff compares two bindings: give one --dim NAME=V1,V2"),
])
def test_item8_a_command_line_naming_no_pair_is_exit_2(capsys, argv, message):
    code, out, err = _run(capsys, "diff", *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"tilefoundry: error: {message}") and err.count("\n") == 1


@pytest.mark.parametrize("statement, callee", [
    ("v7 = matmul(v3, v6)", "matmul"),
    ("v2 = a[mm, kk]", "slice"),  # a subscript: its leading name is a value
    ("v5 = reshard(v4, layout=ShardLayout(layout=Layout((64, 4, 96), None)), storage=smem)", "reshard"),
])
def test_item8_statements_match_by_what_they_call(statement, callee):
    from tilefoundry.render.views.diff import _callee

    assert _callee(statement) == callee
