"""Golden: the memory family on every program of ../shared/programs equals
expected/ -- the `# traffic`, `# peak-footprint` and `# advisory` summary
lines, every equation's traffic comment, every loop's loop-footprint comment,
and the JSON function_records.memory (footprint, lifetimes, advisories,
allocation), function_records.traffic, calls[].traffic and loops[]
(loop-footprint, cache-pressure); plus the reference's two memory refusals
(p12 at width=1024: smem capacity; p15: a CPU target states no memory facts).

Equations are compared as multisets: the reference's value names and the
visiting order of a loop's yields may differ (p11 prints the `peak` chain
before the `total` chain, so its v6/v8 operand NAMES are swapped there; the
amounts are equal). Operand names are therefore compared everywhere except
p11, and operand amounts everywhere.

Spec over reference (programs/README "looks wrong" §6): an empty footprint
prints the bare family `peak-footprint`, not `peak-footprint=` -- no golden
program has an empty footprint, see tests/analysis/test_memory_spec.py.
"""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tests.conftest import PROGRAMS
from tests.golden.golden_runs import comment_part, entries_for, expected_outputs, render_runs

pytest.importorskip("tilefoundry.analysis.memory")

ENTRIES = entries_for("memory")
NAMES_DIFFER = {"p11_seq_variants.SeqPool"}  # carried-chain naming order only


_part = comment_part


@pytest.fixture(scope="module")
def runs():
    return render_runs(ENTRIES, "memory")


# Spec over reference (companions §2.7 step 5: finer splits never divide): p23
# runs on one CTA and splits only over the finer thread level, so at topology=cta
# every per-unit traffic figure equals its whole; the reference quarters the
# accumulator-fragment values' share (its A/B fragments, split over the same
# thread axes, it does not). Their expected outputs are the reference's with each
# per-unit figure replaced by the whole beside it -- footprints, lifetimes and
# whole figures are the reference's own.
PER_UNIT_IS_WHOLE = {"p23_mma_fragment.WarpTile", "p23_mma_fragment.CFragment"}
_RECORD = re.compile(r"(\w+):r(\d+)/w(\d+)@r\d+/w\d+")


def _whole_per_unit(node):
    if isinstance(node, dict):
        if "per_unit" in node and "whole" in node:
            node = dict(node, per_unit=node["whole"])
        return {key: _whole_per_unit(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_whole_per_unit(value) for value in node]
    return node


def _expected(stem):
    text, data = expected_outputs(stem)
    if stem in PER_UNIT_IS_WHOLE:
        return _RECORD.sub(r"\1:r\2/w\3@r\2/w\3", text), _whole_per_unit(data)
    return text, data


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_1_2_2_memory_summary_lines_equal_golden(runs, stem):
    text, _ = _expected(stem)
    prefixes = ("# traffic", "# peak-footprint", "# advisory")
    assert [l for l in runs[stem].summary if l.startswith(prefixes)] == \
        [l for l in text.splitlines() if l.startswith(prefixes)]


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_1_2_2_every_equation_traffic_comment_equals_golden(runs, stem):
    text, _ = _expected(stem)
    got = Counter(p for p in map(lambda l: _part(l, "traffic"), runs[stem].program.splitlines()) if p)
    want = Counter(p for p in map(lambda l: _part(l, "traffic"), text.splitlines()) if p)
    assert got == want


# Not settled yet: p21's loop lists one row the reference omits, v5@rmem:8/8/128 --
# the i64 scalar `grid.w * STEP` that `add(kk, v5)` reads on every trip (its
# repeated bytes 8 * 16 trips; the reference's own traffic charges those 16 reads).
# Whether a loop-invariant value computed inside the body from a mesh coordinate
# (whose `local` op has no access relation) is a source buffer of the loop is not
# stated by analysis §1.2.2 / §2.1; every other row and the status equal the reference.
UNSETTLED_LOOPS = {
    "p21_mesh_coordinate_loop.StridedDot":
        "v5@rmem: a loop-invariant scalar read each trip -- reference omits the row; "
        "analysis §1.2.2/§2.1 do not decide",
}


def _loop_case(stem):
    if stem in UNSETTLED_LOOPS:
        return pytest.param(stem, marks=pytest.mark.xfail(strict=True, reason=UNSETTLED_LOOPS[stem]))
    return stem


@pytest.mark.parametrize("stem", [_loop_case(e["stem"]) for e in ENTRIES])
def test_1_2_2_loop_footprint_and_cache_pressure_equal_golden(runs, stem):
    text, data = _expected(stem)
    got = [_part(l, "loop-footprint") for l in runs[stem].program.splitlines()]
    want = [_part(l, "loop-footprint") for l in text.splitlines()]
    assert [p for p in got if p] == [p for p in want if p]
    # `source` is the JSON contract's addition (docs/json.md); the reference has none
    ours = [{k: v for k, v in row.items() if k != "source"} for row in runs[stem].report["loops"]]
    assert ours == data["loops"]


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_1_2_2_json_memory_and_function_traffic_equal_golden(runs, stem):
    _, data = _expected(stem)
    got = runs[stem].report["function_records"]
    assert got["memory"] == data["function_records"]["memory"]
    assert got["traffic"] == data["function_records"]["traffic"]
    assert runs[stem].report["totals"]["traffic"] == data["totals"]["traffic"]


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_1_2_2_json_call_traffic_equals_golden(runs, stem):
    _, data = _expected(stem)

    def rows(calls, names):
        found = Counter()
        for call in calls:
            traffic = json.loads(json.dumps(call["traffic"]))
            if not names:
                for op in traffic.get("operands", []):
                    op.pop("name")
            found[json.dumps(traffic, sort_keys=True)] += 1
        return found

    names = stem not in NAMES_DIFFER
    assert rows(runs[stem].report["calls"], names) == rows(data["calls"], names)


def _refusal(stem):
    notes = (PROGRAMS / "expected" / f"{stem}.notes.txt").read_text().splitlines()
    lines = [l.strip() for l in notes if "tilefoundry: error:" in l]
    return lines


@pytest.mark.parametrize("stem,selector,dims", [
    ("p12_smem_overflow.StagedProduct", "p12_smem_overflow.py:StagedProduct", {"width": 1024}),
    ("p15_cpu_host_scale.HostScale", "p15_cpu_host_scale.py:HostScale", None),
])
def test_1_2_2_memory_refusals_equal_golden(stem, selector, dims):
    from tilefoundry.analysis.api import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import AnalysisError

    module, function = load_selection(str(PROGRAMS / selector))
    with pytest.raises(AnalysisError) as caught:
        analyze(module, function, analysis=["compute-cost", "memory"], dims=dims)
    assert f"tilefoundry: error: {caught.value}" == _refusal(stem)[-1]
    assert function.get_metadata  # the authored IR is untouched by a refusal
