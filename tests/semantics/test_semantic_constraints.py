"""Exactly one test per constraint bullet of ../shared/spec/semantic-analysis.md
§1, §1.1, §1.2, §2, §3.1, §3.2, §3.3, named ``test_semantic_<section>_<bullet>``.
(Further detail tests live in test_semantic_spec.py as ``test_detail_*``.)
"""
import inspect

import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimVar
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Constant, Tuple, Var
from tilefoundry.ir.function import Function
from tilefoundry.ir.shard import B, Dynamic, Layout, Mesh, P, S, ShardLayout, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType, TupleType, umat_scalar
from tilefoundry.ops import (
    Binary, BinaryKind as BK, Concat, MatMul, Reduce, ReduceKind as RK, Reshard, Slice, Stack, Transpose,
    Unary, UnaryKind as UK, Where,
)
from tilefoundry.semantics import relations as R
from tilefoundry.semantics.canonical import c_order, regroup
from tilefoundry.semantics.elaborate import build_function_call, new_session
from tilefoundry.semantics.op_registry import ACCESS_RELATIONS
from tilefoundry.semantics.relations import (
    AccessRelations, AffineAccess, AxisMap, BoundaryRelation, access_relations, proj, relation_facts,
    relations_of_call,
)
from tilefoundry.semantics.shard_propagation import (
    ShardPropagationError, derive_output_shard_layout, partial_reductions_by_axis,
)
from tilefoundry.semantics.typeinfer import build_call

M2 = Mesh((Topology("cta", 8),), Layout((2, 4), (4, 1)), names=("mt", "ks"))
M1 = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))


def T(shape, dtype="f32", layout=None, storage=SK.SMEM):
    return TensorType(tuple(shape), DType.from_name(dtype), layout, storage)


def V(name, shape, dtype="f32", layout=None, storage=SK.SMEM):
    return Var(name, T(shape, dtype, layout, storage))


def SL(g, attrs, mesh=M2, strides=None):
    return ShardLayout(Layout(tuple(g), strides), tuple(attrs), mesh)


def call(op, *args, **where):
    return build_call(op, tuple(args), **where)


def resharded(name, shape, g, attrs, mesh=M2):
    return call(Reshard(SL(g, attrs, mesh), SK.SMEM), V(name, shape, storage=SK.GMEM))


def partial_value():
    """(128, 64) f32 with Split on mesh axis 0 and Partial('sum') on mesh axis 1, via split-K matmul."""
    a = resharded("a", (128, 1024), (2, 64, 4, 256), (S(0), S(2)))
    w = resharded("w", (1024, 64), (4, 256, 64), (B(), S(0)))
    return call(MatMul(), a, w)


def fn(name, params, body):
    return Function(name, tuple(params), body, body.type)


# ---------------------------------------------------------------- §1 type propagation


def test_semantic_1_function_boundary_never_completes_or_rejects_legal_partial():
    new_session()
    p = Var("x", T((128, 64)))
    scale = fn("scale", (p,), call(Binary(BK.MUL), p, Constant(2.0, umat_scalar(DType.f32))))
    got = build_function_call(scale, (partial_value(),))
    assert got.type.layout.attrs == (S(0), P("sum"))  # neither completed (Broadcast) nor refused
    q = Var("x", T((128, 64)))
    ident = fn("ident", (q,), q)  # a body that is the parameter itself
    assert build_function_call(ident, (partial_value(),)).type.layout.attrs == (S(0), P("sum"))


def test_semantic_1_return_carries_partial_in_tensor_and_nested_tuple_fields():
    new_session()
    p = Var("x", T((128, 64)))
    red = call(Reduce((-1,), True, RK.SUM), p)
    inner = Tuple((red, p), TupleType((red.type, p.type)))
    body = Tuple((p, inner), TupleType((p.type, inner.type)))
    got = build_function_call(fn("pair", (p,), body), (partial_value(),)).type
    leaves = [got.fields[0], got.fields[1].fields[0], got.fields[1].fields[1]]
    assert [partial_reductions_by_axis(t.layout) for t in leaves] == [(None, "sum")] * 3


