"""Detail tests of ../shared/spec/semantic-analysis.md beyond the one-per-bullet tests of
test_semantic_constraints.py (section still in the name)."""
import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimVar
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Tuple, Var
from tilefoundry.ir.function import Function
from tilefoundry.ir.shard import B, Layout, Mesh, P, S, ShardLayout, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ops import (
    Binary,
    BinaryKind as BK,
    Concat,
    MatMul,
    Reduce,
    ReduceKind as RK,
    Reshard,
    Slice,
    Stack,
    TupleGetItem,
    Unary,
    UnaryKind as UK,
    Where,
)
from tilefoundry.semantics.canonical import canonical_shard_layout, regroup
from tilefoundry.semantics.elaborate import build_function_call, new_session, retype_function
from tilefoundry.semantics.relations import access_relations, relation_facts
from tilefoundry.semantics.shard_propagation import (
    ShardPropagationError,
    derive_output_shard_layout,
    partial_reductions_by_axis,
)
from tilefoundry.semantics.typeinfer import build_call

M2 = Mesh((Topology("cta", 8),), Layout((2, 4), (4, 1)), names=("mt", "ks"))
M1 = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))


def T(shape, dtype="f32", layout=None, storage=SK.SMEM):
    return TensorType(shape, DType.from_name(dtype), layout, storage)


def SL(g, attrs, mesh=M2, strides="c"):
    from tilefoundry.semantics.canonical import c_order

    return ShardLayout(Layout(g, c_order(g) if strides == "c" else strides), attrs, mesh)


def partial_value(b):
    """(128, 64) f32 smem with Partial('sum') on mesh axis 1 ('ks'), via a split-K matmul."""
    a = b.call(Reshard(SL((2, 64, 4, 256), (S(0), S(2)), strides=None), SK.SMEM), b.var("a", (128, 1024)))
    w = b.call(Reshard(SL((4, 256, 64), (B(), S(0)), strides=None), SK.SMEM), b.var("w", (1024, 64)))
    return b.call(MatMul(), a, w)


# ---------------------------------------------------------------- §1 type propagation


def _identity_function(name, param_type, body_builder):
    p = Var("x", param_type)
    body = body_builder(p)
    return Function(name, (p,), body, body.type)


def test_detail_1_function_boundary_keeps_partial(b):
    new_session()
    part = partial_value(b)
    fn = _identity_function("scale", T((128, 64)), lambda p: b.call(Binary(BK.MUL), p, b.const(2.0)))
    call = build_function_call(fn, (part,))
    assert call.type.layout.attrs == (S(0), P("sum"))
    assert partial_reductions_by_axis(call.type.layout) == (None, "sum")


def test_detail_1_tuple_return_carries_nested_partial(b):
    new_session()
    part = partial_value(b)
    p = Var("x", T((128, 64)))
    scaled = b.call(Binary(BK.MUL), p, b.const(0.5))
    summed = b.call(Reduce((-1,), True, RK.SUM), p)
    body = Tuple((scaled, Tuple((summed, p), TupleType((summed.type, p.type)))),
                 TupleType((scaled.type, TupleType((summed.type, p.type)))))
    fn = Function("pair", (p,), body, body.type)
    call = build_function_call(fn, (part,))
    leaves = [call.type.fields[0], call.type.fields[1].fields[0], call.type.fields[1].fields[1]]
    assert [partial_reductions_by_axis(t.layout) for t in leaves] == [(None, "sum")] * 3
    got = b.call(TupleGetItem(1), call)
    assert partial_reductions_by_axis(got.type.fields[0].layout) == (None, "sum")


def test_detail_1_elaboration_rederives_under_actual_types(b):
    new_session()
    fn = _identity_function("act", T((64, 128), storage=SK.GMEM), lambda p: b.call(Unary(UK.EXP), p))
    assert fn.body.type.layout is None
    arg = b.call(Reshard(SL((4, 16, 128), (S(0),), M1, strides=None), SK.RMEM), b.var("a", (64, 128)))
    call = build_function_call(fn, (arg,))
    assert call.type == arg.type  # layout-free parameter adopts the caller's layout and storage
    params, body = retype_function(fn, (arg.type,))
    assert params[0].type == arg.type and body.type == arg.type
    assert fn.body.type.layout is None  # the authored callee is never written


