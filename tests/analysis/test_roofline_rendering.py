"""roofline renderings (analysis §1 rendering rules, §1.2.3; companions §7.2,
§7.3 line 7, §7.5).

Spec over reference (programs/README "looks wrong" §6, companions §7.5): with
roofline requested and memory not, the reference's JSON function_records holds
only `roofline` and totals.traffic lists every level. The spec promotes
roofline's bounded evidence and nothing else: totals carry the exact summed
flops and the bandwidth-level bytes the bound divides, and
function_records.memory carries only level and peak_bytes per footprint row.
Dependency records nobody requested stay on the IR and are not reported.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import PROGRAMS

pytest.importorskip("tilefoundry.analysis.roofline")

P01 = "p01_rownorm_mesh.py:RowNormTiles"


def _render(selector, analysis):
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    module, function = load_selection(str(PROGRAMS / selector))
    return render_analysis(analyze(module, function, analysis=analysis))


def _expected(stem):
    return json.loads((PROGRAMS / "expected" / f"{stem}.json").read_text())


def test_1_2_3_roofline_alone_reports_the_reduced_memory_view_spec_over_reference():
    rendering = _render(P01, "roofline")
    records = rendering.report["function_records"]
    assert set(records) == {"roofline", "memory"}  # reference: {"roofline"} only
    assert records["memory"] == {"footprint": [{"level": "gmem", "peak_bytes": 98304},
                                               {"level": "rmem", "peak_bytes": 132}]}
    # the rows are memory's own record, reduced
    full = _expected("p01_rownorm_mesh.RowNormTiles")["function_records"]["memory"]
    assert records["memory"]["footprint"] == \
        [{"level": r["level"], "peak_bytes": r["peak_bytes"]} for r in full["footprint"]]


def test_1_2_3_roofline_alone_totals_are_the_bounded_evidence_spec_over_reference():
    rendering = _render(P01, "roofline")
    golden = _expected("p01_rownorm_mesh.RowNormTiles")["totals"]
    assert rendering.report["totals"]["flops"] == golden["flops"]
    # only the bandwidth level's bytes (reference: every level)
    assert rendering.report["totals"]["traffic"] == {"gmem": golden["traffic"]["gmem"]}


def test_1_2_3_roofline_alone_promotes_nothing_else():
    rendering = _render(P01, "roofline")
    summary = rendering.summary
    assert summary[1] == "# selection requested=roofline executed=compute-cost,memory,roofline"
    assert summary[2:] == ["# roofline ideal-ns=21 bound-by=memory"]
    assert "compute-cost" not in rendering.program and "traffic" not in rendering.program
    for call in rendering.report["calls"]:
        assert set(call) == {"value", "source", "roofline"}  # source: the JSON contract's
    assert rendering.report["loops"] == []


def test_1_2_3_roofline_alone_loops_get_no_footprint_rows():
    rendering = _render("p03_tiled_gemm.py:TiledGemm", "roofline")
    assert "loop-footprint" not in rendering.program
    assert rendering.report["loops"] == []
    assert set(rendering.report["function_records"]["memory"]) == {"footprint"}


def test_1_2_3_requesting_memory_selects_its_full_form():
    rendering = _render(P01, ["memory", "roofline"])
    golden = _expected("p01_rownorm_mesh.RowNormTiles")
    assert rendering.report["function_records"]["memory"] == golden["function_records"]["memory"]
    assert rendering.report["totals"]["traffic"] == golden["totals"]["traffic"]


def test_1_2_3_compute_cost_with_roofline_keeps_bandwidth_level_traffic_only():
    rendering = _render(P01, ["compute-cost", "roofline"])
    assert set(rendering.report["function_records"]) == {"compute-cost", "roofline", "memory"}
    assert set(rendering.report["totals"]["traffic"]) == {"gmem"}
    assert rendering.summary[2].startswith("# compute-cost flops=")


def test_1_2_3_text_and_json_carry_the_same_verdicts():
    rendering = _render(P01, "roofline")
    comments = [l.split("  # ", 1)[1].split("; ")[-1] for l in rendering.program.splitlines()
                if "; roofline" in l]
    rows = rendering.report["calls"]
    assert len(comments) == len(rows) == 12
    for comment, row in zip(comments, rows):
        record = row["roofline"]
        expected = "roofline"
        if record["ideal_ns"]:
            expected += f" ideal-ns={record['ideal_ns']}"
        if record["bound_by"] != "none":
            expected += f" bound-by={record['bound_by']}"
        assert comment == expected


def test_1_2_3_cli_roofline_runs_and_json_matches_api():
    # the path as _render spells it: each row's `source` names the file as given
    proc = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--roofline", "--json",
                           str(PROGRAMS / P01)], cwd=PROGRAMS, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    data = json.loads(proc.stdout)
    assert data["requested"] == ["roofline"]
    assert data["function_records"]["roofline"] == \
        {"compute_ns": 2, "memory_ns": 21, "ideal_ns": 21, "bound_by": "memory"}
    assert data == _render(P01, "roofline").report
