"""The structural memo of access relations (companions §4.1: a relation binds
each run-time coordinate to the operand it is read from). A memoised answer
must be the answer a fresh derivation gives: the same maps, every binding on
the asking call's own operands."""
from __future__ import annotations

import json

import pytest

from tests.conftest import PROGRAMS
from tilefoundry.ir.expr import Call
from tilefoundry.semantics import relations as rel
from tilefoundry.semantics.structural_key import operand_structure


def _view(entry):
    from tilefoundry.analysis.check import check_program_view
    from tilefoundry.analysis.dim_binding import resolve_dims
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(str(PROGRAMS / f"{entry['source']}:{entry['selector']}"))
    bindings, concrete = resolve_dims(module, function, entry["dims"] or None)
    return check_program_view(module, concrete, bindings=bindings)


def _calls(function):
    from tilefoundry.ir.expr import postorder

    return [node for node in postorder(function.body) if isinstance(node, Call)]


def _fresh(call):
    return rel._derive_relations(call.op, call.args, None, None)


def _same(memoised, fresh) -> bool:
    """Equal maps, and each binding the very node (or value) the fresh one binds."""
    pairs = list(zip(memoised.inputs, fresh.inputs)) + list(zip(memoised.outputs, fresh.outputs))
    if len(memoised.inputs) != len(fresh.inputs) or len(memoised.outputs) != len(fresh.outputs):
        return False
    for got, want in pairs:
        if (got is None) != (want is None):
            return False
        if got is None:
            continue
        if got.pattern.isl_text() != want.pattern.isl_text():
            return False
        for (name, value), (want_name, want_value) in zip(got.pattern.parameters,
                                                           want.pattern.parameters):
            if name != want_name or not (value is want_value or value == want_value):
                return False
    return memoised.domain == fresh.domain


VALID = json.loads((PROGRAMS / "expected" / "manifest.json").read_text())["valid"]


@pytest.mark.parametrize("entry", VALID, ids=[e["stem"] for e in VALID])
def test_companions_4_1_memoised_relations_equal_fresh_ones_on_every_golden_call(entry):
    rel.clear_relation_memo()
    checked = 0
    for call in _calls(_view(entry).function):
        try:
            fresh = _fresh(call)
        except Exception:
            continue  # an op with no relation: nothing memoised either
        # asked twice: the second answer is the memo's, bound to this call's operands
        rel.access_relations(call.op, call.args)
        assert _same(rel.access_relations(call.op, call.args), fresh), call.op
        checked += 1
    assert checked


SLICES = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Windows:
    @func
    def f(x: Tensor[(64, 32), "f32"], y: Tensor[(64, 32), "f32"]):
        a = tf.zeros(Tensor[(8, 32), "f32"])
        for k in range(0, 64, 8):
            a = a + tf.slice(x, (k, 0), (8, 32), (1, 1))
        for j in range(0, 64, 8):
            a = a + tf.slice(y, (j, 0), (8, 32), (1, 1))
        return a
"""


def test_companions_4_1_a_memoised_window_binds_its_own_start(tmp_path):
    from tests.analysis.analysis_helpers import load
    from tilefoundry.analysis.check import check_program_view

    module, function = load(tmp_path, SLICES, "Windows")
    view = check_program_view(module, function)
    slices = [c for c in _calls(view.function) if type(c.op).__name__ == "Slice"]
    assert len(slices) == 2 and slices[0].args[0] is not slices[1].args[0]
    rel.clear_relation_memo()
    first = rel.access_relations(slices[0].op, slices[0].args)
    second = rel.access_relations(slices[1].op, slices[1].args)  # a hit: same structure
    assert len(rel._MEMO) == 1
    assert _same(second, _fresh(slices[1])) and _same(first, _fresh(slices[0]))
    starts = [s.args[1].fields[0] for s in slices]  # each loop's own induction variable
    assert starts[0] is not starts[1]
    bound = [value for b in second.inputs if b is not None for _, value in b.pattern.parameters]
    assert any(v is starts[1] for v in bound) and not any(v is starts[0] for v in bound)


def test_companions_4_1_one_operand_twice_is_another_structure():
    from tilefoundry.ir.expr import Var
    from tilefoundry.ir.tensor_type import TensorType
    from tilefoundry.ir.dtype import DType

    scalar = TensorType((), DType.from_name("i32"))
    i, j = Var("i", scalar), Var("j", scalar)
    assert operand_structure((i, i))[0] != operand_structure((i, j))[0]
    assert operand_structure((i, j))[0] == operand_structure((j, i))[0]


@pytest.mark.parametrize("entry", VALID, ids=[e["stem"] for e in VALID])
def test_semantic_typeinfer_memo_types_every_golden_call_as_a_fresh_inference(entry):
    from tilefoundry.semantics import typeinfer
    from tilefoundry.semantics.op_registry import TYPEINFER

    typeinfer._TYPES.clear()
    checked = 0
    for call in _calls(_view(entry).function):
        try:
            fresh = typeinfer._infer(TYPEINFER.get(type(call.op)), call.op, call.args, {})
        except Exception:
            continue  # needs its Mesh scopes: asked with them below
        typeinfer.infer_type(call.op, call.args)
        assert typeinfer.infer_type(call.op, call.args) == fresh == call.type, call.op
        checked += 1
    assert checked


def test_semantic_typeinfer_memo_keys_the_handlers(monkeypatch):
    """A handler registered anew is asked, never answered by the old one's memo."""
    from tilefoundry.ir.expr import Var
    from tilefoundry.ir.dtype import DType
    from tilefoundry.ir.tensor_type import TensorType
    from tilefoundry.ops.math import Unary, UnaryKind
    from tilefoundry.semantics import typeinfer
    from tilefoundry.semantics.op_registry import TYPEINFER

    x = Var("x", TensorType((4,), DType.from_name("f32")))
    first = typeinfer.infer_type(Unary(UnaryKind.EXP), (x,))
    other = TensorType((4,), DType.from_name("f16"))
    monkeypatch.setitem(TYPEINFER, Unary, lambda op, ctx: other)
    assert typeinfer.infer_type(Unary(UnaryKind.EXP), (x,)) == other != first


def test_call_structure_is_one_object_per_typeinfer_key():
    """``Call.structure``: calls typed by the same key (op, operand types,
    literals, aliasing) share one object, which analyses key their memos on;
    another literal, another operand type or one operand twice is another."""
    from tilefoundry.ir.dtype import DType
    from tilefoundry.ir.expr import Constant, Var
    from tilefoundry.ir.tensor_type import TensorType
    from tilefoundry.ops import Binary, BinaryKind
    from tilefoundry.semantics.typeinfer import build_call

    f32, f16 = TensorType((4, 8), DType.from_name("f32")), TensorType((4, 8), DType.from_name("f16"))
    scalar = TensorType((), DType.from_name("f32"), storage="umat")
    a, b, c, h = Var("a", f32), Var("b", f32), Var("c", f32), Var("h", f16)
    mul = Binary(BinaryKind.MUL)
    first = build_call(mul, (a, b))
    assert first.structure is not None
    assert build_call(Binary(BinaryKind.MUL), (b, c)).structure is first.structure
    assert build_call(mul, (a, a)).structure is not first.structure  # one operand twice
    assert build_call(mul, (h, h)).structure is not build_call(mul, (a, a)).structure
    two, three = Constant(2.0, scalar), Constant(3.0, scalar)
    assert build_call(mul, (a, two)).structure is build_call(mul, (b, Constant(2.0, scalar))).structure
    assert build_call(mul, (a, two)).structure is not build_call(mul, (a, three)).structure