def test_detail_1_elaboration_is_memoised_per_session(b):
    new_session()
    calls = []
    fn = _identity_function("f", T((8, 8)), lambda p: b.call(Unary(UK.NEG), p))
    import tilefoundry.semantics.elaborate as el

    original = el.retype_function
    el.retype_function = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        x = b.var("x", (8, 8), storage=SK.RMEM)
        build_function_call(fn, (x,))
        build_function_call(fn, (b.var("y", (8, 8), storage=SK.RMEM),))
        assert len(calls) == 1
        new_session()
        build_function_call(fn, (x,))
        assert len(calls) == 2
    finally:
        el.retype_function = original


def test_detail_1_function_boundary_does_not_reject_partial_through_commuting_body(b):
    new_session()
    part = partial_value(b)
    fn = _identity_function("neg", T((128, 64)), lambda p: b.call(Unary(UK.NEG), p))
    assert build_function_call(fn, (part,)).type.layout.attrs[1] == P("sum")


def test_detail_1_shard_parameter_needs_exact_match(b):
    new_session()
    declared = T((64, 128), layout=SL((4, 16, 128), (S(0),), M1), storage=SK.GMEM)
    fn = _identity_function("g", declared, lambda p: b.call(Unary(UK.NEG), p))
    with pytest.raises(VerifyError, match="layouts must match exactly"):
        build_function_call(fn, (b.var("x", (64, 128)),))


def test_detail_1_dimvar_parameter_matches_by_envelope(b):
    new_session()
    n = DimVar("n", 1, 129)
    fn = _identity_function("h", T((n, 8), storage=SK.GMEM), lambda p: b.call(Unary(UK.NEG), p))
    assert build_function_call(fn, (b.var("x", (64, 8)),)).type.shape == (64, 8)
    with pytest.raises(VerifyError, match="envelope"):
        build_function_call(fn, (b.var("x", (200, 8)),))


def test_detail_1_prototype_is_not_elaborated(b):
    new_session()
    p = Var("x", T((8,), storage=SK.GMEM))
    proto = Function("proto", (p,), None, T((8,), "bf16", storage=SK.GMEM))
    assert build_function_call(proto, (b.var("x", (8,)),)).type == proto.return_type


# ---------------------------------------------------------------- §1.1 / §1.2 relation-derived types


def test_detail_1_1_reduction_dims_and_broadcast_axes(b):
    lhs, rhs = b.var("a", (4, 8, 16)), b.var("b", (1, 16, 32))
    facts = relation_facts(access_relations(MatMul(), (lhs, rhs)))
    assert facts.reduction_dims == frozenset({3})  # K of domain (batch, M, N, K)
    assert facts.broadcast_axes == ((), (0,))  # rhs batch extent 1 read at a constant


def test_detail_1_1_symbolic_sizes_are_parameters(b):
    n = DimVar("seq", 1, 4097)
    rel = access_relations(Unary(UK.EXP), (b.var("x", (n, 64)),))
    facts = relation_facts(rel)
    assert facts.symbolic_sizes == (("p_seq", n),)
    assert "p_seq" in rel.inputs[0].pattern.relation.get_space().get_var_names(__import__("islpy").dim_type.param)


def test_detail_1_1_size_agnostic(b):
    n = DimVar("rows", 1, 1025)
    for rows in (n, 64):
        mesh = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))
        x = b.call(Reshard(ShardLayout(Layout((rows, 4, 32)), (S(1),), mesh), SK.GMEM), b.var("x", (rows, 128)))
        y = b.call(Reduce((0,), False, RK.SUM), x)
        assert y.type.layout.attrs == (S(0),)


def test_detail_1_2_image_rank_held_to_type(b):
    from tilefoundry.semantics import relations as R
    from tilefoundry.semantics.op_registry import ACCESS_RELATIONS

    bad = lambda op, ctx: R.DomainBuilder((4,)).relations(  # noqa: E731
        [R.DomainBuilder((4,)).access((R.proj(0),))], [R.DomainBuilder((4,)).access((R.proj(0),))])
    saved = ACCESS_RELATIONS[Unary]
    ACCESS_RELATIONS[Unary] = bad
    try:
        with pytest.raises(VerifyError, match="input boundary 0 has image rank 1 but its type has rank 2"):
            access_relations(Unary(UK.EXP), (b.var("x", (4, 4)),))
    finally:
        ACCESS_RELATIONS[Unary] = saved


def test_detail_2_missing_relation_fails_closed(b):
    from tilefoundry.ir.expr import Op

    class Orphan(Op):
        name = "orphan"

    with pytest.raises(VerifyError, match="no access relation registered for Orphan"):
        access_relations(Orphan(), (b.var("x", (4,)),))


# ---------------------------------------------------------------- §3.1 canonical regroup