def test_semantic_1_elaboration_preserves_mesh_axis_position_and_reduction():
    new_session()
    # Partial on mesh axis 0 ('mt'), Split on mesh axis 1: the index must survive the call
    a = resharded("a", (64, 256), (4, 16, 2, 128), (S(2), S(0)))
    w = resharded("w", (256, 32), (2, 128, 32), (S(0), B()))
    part = call(MatMul(), a, w)
    assert part.type.layout.attrs == (P("sum"), S(0))
    p = Var("x", T((64, 32)))
    neg = fn("neg", (p,), call(Unary(UK.NEG), p))
    assert build_function_call(neg, (part,)).type.layout.attrs == (P("sum"), S(0))
    q = Var("x", T((64, 32)))
    done = call(Reshard(SL((4, 16, 32), (B(), S(0)), M2), SK.SMEM), q)
    complete = fn("complete", (q,), done)
    assert build_function_call(complete, (part,)).type.layout.attrs == (B(), S(0))  # explicit Reshard


# ---------------------------------------------------------------- §1.1 relation-derived types


def test_semantic_1_1_reduction_dim_is_absent_from_the_output_map():
    facts = relation_facts(access_relations(MatMul(), (V("a", (4, 8, 16)), V("b", (4, 16, 32)))))
    assert facts.reduction_dims == frozenset({3})  # domain (batch, M, N, K)
    facts = relation_facts(access_relations(Reduce((0,), False, RK.SUM), (V("x", (4, 8)),)))
    assert facts.reduction_dims == frozenset({0})


def test_semantic_1_1_constant_access_is_a_broadcast_axis():
    facts = relation_facts(access_relations(Binary(BK.ADD), (V("x", (4, 8)), V("y", (1, 8)))))
    assert facts.broadcast_axes == ((), (0,))


def test_semantic_1_1_symbolic_size_is_a_domain_parameter_and_rank_comes_from_types():
    import islpy as isl

    n = DimVar("seq", 1, 4097)
    rel = access_relations(Unary(UK.EXP), (V("x", (n, 64)),))
    assert relation_facts(rel).symbolic_sizes == (("p_seq", n),)
    space = rel.inputs[0].pattern.relation.get_space()
    assert space.get_var_names(isl.dim_type.param) == ["p_seq"] and space.dim(isl.dim_type.in_) == 2
    # the output shape the relation reaches is the same rule for static and symbolic sizes
    assert R.derive_output_shape(rel) == (n, 64)
    assert R.derive_output_shape(access_relations(Unary(UK.EXP), (V("x", (7, 64)),))) == (7, 64)


# ---------------------------------------------------------------- §1.2


def test_semantic_1_2_image_rank_held_to_type_naming_op_and_boundary():
    bad = lambda op, ctx: R.DomainBuilder((4,)).relations(  # noqa: E731
        [R.DomainBuilder((4,)).access((proj(0),))], [R.DomainBuilder((4,)).access((proj(0),))])
    saved = ACCESS_RELATIONS[Unary]
    ACCESS_RELATIONS[Unary] = bad
    try:
        with pytest.raises(VerifyError, match=r"^Unary: input boundary 0 has image rank 1 but its type has rank 2"):
            access_relations(Unary(UK.EXP), (V("x", (4, 4)),))
        y = Var("y", T((4,)))
        good = call(Unary(UK.EXP), y)
        wide = Var("w", T((4, 4)))
        fake = type(good)(good.op, (y,), wide.type)  # a call claiming a rank-2 result
        with pytest.raises(VerifyError, match=r"^Unary: output boundary 0 has image rank 1 but its type has rank 2"):
            relations_of_call(fake)
    finally:
        ACCESS_RELATIONS[Unary] = saved


# ---------------------------------------------------------------- §2 access relations


