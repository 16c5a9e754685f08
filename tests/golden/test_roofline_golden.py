"""Golden: the roofline family on every program of ../shared/programs where the
reference ran it equals expected/ exactly -- the `# roofline` summary line,
every equation's roofline comment (in program order), the JSON
function_records.roofline and every call's JSON roofline projection (in call
order, by value name); plus the p12 refusal at width=1024 (smem capacity, met
through roofline's memory dependency).

Roofline reads the Function's whole figures (ComputeCostMetadata.flops and
TrafficMetadata.whole), never the per-unit ones, so the reference's per-unit
flops deviation on p03/p04/p10 (programs/README "looks wrong" §1) leaves every
roofline figure equal to the reference: no program needs a fix-up here.

The run requests roofline ALONE (dependencies executed, not requested), which
is also where the spec and the reference's renderings part (README §6): the
spec's reduced view is pinned in tests/analysis/test_roofline_rendering.py.

Call JSON rows are matched by value NAME and order, not by `<name>:<line>`:
our printer writes one mesh-prelude line per distinct Mesh where the reference
repeats an equal Mesh (p01, p16), which shifts the line numbers only.
"""
from __future__ import annotations


import pytest

from tests.conftest import PROGRAMS, golden_manifest
from tests.golden.golden_runs import comment_part, entries_for, expected_outputs, render_runs

pytest.importorskip("tilefoundry.analysis.roofline")

ENTRIES = entries_for("roofline")


def _part(line: str):
    return comment_part(line, "roofline")


def _program_lines(text: str) -> list[str]:
    lines = text.splitlines()
    return lines[lines.index("") + 1:]


@pytest.fixture(scope="module")
def runs():
    return render_runs(ENTRIES, "roofline")


def _expected(stem):
    return expected_outputs(stem)


def test_golden_roofline_covers_every_program_the_reference_ran_it_on():
    # every valid run but the two whose memory (and so roofline) the reference refused
    refused = {"p12_smem_overflow.StagedProduct", "p15_cpu_host_scale.HostScale"}
    every_run = {e["stem"] for e in golden_manifest()["valid"]}
    assert {e["stem"] for e in ENTRIES} == every_run - refused


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_golden_1_2_3_roofline_summary_line(runs, stem):
    text, _ = _expected(stem)
    want = [l for l in text.splitlines() if l.startswith("# roofline")]
    assert len(want) == 1
    assert [l for l in runs[stem].summary if l.startswith("# roofline")] == want


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_golden_1_2_3_every_equation_roofline_comment(runs, stem):
    text, _ = _expected(stem)
    got = [p for p in map(_part, runs[stem].program.splitlines()) if p]
    want = [p for p in map(_part, _program_lines(text)) if p]
    assert got == want


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_golden_1_2_3_json_function_roofline(runs, stem):
    _, data = _expected(stem)
    assert runs[stem].report["function_records"]["roofline"] == \
        data["function_records"]["roofline"]


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_golden_1_2_3_json_call_roofline(runs, stem):
    _, data = _expected(stem)

    def rows(calls):
        return [(c["value"].rsplit(":", 1)[0], c["roofline"]) for c in calls]

    assert rows(runs[stem].report["calls"]) == rows(data["calls"])


@pytest.mark.parametrize("stem", [e["stem"] for e in ENTRIES])
def test_golden_1_2_3_bounded_flops_total(runs, stem):
    _, data = _expected(stem)
    assert runs[stem].report["totals"]["flops"] == data["totals"]["flops"]


def test_golden_1_2_3_p12_refused_through_memory():
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import AnalysisError

    notes = (PROGRAMS / "expected" / "p12_smem_overflow.StagedProduct.notes.txt").read_text()
    refusals = [l.strip() for l in notes.splitlines() if "tilefoundry: error:" in l]
    module, function = load_selection(str(PROGRAMS / "p12_smem_overflow.py:StagedProduct"))
    with pytest.raises(AnalysisError) as caught:
        analyze(module, function, analysis=["compute-cost", "memory", "roofline"],
                dims={"width": 1024})
    assert f"tilefoundry: error: {caught.value}" == refusals[1]


def test_golden_1_2_3_full_selection_totals_equal_reference():
    """With memory requested too, totals state every level (memory's full form)."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import report

    _, data = _expected("p01_rownorm_mesh.RowNormTiles")
    module, function = load_selection(str(PROGRAMS / "p01_rownorm_mesh.py:RowNormTiles"))
    got = report(analyze(module, function, analysis=["compute-cost", "memory", "roofline"]))
    assert got["totals"] == data["totals"]
    assert got["function_records"]["roofline"] == data["function_records"]["roofline"]
    assert got["function_records"]["memory"] == data["function_records"]["memory"]