def test_detail_3_1_canonical_regroup():
    assert regroup((8, 2048), (8, 4, 32, 16)) == ((0,), (1, 2, 3))
    assert regroup((8, 1), (8, 1, 1, 1)) == ((0,), (1, 2, 3))  # leftovers to the last axis
    assert regroup((1, 2, 8, 64), (1, 2, 8, 64)) == ((0,), (1,), (2,), (3,))
    assert regroup((512, 128), (4, 4, 32, 1, 128)) == ((0, 1, 2), (3, 4))
    n = DimVar("n", 1, 100)
    assert regroup((n, 64), (n, 64)) == ((0,), (1,))
    assert regroup((16, 8), (2, 4, 8, 2)) == ((0, 1, 2), (2, 3))  # position 2 straddles both axes
    with pytest.raises(VerifyError):
        regroup((6, 4), (4, 5))


def test_detail_3_1_canonical_factorization():
    th = Mesh((Topology("thread", 32),), Layout((32,), (1,)), names=("t",))
    got = canonical_shard_layout((8, 128), th, (S(1),))
    assert got == ShardLayout(Layout((8, 32, 4), (128, 4, 1)), (S(1),), th)
    got = canonical_shard_layout((128, 64), M2, (S(0), S(0)))
    assert got.layout.shape == (2, 4, 16, 64) and got.attrs == (S(0), S(1))
    with pytest.raises(VerifyError, match="not divisible"):
        canonical_shard_layout((6, 4), M1, (S(0),))


# ---------------------------------------------------------------- §3.2 shard propagation


def test_detail_3_2_partial_reductions_by_axis():
    assert partial_reductions_by_axis(SL((2, 64, 64), (S(0), P("sum")))) == (None, "sum")
    assert partial_reductions_by_axis(None) == ()
    assert partial_reductions_by_axis(Layout((4,))) == ()


def test_detail_3_2_no_real_sharding_returns_none(b):
    x = T((64, 128), layout=SL((64, 128), (B(), B())))
    rel = access_relations(Unary(UK.EXP), (Var("x", x),))
    assert derive_output_shard_layout((x,), rel, (64, 128)) is None
    assert derive_output_shard_layout((T((64, 128)),), rel, (64, 128)) is None


def test_detail_3_2_inputs_on_different_meshes_rejected(b):
    grid = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))
    x = b.call(Reshard(ShardLayout(Layout((2, 4, 8)), (S(0),), grid[:2]), SK.GMEM), b.var("x", (8, 8)))
    y = b.call(Reshard(ShardLayout(Layout((2, 4, 8)), (S(0),), grid[2:]), SK.GMEM), b.var("y", (8, 8)))
    with pytest.raises(VerifyError, match=r"Binary ADD: input 1 \(rhs\) references a different mesh"):
        b.call(Binary(BK.ADD), x, y)


def test_detail_3_2_fully_broadcast_input_does_not_pin_mesh(b):
    other = Mesh((Topology("cta", 4),), Layout((2, 2), (2, 1)), names=("p", "q"))
    x = b.call(Reshard(SL((4, 16, 8), (S(0),), M1, strides=None), SK.GMEM), b.var("x", (64, 8)))
    y = b.call(Reshard(ShardLayout(Layout((64, 8)), (B(), B()), other), SK.GMEM), b.var("y", (64, 8)))
    assert b.call(Binary(BK.ADD), x, y).type.layout.mesh == M1


def test_detail_3_2_reduction_sets_must_not_overlap(b):
    x = T((4, 8), layout=SL((4, 8), (S(0), B())))
    rel = access_relations(Reduce((0,), False, RK.SUM), (Var("x", x),))
    with pytest.raises(ShardPropagationError, match="must not overlap"):
        derive_output_shard_layout((x,), rel, (8,), partial_reduction_dims={0}, complete_reduction_dims={0})


def test_detail_3_2_partial_vs_complete_effect(b):
    x = T((4, 8), layout=SL((2, 2, 8), (S(0), B())))
    rel = access_relations(Reduce((0,), False, RK.SUM), (Var("x", x),))
    assert derive_output_shard_layout((x,), rel, (8,), partial_reduction_dims={0}).attrs == (P("sum"), B())
    assert derive_output_shard_layout((x,), rel, (8,), complete_reduction_dims={0}).attrs == (B(), B())


