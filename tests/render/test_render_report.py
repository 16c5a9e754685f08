"""analysis §1 rendering rules and companions §7 (values, record comments,
summary lines, annotated program, JSON report)."""
from __future__ import annotations

import json
import re

from tests.analysis.analysis_helpers import COLUMN_SPLIT, FLAT, LOOPY, load
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.render.forms import record_comment, record_json
from tilefoundry.render.report import render_analysis, report


def _render(tmp_path, body, selector, **kw):
    module, function = load(tmp_path, body, selector)
    result = analyze(module, function, analysis="compute-cost", **kw)
    return result, render_analysis(result)


def test_render_7_2_compute_cost_comment_forms():
    assert record_comment(ComputeCostMetadata()) == "compute-cost"
    record = ComputeCostMetadata(flops=(("bf16", 8), ("f32", 4)), flops_per_unit=(("f32", 1),),
                                 service=(("special", 2),), service_per_unit=(("special", 1),))
    assert record_comment(record) == "compute-cost flops=bf16:8@0,f32:4@1 service=special:2@1"


def test_render_1_compute_cost_json_exposes_all_four_quantities():
    record = ComputeCostMetadata(flops=(("f32", 4),), flops_per_unit=(("f32", 1),))
    assert record_json(record) == {"flops": {"f32": 4}, "flops_per_unit": {"f32": 1},
                                   "service": {}, "service_per_unit": {}}


def test_render_7_3_two_header_lines_then_family_line(tmp_path):
    result, rendering = _render(tmp_path, LOOPY, "Loopy")
    lines = rendering.text.splitlines()
    assert lines[0] == "# analysis target=nvidia.h200_sxm module=Loopy function=step topology=cta"
    assert lines[1] == "# selection requested=compute-cost executed=compute-cost"
    assert lines[2] == "# compute-cost flops=f32:134144@134144 service=special:1024@1024"
    assert lines[3] == "" and lines[4] == "from __future__ import annotations"


def test_render_7_3_topology_absent_without_level(tmp_path):
    _, rendering = _render(tmp_path, FLAT, "Flat")
    assert rendering.text.splitlines()[0] == "# analysis target=cpu module=Flat function=scale"
    assert json.loads(rendering.json)["topology"] is None


def test_render_1_every_measured_call_annotated_carry_update_not(tmp_path):
    _, rendering = _render(tmp_path, LOOPY, "Loopy")
    program = rendering.program.splitlines()
    equations = [l for l in program if re.match(r"^\s+\w+ = \w+\(", l)]
    assert equations and all("; compute-cost" in l for l in equations)
    carry = [l for l in program if l.strip() == "acc = v2"]
    assert carry and "#" not in carry[0]


def test_render_7_5_json_keys_sorted_and_shape(tmp_path):
    _, rendering = _render(tmp_path, LOOPY, "Loopy")
    data = json.loads(rendering.json)
    assert rendering.json == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert set(data) == {"schema_version", "tool", "kind", "target", "module", "function", "topology",
                         "requested", "executed", "function_records", "calls", "loops", "totals",
                         "program", "values"}  # the JSON contract's keys (docs/json.md)
    assert data["totals"] == {"flops": {"f32": 134144}, "traffic": {}}
    assert data["loops"] == []  # a loop row needs a selected record
    assert data["function_records"]["compute-cost"]["flops"] == {"f32": 134144}


def test_render_1_value_label_is_line_of_equals(tmp_path):
    """A multi-line reshard: the label names the line holding `=`, not the comment's."""
    _, rendering = _render(tmp_path, COLUMN_SPLIT, "ColumnSplit")
    text_lines = rendering.program.splitlines()
    for row in json.loads(rendering.json)["calls"]:
        name, line = row["value"].split(":")
        assert text_lines[int(line) - 1].lstrip().startswith(f"{name} = ")
    reshard = [r for r in json.loads(rendering.json)["calls"] if r["value"].startswith("v0:")][0]
    line = int(reshard["value"].split(":")[1])
    assert "#" not in text_lines[line - 1] and "; compute-cost" in text_lines[line + 3]


def test_render_1_text_and_json_same_conclusions(tmp_path):
    result, rendering = _render(tmp_path, COLUMN_SPLIT, "ColumnSplit")
    lines = rendering.program.splitlines()
    for row in rendering.report["calls"]:
        _, line = row["value"].split(":")
        index = int(line) - 1
        while "  # " not in lines[index]:
            index += 1
        comment = lines[index].split("  # ", 1)[1]
        cc = row["compute-cost"]
        for dtype, whole in cc["flops"].items():
            assert f"{dtype}:{whole}@{cc['flops_per_unit'].get(dtype, 0)}" in comment
    assert report(result) == rendering.report


def test_render_1_requested_only(tmp_path):
    """A record nobody requested stays on the IR and is not reported."""
    from tests.analysis.toy_family import OpCountMetadata, ToyTarget

    module, function = load(tmp_path, FLAT, "Flat")
    object.__setattr__(module, "target", ToyTarget())
    result = analyze(module, function, analysis="op-count")
    data = render_analysis(result).report
    assert "compute-cost" not in data["function_records"]
    assert all("compute-cost" not in row for row in data["calls"])
    assert result.function.get_metadata(ComputeCostMetadata) is not None
    assert result.function.get_metadata(OpCountMetadata) is not None