def test_semantic_2_carrier_and_registry_fail_closed_and_read_only_affine_structure():
    # the carrier: unbound parameters, unused bindings and double bindings are refused
    with pytest.raises(VerifyError, match="map parameter 'p_n' has no binding"):
        AffineAccess((AxisMap(dim=0),), ("p_n",))
    with pytest.raises(VerifyError, match="binding 'p_m' is not used by the map"):
        AffineAccess((AxisMap(dim=0),), ("4",), (("p_m", 3),))
    with pytest.raises(VerifyError, match="parameter 'p_n' bound twice"):
        AffineAccess((AxisMap(dim=0),), ("p_n",), (("p_n", 1), ("p_n", 2)))
    # no registered relation: refused by the relation service and by typeinfer's propagation
    saved = ACCESS_RELATIONS.pop(Unary)
    try:
        with pytest.raises(VerifyError, match="no access relation registered for Unary.*fail closed"):
            access_relations(Unary(UK.EXP), (V("x", (4,)),))
        with pytest.raises(VerifyError, match="^Unary: no access relation registered for Unary.*fail closed"):
            call(Unary(UK.EXP), V("x", (4,)))
    finally:
        ACCESS_RELATIONS[Unary] = saved
    # size-agnostic: the same affine structure for static and symbolic extents
    n = DimVar("n", 1, 100)
    static = access_relations(MatMul(), (V("a", (8, 16)), V("w", (16, 4))))
    dynamic = access_relations(MatMul(), (V("a", (n, 16)), V("w", (16, 4))))
    assert [b.pattern.axes for b in static.inputs + static.outputs] == \
        [b.pattern.axes for b in dynamic.inputs + dynamic.outputs]


# ---------------------------------------------------------------- §3.1


def test_semantic_3_1_logical_shape_is_type_shape():
    x = resharded("x", (64, 128), (4, 16, 128), (S(0), B()))
    assert x.type.shape == (64, 128)  # invariant under sharding
    assert call(Unary(UK.NEG), x).type.shape == (64, 128)


def test_semantic_3_1_layout_has_its_own_domain_shape():
    x = resharded("x", (64, 128), (4, 16, 128), (S(0), B()))
    assert x.type.layout.layout.shape == (4, 16, 128) and len(x.type.layout.layout.shape) != x.type.rank


def test_semantic_3_1_canonical_regroup_row_major():
    assert regroup((8, 2048), (8, 4, 32, 16)) == ((0,), (1, 2, 3))
    assert regroup((512, 128), (4, 4, 32, 1, 128)) == ((0, 1, 2), (3, 4))
    assert regroup((8, 1), (8, 1, 1, 1)) == ((0,), (1, 2, 3))  # leftovers to the last axis
    assert regroup((6, 4), (4, 6)) == ((0, 1), (0, 1))  # sizes agree: a relinearisation
    with pytest.raises(VerifyError, match="does not regroup"):
        regroup((6, 4), (4, 5))


# ---------------------------------------------------------------- §3.2


def _unary_rel(type_):
    return access_relations(Unary(UK.NEG), (Var("x", type_),))


def test_semantic_3_2_reads_only_types_maps_shape_and_controls(monkeypatch):
    x = T((64, 8), layout=SL((4, 16, 8), (S(0), B()), M2, c_order((4, 16, 8))))
    rel = _unary_rel(x)
    # same maps, nonsense bounds and guards: the answer must not change, and no isl map is built
    def warp(b):
        p = b.pattern
        return BoundaryRelation(AffineAccess(p.axes, ("1",) * len(p.domain), (), ("i0 = 7",)))
    odd = AccessRelations(tuple(warp(b) for b in rel.inputs), tuple(warp(b) for b in rel.outputs), (1, 1))
    monkeypatch.setattr(R, "isl_map", lambda text: (_ for _ in ()).throw(AssertionError("isl read")))
    assert derive_output_shard_layout((x,), odd, (64, 8)) == derive_output_shard_layout((x,), rel, (64, 8))
    params = set(inspect.signature(derive_output_shard_layout).parameters)
    assert not params & {"output_type", "result_type"}  # no already-derived output type is taken