def test_detail_3_2_undeclared_reduction_effect_fails_closed(b):
    x = T((4, 8), layout=SL((2, 2, 8), (S(0), B())))
    rel = access_relations(Reduce((0,), False, RK.SUM), (Var("x", x),))
    with pytest.raises(ShardPropagationError, match="neither partial nor complete"):
        derive_output_shard_layout((x,), rel, (8,))


def test_detail_3_2_partial_is_value_state_at_its_mesh_axis(b):
    part = partial_value(b)  # Split on axis 0, Partial on axis 1
    assert part.type.layout.attrs == (S(0), P("sum"))
    assert part.type.layout.layout.shape == (2, 64, 64)  # no layout position for the Partial
    t = b.call(Binary(BK.ADD), part, part)
    assert t.type.layout.attrs == (S(0), P("sum"))


def test_detail_3_2_split_maps_through_input_access(b):
    x = b.call(Reshard(SL((2, 64, 4, 32), (S(0), S(2)), strides=None), SK.SMEM), b.var("x", (128, 128)))
    from tilefoundry.ops import Transpose

    y = b.call(Transpose((1, 0)), x)
    assert y.type.layout.layout.shape == (4, 32, 2, 64) and y.type.layout.attrs == (S(2), S(0))


def test_detail_3_2_split_on_surviving_dim_lands_on_output_layout_axis(b):
    x = b.call(Reshard(SL((128, 4, 16), (B(), S(1)), strides=None), SK.SMEM), b.var("x", (128, 64)))
    y = b.call(Binary(BK.MUL), b.var("c", (64,), storage=SK.SMEM), x)  # x is the second operand
    assert y.type.layout.attrs == (B(), S(1)) and y.type.layout.layout.shape == (128, 4, 16)


def test_detail_3_2_commuting_judgment_belongs_to_the_op(b):
    part = partial_value(b)
    assert b.call(Binary(BK.MUL), part, b.var("r", (128, 64), storage=SK.SMEM)).type.layout.attrs[1] == P("sum")
    assert b.call(Reduce((-1,), True, RK.SUM), part).type.layout.attrs[1] == P("sum")


def test_detail_3_2_partial_through_exp_rejected(b):
    part = partial_value(b)
    with pytest.raises(VerifyError) as err:
        b.call(Unary(UK.EXP), part, location="p.py:3:4", binding="e")
    text = str(err.value)
    assert text.startswith("p.py:3:4: Unary: x (operand 0) carries Partial(sum) on mesh axis 1 "
                           "('ks'), which does not commute")
    assert "reshard(x" in text and text.endswith("(value 'e')")


def test_detail_3_2_mul_of_two_partials_rejected(b):
    part = partial_value(b)
    with pytest.raises(VerifyError, match=r"Binary MUL: lhs \(operand 0\) carries Partial\(sum\) on mesh axis 1 \('ks'\).*reshard"):
        b.call(Binary(BK.MUL), part, part)


def test_detail_3_2_add_of_partial_and_replicated_rejected(b):
    part = partial_value(b)
    with pytest.raises(VerifyError, match=r"operand 0\) carries Partial\(sum\).*with 'ks' Broadcast"):
        b.call(Binary(BK.ADD), part, b.var("r", (128, 64), storage=SK.SMEM))


def test_detail_3_2_secondary_input_partial_rejected_with_remedy(b):
    part = partial_value(b)
    cond = b.var("c", (128, 64), "bool", storage=SK.SMEM)
    with pytest.raises(VerifyError, match=r"Where: other \(operand 2\) carries Partial\(sum\).*reshard\(other"):
        b.call(Where(), cond, b.var("z", (128, 64), storage=SK.SMEM), part)


def test_detail_3_2_reduce_abs_max_does_not_commute(b):
    with pytest.raises(VerifyError, match="does not commute with reduce abs_max"):
        b.call(Reduce((0,), True, RK.ABS_MAX), partial_value(b))


def test_detail_3_2_only_reshard_completes_partial(b):
    part = partial_value(b)
    done = b.call(Reshard(SL((2, 64, 64), (S(0), B()), strides=None), SK.GMEM), part)
    assert partial_reductions_by_axis(done.type.layout) == (None, None)


def test_detail_3_2_translated_split_access_fails_closed(b):
    x = b.call(Reshard(SL((4, 16, 8), (S(0),), M1, strides=None), SK.GMEM), b.var("x", (64, 8)))
    starts = Tuple((b.const(8, "i64"), b.const(0, "i64")), TupleType((T((), "i64", storage=SK.UMAT),) * 2))
    with pytest.raises(VerifyError, match=r"input 0 \(x\) is split on mesh axis 0 \('u'\).*non-projection.*fail closed"):
        b.call(Slice((32, 8), (1, 1)), x, starts)


