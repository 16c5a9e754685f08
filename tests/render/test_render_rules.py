"""analysis §1 rendering rules and companions §7.3–§7.5 not covered by
test_render_report.py: one test per rule, named after its section."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.analysis.analysis_helpers import COLUMN_SPLIT, FLAT, LOOPY, load, write
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.ir.expr import Call
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.semantics.cost import TrafficBytes
from tilefoundry.render.record_forms import (
    RecordForm,
    operand_name,
    operand_rows,
    operand_type,
    register_record_form,
)
from tilefoundry.render.forms import record_comment
from tilefoundry.render.report import render_analysis, report

TUPLES = """
@module(entry="f", target=CpuTarget())
class Tup:
    @func
    def f(x: Tensor[(8, 64), "f32"], w: ConstTensor[(64,), "f32"]):
        vals, ids = tf.topk(x, 4)
        return vals * 2.0, ids, x + w
"""


def _result(tmp_path, body, selector, **kw):
    module, function = load(tmp_path, body, selector)
    return analyze(module, function, analysis="compute-cost", **kw)


def _calls(function):
    return [n for n in iter_nodes(function.body) if isinstance(n, Call)]


def test_render_1_report_reads_the_results_own_function(tmp_path):
    """report() reads the records on result.function, not a rebuilt Function."""
    result = _result(tmp_path, LOOPY, "Loopy")
    result.function.with_metadata(ComputeCostMetadata(flops=(("f32", 7),), flops_per_unit=(("f32", 7),)))
    data = report(result)
    assert data["function_records"]["compute-cost"]["flops"] == {"f32": 7}
    assert data["totals"]["flops"] == {"f32": 7}  # the exact sum IS the Function record


def test_render_1_parameterized_loop_occurrence_stays_one_row(tmp_path):
    """A 3-trip loop: one JSON row and one comment per Call, never one per trip."""
    result = _result(tmp_path, LOOPY, "Loopy")
    rendering = render_analysis(result)
    rows = rendering.report["calls"]
    assert [r["value"].split(":")[0] for r in rows] == ["acc", "v1", "v2", "v3"]
    assert [r["compute-cost"]["flops"] for r in rows] == [{}, {"f32": 131072}, {"f32": 1024}, {}]
    assert rendering.program.count("compute-cost") == len(rows)
    # the carry update `acc = v2` is a rebinding: no row, no comment
    assert not any(r["value"].startswith("acc:") and r is not rows[0] for r in rows)


def test_render_1_text_summary_states_whole_function_facts_only(tmp_path):
    rendering = render_analysis(_result(tmp_path, COLUMN_SPLIT, "ColumnSplit"))
    summary = rendering.text.split("\n\n", 1)[0].splitlines()
    assert summary == rendering.summary
    assert [line.split(" ", 2)[1] for line in summary] == ["analysis", "selection", "compute-cost"]
    assert summary[2] == "# compute-cost flops=bf16:512@128,f32:131072@32768"


def test_render_1_totals_are_the_function_record(tmp_path):
    data = render_analysis(_result(tmp_path, FLAT, "Flat")).report
    assert data["totals"]["flops"] == data["function_records"]["compute-cost"]["flops"]
    assert data["totals"]["traffic"] == {}  # no traffic record was written, so nothing is summed


def test_render_1_mapping_keys_are_dtypes_and_service_kinds(tmp_path):
    data = render_analysis(_result(tmp_path, FLAT, "Flat")).report
    whole = data["function_records"]["compute-cost"]
    assert sorted(whole["flops"]) == ["f32", "i64"]
    assert sorted(whole["service"]) == ["integer", "predicate", "select", "special"]
    assert whole["service"] == whole["service_per_unit"]  # no level: nothing divides


def test_render_7_2_comment_omits_defaults_and_collapses_to_the_family():
    assert record_comment(ComputeCostMetadata()) == "compute-cost"
    only_service = ComputeCostMetadata(service=(("select", 4),), service_per_unit=(("select", 1),))
    assert record_comment(only_service) == "compute-cost service=select:4@1"
    # a per-unit key absent from the whole map pairs with 0, and the reverse
    skew = ComputeCostMetadata(flops=(("f32", 4),), flops_per_unit=(("bf16", 2),))
    assert record_comment(skew) == "compute-cost flops=f32:4@0,bf16:0@2"


def test_render_7_3_header_names_child_module_and_omits_absent_topology(programs_dir):
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(f"{programs_dir / 'p06_module_tree.py'}:MiniStack.blk1")
    result = analyze(module, function, analysis="compute-cost")
    assert render_analysis(result).summary[0] == (
        "# analysis target=nvidia.h200_sxm module=blk1 function=block topology=cta")


def test_render_7_5_value_label_for_unpacked_tuple_results(tmp_path):
    rendering = render_analysis(_result(tmp_path, TUPLES, "Tup"))
    lines = rendering.program.splitlines()
    for row in rendering.report["calls"]:
        name, line = row["value"].rsplit(":", 1)
        assert lines[int(line) - 1].lstrip().startswith(f"{name} = ")
    assert rendering.json.endswith("}\n") and '\n  "calls": [' in rendering.json


def test_render_7_5_operand_names_and_types(tmp_path):
    result = _result(tmp_path, TUPLES, "Tup")
    calls = {type(c.op).__name__: c for c in _calls(result.function)}
    topk, add = calls["TopK"], calls["Binary"]
    assert operand_type(topk.type) == "f32[8,4]+ gmem"
    assert operand_type(topk.args[0].type) == "f32[8,64] gmem"
    assert operand_name(add.args[1]) == "w" and operand_name(topk.args[0]) == "x"
    rows = operand_rows(add, (TrafficBytes(2048, 0), None, TrafficBytes(0, 2048)))
    assert rows == [
        {"arg": 0, "name": "x", "type": "f32[8,64] gmem", "read": 2048, "write": 0},
        {"arg": "result", "name": operand_name(add), "type": "f32[8,64] gmem", "read": 0, "write": 2048},
    ]
    assert operand_name(add).startswith("v")  # the result names the call's binding
    with pytest.raises(ValueError, match="2 amounts for the 3 positions"):
        operand_rows(add, (TrafficBytes(), TrafficBytes()))


def test_render_7_5_rank0_and_promoted_weight_operands(programs_dir):
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(f"{programs_dir / 'p06_module_tree.py'}:MiniStack")
    result = analyze(module, function, analysis="compute-cost")
    weights = {operand_name(a) for c in _calls(result.function) for a in c.args}
    assert "blk0.gamma_attn" in weights  # JSON keeps the dots
    module, function = load_selection(f"{programs_dir / 'p08_shape_ops.py'}:CacheShuffle")
    result = analyze(module, function, analysis="compute-cost")
    update = next(c for c in _calls(result.function) if type(c.op).__name__ == "CacheUpdate")
    assert operand_type(update.args[1].type) == "i32[] gmem"


@dataclass(frozen=True)
class MovedMetadata(IRMetadata):
    """A toy per-call record whose ``operands`` field needs its expression."""

    total: int = 0


def _moved_project(record, node, context):
    data = {"total": record.total}
    if isinstance(node, Call):  # a Function offers no operand positions: absent
        data["operands"] = operand_rows(node, [TrafficBytes(1, 0)] * len(node.args) + [TrafficBytes(0, 1)])
    return data


register_record_form(MovedMetadata, RecordForm(project=_moved_project))


def test_render_1_expression_field_present_on_calls_absent_on_function(tmp_path):
    from tests.analysis.toy_family import ToyTarget
    from tilefoundry.analysis.descriptor import Analyzer

    def run(function, ctx):
        for call in _calls(function):
            call.with_metadata(MovedMetadata(len(call.args)))
        function.with_metadata(MovedMetadata(0))

    class Moving(ToyTarget):
        analyzer_paths = {"moved": Analyzer("moved", run, produces=(MovedMetadata,))}

    module, function = load(tmp_path, FLAT, "Flat")
    object.__setattr__(module, "target", Moving())
    data = report(analyze(module, function, analysis="moved"))
    assert "operands" not in data["function_records"]["moved"]
    assert data["calls"] and all("operands" in row["moved"] for row in data["calls"])
    assert data["calls"][0]["moved"]["operands"][-1]["arg"] == "result"
    assert data["totals"] is None  # neither compute cost nor bounded evidence was requested


def test_render_1_dependency_records_not_reported_programs_readme_6(tmp_path):
    """programs/README §6, third point: the reference prints the compute-cost
    summary line when compute-cost ran only as a dependency. analysis §1: a
    rendering reports what the caller requested, so ours does not."""
    from tests.analysis.toy_family import ToyTarget

    module, function = load(tmp_path, FLAT, "Flat")
    object.__setattr__(module, "target", ToyTarget())
    result = analyze(module, function, analysis="op-count")
    assert result.executed == ("compute-cost", "op-count")
    rendering = render_analysis(result)
    assert [line.split(" ")[1].split("=")[0] for line in rendering.summary] == [
        "analysis", "selection", "op-count"]
    assert "compute-cost" not in rendering.program and "compute-cost" not in rendering.json.replace(
        '"executed": [\n    "compute-cost"', "")
    assert result.function.get_metadata(ComputeCostMetadata) is not None  # still on the IR


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", *args],
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_8_operands_changes_text_only_and_compute_cost_has_none(tmp_path):
    path = write(tmp_path, TUPLES)
    plain = _cli("--compute-cost", f"{path}:Tup")
    flagged = _cli("--compute-cost", "--operands", f"{path}:Tup")
    assert plain[0] == flagged[0] == 0 and plain[1] == flagged[1]
    as_json = _cli("--compute-cost", "--operands", "--json", f"{path}:Tup")
    assert as_json[1] == _cli("--compute-cost", "--json", f"{path}:Tup")[1]
    assert json.loads(as_json[1])["requested"] == ["compute-cost"]


def test_cli_8_output_file_holds_exactly_the_text_report(tmp_path):
    path = write(tmp_path, LOOPY)
    target = tmp_path / "report.txt"
    rc, out, err = _cli("--compute-cost", "--output", str(target), f"{path}:Loopy")
    assert (rc, out, err) == (0, "", "")
    assert target.read_text() == _cli("--compute-cost", f"{path}:Loopy")[1]
    rc, out, err = _cli("--compute-cost", "--output", str(tmp_path / "no" / "such.txt"), f"{path}:Loopy")
    assert rc == 1 and out == "" and err.startswith("tilefoundry: error: cannot write --output ")
    assert len(err.splitlines()) == 1


def test_cli_8_topology_thread_on_two_level_program(programs_dir):
    rc, out, _ = _cli("--compute-cost", "--topology", "thread", "--json",
                      f"{programs_dir / 'p13_b200_residual_layernorm.py'}:ResidualLayerNorm")
    data = json.loads(out)
    assert rc == 0 and data["topology"] == "thread"
    whole = data["function_records"]["compute-cost"]
    # 512 tokens over 4 CTAs x 128 threads: one 128-wide row per thread
    assert whole["flops"] == {"bf16": 131072, "f32": 589824}
    assert whole["flops_per_unit"] == {"bf16": 256, "f32": 1152}  # add+cast; cast+layer_norm(8x)