def test_semantic_3_2_partial_reductions_by_axis_one_entry_per_mesh_axis():
    assert partial_reductions_by_axis(SL((2, 64, 64), (S(0), P("max")))) == (None, "max")
    assert partial_reductions_by_axis(SL((2, 64, 64), (B(), Dynamic()))) == (None, None)
    assert partial_reductions_by_axis(Layout((4,))) == () and partial_reductions_by_axis(None) == ()


def test_semantic_3_2_no_real_sharding_is_none_and_different_meshes_fail():
    rep = T((64, 128), layout=SL((64, 128), (B(), B())))
    assert derive_output_shard_layout((rep,), _unary_rel(rep), (64, 128)) is None
    a = T((8, 8), layout=SL((2, 4, 8), (S(0),), M1[:2]))
    c = T((8, 8), layout=SL((2, 4, 8), (S(0),), M1[2:]))
    rel = access_relations(Binary(BK.ADD), (Var("a", a), Var("c", c)))
    with pytest.raises(ShardPropagationError, match=r"input 1 references a different mesh.*reshard"):
        derive_output_shard_layout((a, c), rel, (8, 8))


def test_semantic_3_2_partial_and_complete_reduction_sets_must_not_overlap():
    x = T((4, 8), layout=SL((2, 2, 8), (S(0), B())))
    rel = access_relations(Reduce((0,), False, RK.SUM), (Var("x", x),))
    assert derive_output_shard_layout((x,), rel, (8,), partial_reduction_dims={0}).attrs == (P("sum"), B())
    assert derive_output_shard_layout((x,), rel, (8,), complete_reduction_dims={0}).attrs == (B(), B())
    with pytest.raises(ShardPropagationError, match=r"reduction dims \[0\] are declared both partial and complete"):
        derive_output_shard_layout((x,), rel, (8,), partial_reduction_dims={0}, complete_reduction_dims={0})


def test_semantic_3_2_fresh_strides_or_preserved_physical_layout():
    x = resharded("x", (64, 8), (4, 16, 8), (S(0),), M1)
    assert x.type.layout.layout.strides == (0, 8, 1)
    rel = _unary_rel(x.type)
    assert derive_output_shard_layout((x.type,), rel, (64, 8)).layout.strides == (0, 8, 1)
    assert derive_output_shard_layout((x.type,), rel, (64, 8), fresh_strides=True).layout.strides == (128, 8, 1)


def test_semantic_3_2_partial_is_a_value_state_at_its_exact_mesh_axis_index():
    part = partial_value()  # Split on axis 0, Partial on axis 1
    other = resharded("r", (128, 64), (2, 64, 64), (S(0), B()))
    assert call(Binary(BK.MUL), part, other).type.layout.attrs == (S(0), P("sum"))
    # the same reduction on a different mesh axis is not the same state: no unordered-set comparison
    a = resharded("a", (128, 1024), (4, 32, 2, 512), (S(2), S(0)))  # now Partial on axis 0
    w = resharded("w", (1024, 64), (2, 512, 64), (S(0), B()))
    swapped = call(MatMul(), a, w)
    assert swapped.type.layout.attrs == (P("sum"), S(0))
    with pytest.raises(VerifyError, match="carries Partial\\(sum\\) on mesh axis"):
        call(Binary(BK.ADD), part, swapped)


def test_semantic_3_2_reduction_dim_effect_partial_or_complete():
    x = resharded("x", (64, 128), (64, 2, 64), (S(1), B()))
    summed = call(Reduce((1,), True, RK.SUM), x)  # Reduce: complete within the op
    assert summed.type.layout.attrs == (B(), B())
    a = resharded("a", (64, 128), (64, 2, 64), (S(1), B()))
    w = resharded("w", (128, 8), (2, 64, 8), (S(0), B()))
    assert call(MatMul(), a, w).type.layout.attrs == (P("sum"), B())  # MatMul: partial
    rel = access_relations(Reduce((1,), True, RK.SUM), (x,))
    with pytest.raises(ShardPropagationError, match="neither partial nor complete \\(fail closed\\)"):
        derive_output_shard_layout((x.type,), rel, (64, 1))