def test_detail_3_2_incompatible_mesh_axes_for_one_dim(b):
    x = b.call(Reshard(SL((2, 64, 128), (S(0), B()), strides=None), SK.SMEM), b.var("x", (128, 128)))
    z = b.call(Reshard(SL((4, 32, 128), (B(), S(0)), strides=None), SK.SMEM), b.var("z", (128, 128)))
    with pytest.raises(VerifyError, match=r"input 1 \(rhs\) .*domain dim 0 on mesh axis 1 \('ks'\).*incompatible mesh axes"):
        b.call(Binary(BK.ADD), x, z)
    lhs = b.call(Reshard(SL((128, 4, 32), (B(), S(1)), strides=None), SK.SMEM), b.var("a", (128, 128)))
    with pytest.raises(VerifyError, match="K is split on different mesh axes"):
        b.call(MatMul(), lhs, x)


def test_detail_3_2_fresh_strides_vs_preserved(b):
    x = b.call(Reshard(SL((4, 16, 8), (S(0),), M1, strides=None), SK.SMEM), b.var("x", (64, 8)))
    assert x.type.layout.layout.strides == (0, 8, 1)
    assert b.call(Unary(UK.NEG), x).type.layout.layout.strides == (0, 8, 1)
    assert b.call(Concat(1), x, x).type.layout.layout.strides == (256, 16, 1)  # fresh C-order over (4, 16, 16)
    with pytest.raises(VerifyError, match="split on mesh axis 0"):
        b.call(Concat(0), x, x)  # a split on the concat axis is refused
    rel = access_relations(Unary(UK.NEG), (x,))
    assert derive_output_shard_layout((x.type,), rel, (64, 8), fresh_strides=True).layout.strides == (128, 8, 1)


def test_detail_3_2_stack_split_carries(b):
    x = b.call(Reshard(SL((4, 16, 8), (S(0),), M1, strides=None), SK.SMEM), b.var("x", (64, 8)))
    assert b.call(Stack(0), x, x).type.layout.attrs == (S(1),)


# ---------------------------------------------------------------- §3.3 storage anchoring


def test_detail_3_3_umat_abstains(b):
    assert b.call(Binary(BK.ADD), b.var("x", (4,), storage=SK.RMEM), b.const(1.0)).type.storage == SK.RMEM


def test_detail_3_3_one_concrete_operand_anchors(b):
    x = b.var("x", (4,), storage=SK.SMEM)
    u = b.var("u", (4,), storage=SK.UMAT)
    assert b.call(Binary(BK.ADD), u, x).type.storage == SK.SMEM
    assert b.call(MatMul(), b.var("a", (4, 4), storage=SK.UMAT), b.var("w", (4, 4), storage=SK.TMEM)).type.storage == SK.TMEM


def test_detail_3_3_agreeing_storages(b):
    x = b.var("x", (4,), storage=SK.RMEM)
    assert b.call(Concat(0), x, x, x).type.storage == SK.RMEM
    assert b.call(Stack(0), x, x).type.storage == SK.RMEM


def test_detail_3_3_storage_conflict_names_both(b):
    x = b.var("x", (4,), storage=SK.RMEM)
    y = b.var("y", (4,), storage=SK.SMEM)
    for op, args in ((Binary(BK.ADD), (x, y)), (Concat(0), (x, y)), (Stack(0), (x, y))):
        with pytest.raises(VerifyError, match=r"conflicting storage \(operand 0 in rmem, operand 1 in smem\)"):
            b.call(op, *args)


def test_detail_3_3_no_operand_order_tie_break(b):
    x = b.var("x", (4,), storage=SK.RMEM)
    y = b.var("y", (4,), storage=SK.SMEM)
    with pytest.raises(VerifyError, match="no operand-order tie-break"):
        b.call(Binary(BK.ADD), y, x)


def test_detail_3_3_all_umat_gives_umat(b):
    assert b.call(Binary(BK.ADD), b.const(1.0), b.const(2.0)).type.storage == SK.UMAT


def test_detail_3_3_reshard_is_the_layout_changer(b):
    x = b.var("x", (64, 8))
    with pytest.raises(VerifyError, match="storage change requires an explicit `layout=`"):
        b.call(Reshard(None, SK.SMEM), x)
    with pytest.raises(VerifyError, match="umat"):
        b.call(Reshard(SL((4, 16, 8), (S(0),), M1, strides=None), SK.UMAT), x)


_ = (build_call,)
