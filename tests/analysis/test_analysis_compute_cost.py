"""analysis §1.2.1 compute-cost and companions §5 cost evaluators; §2.1 Scope."""
from __future__ import annotations

import pytest

from tests.analysis.analysis_helpers import COLUMN_SPLIT, FLAT, LOOPY, load
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.recomputation import recomputation_factors
from tilefoundry.analysis.scope import build_scopes
from tilefoundry.errors import AnalysisError
from tilefoundry.ir.expr import Call, GridRegionExpr
from tilefoundry.ir.metadata import BindingMetadata


def _records(result):
    return {n.get_metadata(BindingMetadata).name: n.get_metadata(ComputeCostMetadata)
            for n in iter_nodes(result.function.body) if isinstance(n, Call)}


def _by_op(result):
    return {type(n.op).__name__ + ("." + str(getattr(n.op, "kind", "")) if hasattr(n.op, "kind") else ""):
            n.get_metadata(ComputeCostMetadata)
            for n in iter_nodes(result.function.body) if isinstance(n, Call)}


def test_compute_cost_1_2_1_record_on_every_call_and_function(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    result = analyze(module, function, analysis="compute-cost")
    calls = [n for n in iter_nodes(result.function.body) if isinstance(n, Call)]
    assert calls and all(c.get_metadata(ComputeCostMetadata) is not None for c in calls)
    assert result.function.get_metadata(ComputeCostMetadata) is not None


def test_compute_cost_1_2_1_function_includes_loop_repetition_invariant_factor_one(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    result = analyze(module, function, analysis="compute-cost")
    by_op = _by_op(result)
    assert by_op["MatMul"].flops == (("f32", 131072),)  # one occurrence
    assert by_op["Binary.add"].flops == (("f32", 1024),)
    # invariant matmul keeps factor 1; the carried add repeats 3 times
    whole = result.function.get_metadata(ComputeCostMetadata)
    assert whole.flops == (("f32", 131072 + 3 * 1024),)
    assert whole.service == (("special", 1024),)


def test_compute_cost_1_2_1_recomputation_factor_by_transitive_dependence(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    result = analyze(module, function, analysis="compute-cost")
    factors = recomputation_factors(result.function)
    named = {type(n.op).__name__: factors[id(n)] for n in iter_nodes(result.function.body)
             if isinstance(n, Call)}
    assert named["MatMul"] == 1 and named["Binary"] in (3, 1)
    add = next(n for n in iter_nodes(result.function.body) if isinstance(n, Call)
               and type(n.op).__name__ == "Binary")
    assert factors[id(add)] == 3


def test_compute_cost_2_7_per_unit_never_exceeds_whole(tmp_path):
    """companions §2.7: matmul(x[8,64], w[64, 128 @ m.c]) on 4 CTAs is 131072@32768."""
    module, function = load(tmp_path, COLUMN_SPLIT, "ColumnSplit")
    result = analyze(module, function, analysis="compute-cost")
    by_op = _by_op(result)
    assert by_op["MatMul"].flops == (("f32", 131072),)
    assert by_op["MatMul"].flops_per_unit == (("f32", 32768),)
    assert by_op["Cast"].flops == (("bf16", 512),) and by_op["Cast"].flops_per_unit == (("bf16", 128),)


def test_compute_cost_1_2_1_no_level_per_unit_equals_whole(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    result = analyze(module, function, analysis="compute-cost")
    for record in _records(result).values():
        assert record.flops == record.flops_per_unit and record.service == record.service_per_unit


def test_compute_cost_5_2_classification(tmp_path):
    """companions §5.2: predicate, select, special, integer; Cast always flops."""
    module, function = load(tmp_path, FLAT, "Flat")
    by_op = _by_op(analyze(module, function, analysis="compute-cost"))
    assert by_op["Binary.mul"].flops == (("f32", 128),) and by_op["Binary.mul"].service == ()
    assert by_op["Binary.lt"].service == (("predicate", 128),) and by_op["Binary.lt"].flops == ()
    assert by_op["Where"].service == (("select", 128),)
    assert by_op["Unary.rsqrt"].service == (("special", 128),)
    assert by_op["Binary.add"].service == (("integer", 128),)
    assert by_op["Cast"].flops == (("i64", 128),)


SPOT = """
@module(entry="spot", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Spot:
    @func
    def spot(x: Tensor[(8, 64), "f32"], w: Tensor[(64, 32), "bf16"], g: Tensor[(64,), "f32"],
             b: Tensor[(64,), "f32"], q: Tensor[(4, 256), "bf16"]):
        c = tf.cast(x, "bf16")
        mm = tf.matmul(c, w)
        a = x + g
        r = tf.rms_norm(x, g)
        ln = tf.layer_norm(x, g, b, -1, 1e-5)
        vals, idx = tf.topk(x, 4)
        qv, qs = tf.quant(tf.cast(q, "f32"), "per_token_group", 128, "fp8e4m3")
        am = tf.argmax(x)
        t = tf.transpose(x, (1, 0))
        return mm, a, r, ln, vals, idx, qv, qs, am, t
"""


def test_compute_cost_5_5_spot_checks(tmp_path):
    module, function = load(tmp_path, SPOT, "Spot")
    by_op = _by_op(analyze(module, function, analysis="compute-cost"))
    assert by_op["MatMul"].flops == (("bf16", 32768),)
    assert by_op["Binary.add"].flops == (("f32", 512),)
    assert by_op["RMSNorm"].flops == (("f32", 4096),)
    assert by_op["LayerNorm"].flops == (("f32", 4096),)
    assert by_op["TopK"].flops == (("f32", 512),)
    assert by_op["Quant"].flops == (("f32", 4096),)
    for name in ("ArgMax", "Transpose", "TupleGetItem"):
        assert by_op[name].flops == () and by_op[name].service == ()


def test_compute_cost_5_1_evaluators_registered_for_every_op():
    import tilefoundry.ops as ops
    import tilefoundry.ops  # noqa: F401
    from tilefoundry.ir.expr import Op
    from tilefoundry.semantics.op_registry import COST_EVALUATORS

    classes = [getattr(ops, name) for name in dir(ops)]
    op_classes = [c for c in classes if isinstance(c, type) and issubclass(c, Op) and c is not Op]
    missing = [c.__name__ for c in op_classes if c not in COST_EVALUATORS]
    assert op_classes and missing == []


DIM_ARITH = """
@module(entry="f", target=CpuTarget())
class DimArith:
    @func
    def f(x: Tensor[(16,), "f32"]) -> Tensor[(16,), "f32"]:
        return x * x
"""


def test_compute_cost_1_2_1_missing_evaluator_raises(tmp_path):
    from tilefoundry.semantics.op_registry import COST_EVALUATORS
    from tilefoundry.ops.math import Binary

    module, function = load(tmp_path, DIM_ARITH, "DimArith")
    saved = COST_EVALUATORS.pop(Binary)
    try:
        with pytest.raises(AnalysisError) as info:
            analyze(module, function, analysis="compute-cost")
    finally:
        COST_EVALUATORS[Binary] = saved
    assert info.value.reason == "Binary: no cost evaluator registered for Binary"
    # line 9, column 16: `x * x` in the file (the kernel's body is indented 8)
    assert info.value.location.endswith(":9:16") and info.value.value
    assert str(info.value) == (f"{info.value.location}: {info.value.reason} "
                               f"(value '{info.value.value}')")


def test_analysis_2_1_scope_tree_parallel_to_loops(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    result = analyze(module, function, analysis="compute-cost")
    root = build_scopes(result.function, result.level, module.effective_topologies())
    assert root.kind == "function" and len(root.children) == 1
    loop_scope = root.children[0]
    assert loop_scope.kind == "loop" and isinstance(loop_scope.node, GridRegionExpr)
    assert [d.trips for d in loop_scope.domain] == [3]
    assert [type(c.op).__name__ for c in loop_scope.calls] == ["MatMul", "Binary"]
    assert [type(c.op).__name__ for c in root.calls] == ["Zeros", "Unary"]
    accesses = loop_scope.accesses("device")
    assert len(accesses) == 6 and loop_scope.known("device")
    assert {a.allocation.type.storage for a in accesses}
    assert loop_scope.accesses("narrow") is not None