def test_semantic_3_2_rule_1_split_maps_through_the_input_access():
    x = resharded("x", (128, 128), (2, 64, 4, 32), (S(0), S(2)))
    y = call(Transpose((1, 0)), x)
    assert y.type.layout.layout.shape == (4, 32, 2, 64) and y.type.layout.attrs == (S(2), S(0))


def test_semantic_3_2_rule_2_surviving_dim_splits_the_output_axis_it_maps_to():
    x = resharded("x", (128, 64), (128, 4, 16), (B(), S(1)))
    y = call(Binary(BK.MUL), V("c", (64,)), x)  # x is the second operand, right-aligned
    assert y.type.layout.attrs == (B(), S(1)) and y.type.layout.layout.shape == (128, 4, 16)


def test_semantic_3_2_rule_3_reduced_split_becomes_partial_or_broadcast_without_layout_axis():
    part = partial_value()
    assert part.type.layout.attrs[1] == P("sum") and part.type.layout.layout.shape == (2, 64, 64)


def test_semantic_3_2_rule_4_partial_passes_only_by_the_ops_own_judgment():
    part = partial_value()
    assert call(Binary(BK.ADD), part, part).type.layout.attrs == (S(0), P("sum"))
    with pytest.raises(VerifyError, match=r"^Unary: x \(operand 0\) carries Partial\(sum\) on mesh axis 1 \('ks'\)"):
        call(Unary(UK.EXP), part)
    with pytest.raises(VerifyError, match=r"^Binary: Binary MUL: lhs \(operand 0\) carries Partial\(sum\)"):
        call(Binary(BK.MUL), part, part)


def test_semantic_3_2_rule_5_broadcast_input_axis_contributes_no_split():
    x = resharded("x", (64, 8), (64, 8), (B(), B()))
    y = resharded("y", (64, 8), (2, 32, 8), (S(0), B()))
    assert call(Binary(BK.ADD), x, y).type.layout.attrs == (S(0), B())


def test_semantic_3_2_rule_6_same_domain_dim_on_incompatible_mesh_axes():
    x = resharded("x", (128, 128), (2, 64, 128), (S(0), B()))
    z = resharded("z", (128, 128), (4, 32, 128), (B(), S(0)))
    with pytest.raises(VerifyError, match=r"input 1 \(rhs\) .*mesh axis 1 \('ks'\).*incompatible mesh axes.*reshard"):
        call(Binary(BK.ADD), x, z)


def test_semantic_3_2_partial_never_silently_eliminated_only_reshard_completes():
    part = partial_value()
    for op in (Unary(UK.EXP), Reduce((-1,), True, RK.ABS_MAX)):
        with pytest.raises(VerifyError, match="does not commute"):
            call(op, part)
    done = call(Reshard(SL((2, 64, 64), (S(0), B())), SK.GMEM), part)
    assert partial_reductions_by_axis(done.type.layout) == (None, None)


def test_semantic_3_2_every_tensor_input_inspected_secondary_partial_names_reshard():
    part = partial_value()
    with pytest.raises(VerifyError, match=r"^Where: other \(operand 2\) carries Partial\(sum\).*reshard\(other"):
        call(Where(), V("c", (128, 64), "bool"), V("z", (128, 64)), part)
    with pytest.raises(VerifyError, match=r"^Concat: input 1 \(operand 1\) carries Partial\(sum\).*reshard"):
        call(Concat(0), V("z", (128, 64)), part)


