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


# Spec over reference (programs/README.md note 8): p21's loop reads `v5 = grid.w * STEP`,
# computed inside its body, on every trip. analysis §1.2.2 / §2.1 make every source
# buffer the loop's accesses reach one footprint row, wherever it was computed, so the
# row v5@rmem:8/8/128 (8 B; 16 trips of 8 B repeated) belongs where the reference omits it.
EXTRA_LOOP_ROWS = {
    "p21_mesh_coordinate_loop.StridedDot": [
        {"buffer": "v5", "bytes": 8, "device_bytes": 8, "level": "rmem", "repeated_bytes": 128},
    ],
}


def _row_text(row: dict) -> str:
    return f"{row['buffer']}@{row['level']}:{row['bytes']}/{row['device_bytes']}/{row['repeated_bytes']}"


def _with_rows(part: str, rows: list) -> str:
    """A golden `loop-footprint footprints=...` comment with ``rows`` in their sorted places."""
    head, _, rest = part.partition("footprints=")
    listed, space, tail = rest.partition(" ")
    entries = sorted(listed.split(",") + [_row_text(r) for r in rows], key=lambda e: e.split("@")[0])
    return f"{head}footprints={','.join(entries)}{space}{tail}"


def _expected_loops(stem: str, text: str, data: dict) -> tuple[list, list]:
    parts = [p for p in (_part(l, "loop-footprint") for l in text.splitlines()) if p]
    loops = data["loops"]
    rows = EXTRA_LOOP_ROWS.get(stem)
    if rows:
        parts = [_with_rows(p, rows) for p in parts]
        loops = [{**loop, "loop-footprint": {**loop["loop-footprint"], "footprints": sorted(
            loop["loop-footprint"]["footprints"] + rows, key=lambda r: r["buffer"])}}
            for loop in loops]
    return parts, loops


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_1_2_2_loop_footprint_and_cache_pressure_equal_golden(runs, stem):
    text, data = _expected(stem)
    want_parts, want_loops = _expected_loops(stem, text, data)
    got = [_part(l, "loop-footprint") for l in runs[stem].program.splitlines()]
    assert [p for p in got if p] == want_parts
    # `source` is the JSON contract's addition (docs/json.md); the reference has none
    ours = [{k: v for k, v in row.items() if k != "source"} for row in runs[stem].report["loops"]]
    assert ours == want_loops


def test_1_2_2_extra_loop_rows_are_ones_the_reference_lacks():
    """Each spec-over-reference row must be absent from the golden file: a row the
    reference already lists would be counted twice and the test above would fail."""
    for stem, rows in EXTRA_LOOP_ROWS.items():
        text, data = _expected(stem)
        listed = {r["buffer"] for loop in data["loops"] for r in loop["loop-footprint"]["footprints"]}
        assert not listed & {r["buffer"] for r in rows}
        assert all(_row_text(r) not in text for r in rows)


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
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import AnalysisError

    module, function = load_selection(str(PROGRAMS / selector))
    with pytest.raises(AnalysisError) as caught:
        analyze(module, function, analysis=["compute-cost", "memory"], dims=dims)
    assert f"tilefoundry: error: {caught.value}" == _refusal(stem)[-1]
    assert function.get_metadata  # the authored IR is untouched by a refusal