def test_semantic_3_2_fully_broadcast_input_carries_nothing_and_pins_no_mesh():
    other = Mesh((Topology("cta", 4),), Layout((2, 2), (2, 1)), names=("p", "q"))
    x = resharded("x", (64, 8), (4, 16, 8), (S(0),), M1)
    y = resharded("y", (64, 8), (64, 8), (B(), B()), other)
    assert call(Binary(BK.ADD), x, y).type.layout.mesh == M1
    both = call(Binary(BK.ADD), y, resharded("z", (64, 8), (64, 8), (B(),), M1))
    assert not isinstance(both.type.layout, ShardLayout)  # no input carries real sharding: none out


def test_semantic_3_2_only_zero_offset_unit_coefficient_access_is_a_projection():
    x = resharded("x", (64, 8), (4, 16, 8), (S(0),), M1)
    starts = Tuple((Constant(8, umat_scalar()), Constant(0, umat_scalar())), TupleType((umat_scalar(),) * 2))
    with pytest.raises(VerifyError, match=r"input 0 \(x\) is split on mesh axis 0 \('u'\).*non-projection.*fail closed"):
        call(Slice((32, 8), (1, 1)), x, starts)  # translated by 8
    # an output-surviving dim reachable only through a translated access also fails closed
    b = R.DomainBuilder((64, 8))
    shifted = b.relations([b.access((proj(0), proj(1)))], [b.access((AxisMap(dim=0, offset=1), proj(1)))])
    with pytest.raises(ShardPropagationError, match="reaches only through a non-projection access"):
        derive_output_shard_layout((x.type,), shifted, (64, 8))


def test_semantic_3_2_split_indexes_output_layout_axis_partial_has_none():
    x = resharded("x", (8, 64, 32), (8, 4, 16, 32), (S(1),), M1)  # layout axis 1, logical axis 1
    y = call(Stack(0), x, x)  # a new leading axis: the split moves to layout axis 2
    assert y.type.layout.attrs == (S(2),) and y.type.layout.layout.shape == (2, 8, 4, 16, 32)
    part = partial_value()
    assert len(part.type.layout.layout.shape) == 3 and S(0) in part.type.layout.attrs  # Partial: no position


# ---------------------------------------------------------------- §3.3 storage anchoring


def _storage(op, *types):
    return call(op, *(V(f"v{i}", (4,), storage=s) for i, s in enumerate(types))).type.storage


def test_semantic_3_3_symmetric_ops_anchor_independent_of_operand_order():
    for op in (Binary(BK.ADD), Concat(0), Stack(0)):
        assert _storage(op, SK.UMAT, SK.RMEM) == _storage(op, SK.RMEM, SK.UMAT) == SK.RMEM
    mm = lambda s1, s2: call(MatMul(), V("a", (4, 4), storage=s1), V("b", (4, 4), storage=s2)).type.storage  # noqa
    assert mm(SK.UMAT, SK.TMEM) == mm(SK.TMEM, SK.UMAT) == SK.TMEM


def test_semantic_3_3_umat_operand_abstains():
    assert call(Binary(BK.ADD), V("x", (4,), storage=SK.SMEM), Constant(1.0, umat_scalar(DType.f32))).type.storage == SK.SMEM


def test_semantic_3_3_one_concrete_operand_anchors():
    assert _storage(Concat(0), SK.UMAT, SK.GMEM, SK.UMAT) == SK.GMEM


def test_semantic_3_3_agreeing_concrete_storages():
    assert _storage(Stack(0), SK.SMEM, SK.SMEM, SK.SMEM) == SK.SMEM


def test_semantic_3_3_disagreeing_storages_error_without_tie_break():
    for order in ((SK.RMEM, SK.SMEM), (SK.SMEM, SK.RMEM)):
        with pytest.raises(VerifyError, match=r"conflicting storage \(operand 0 in \w+, operand 1 in \w+\); "
                                              r"there is no operand-order tie-break"):
            _storage(Binary(BK.ADD), *order)


def test_semantic_3_3_all_umat_gives_umat():
    assert _storage(Binary(BK.MUL), SK.UMAT, SK.UMAT) == SK.UMAT
