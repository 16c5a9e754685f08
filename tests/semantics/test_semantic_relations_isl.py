"""Access relations on isl (companions §4.1, §4.2, §4.5)."""
import islpy as isl
import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimVar
from tilefoundry.ir.expr import Tuple
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ir.dtype import DType
from tilefoundry.ops import (
    Binary,
    BinaryKind as BK,
    CacheUpdate,
    Concat,
    IndexSelect,
    InsertSlice,
    MatMul,
    Reduce,
    ReduceKind as RK,
    RepeatInterleave,
    Reshape,
    Slice,
    Transpose,
)
from tilefoundry.semantics.relations import (
    AffineAccess,
    AccessRelations,
    AxisMap,
    access_relations,
    clear_isl_cache,
    isl_cache_size,
    proj,
)


def same(obj, text):
    other = isl.Set(text) if isinstance(obj, isl.Set) else isl.Map(text)
    return obj.is_equal(other)


def test_relation_2_matmul_relation(b):
    rel = access_relations(MatMul(), (b.var("a", (8, 16)), b.var("w", (16, 32))))
    dom = "0 <= i0 < 8 and 0 <= i1 < 32 and 0 <= i2 < 16"
    assert same(rel.inputs[0].pattern.relation, f"{{ [i0, i1, i2] -> [i0, i2] : {dom} }}")
    assert same(rel.inputs[1].pattern.relation, f"{{ [i0, i1, i2] -> [i2, i1] : {dom} }}")
    assert same(rel.outputs[0].pattern.relation, f"{{ [i0, i1, i2] -> [i0, i1] : {dom} }}")


def test_relation_2_binary_broadcast_reads_extent1_at_zero(b):
    rel = access_relations(Binary(BK.ADD), (b.var("x", (4, 8)), b.var("y", (1, 8))))
    assert same(rel.inputs[1].pattern.relation, "{ [i0, i1] -> [0, i1] : 0 <= i0 < 4 and 0 <= i1 < 8 }")
    bias = access_relations(Binary(BK.ADD), (b.var("x", (4, 8)), b.var("y", (8,))))
    assert same(bias.inputs[1].pattern.relation, "{ [i0, i1] -> [i1] : 0 <= i0 < 4 and 0 <= i1 < 8 }")


def test_relation_2_reduce_keepdim_sends_reduced_axis_to_zero(b):
    rel = access_relations(Reduce((1,), True, RK.SUM), (b.var("x", (4, 8)),))
    assert same(rel.outputs[0].pattern.relation, "{ [i0, i1] -> [i0, 0] : 0 <= i0 < 4 and 0 <= i1 < 8 }")


def test_relation_2_transpose_and_reshape(b):
    rel = access_relations(Transpose((1, 0)), (b.var("x", (4, 8)),))
    assert same(rel.outputs[0].pattern.relation, "{ [i0, i1] -> [i1, i0] : 0 <= i0 < 4 and 0 <= i1 < 8 }")
    rel = access_relations(Reshape((2, 16)), (b.var("x", (4, 8)),))
    src = rel.inputs[0].pattern.relation
    assert src.is_single_valued()
    assert same(src.range(), "{ [o0, o1] : 0 <= o0 < 4 and 0 <= o1 < 8 }")
    point = src.intersect_domain(isl.Set("{ [1, 3] }"))
    assert same(point, "{ [1, 3] -> [2, 3] }")  # linear 19 = 2*8 + 3


def test_relation_2_symbolic_extent_is_parameter(b):
    n = DimVar("ctx", 1, 8193)
    rel = access_relations(Binary(BK.MUL), (b.var("x", (n, 64)), b.var("y", (n, 64))))
    pattern = rel.inputs[0].pattern
    assert pattern.parameters == (("p_ctx", n),)
    assert same(pattern.relation, "[p_ctx] -> { [i0, i1] -> [i0, i1] : 0 <= i0 < p_ctx and 0 <= i1 < 64 }")


def test_relation_2_slice_runtime_start_is_bound_parameter(b):
    x = b.var("x", (64, 32))
    start = b.var("s", (), "i64", storage=SK.UMAT)
    starts = Tuple((start, b.const(0, "i64")), TupleType((start.type, start.type)))
    rel = access_relations(Slice((8, 32), (1, 1)), (x, starts))
    pattern = rel.inputs[0].pattern
    assert pattern.parameters[0][1] is start
    name = pattern.parameters[0][0]
    assert same(pattern.relation,
                f"[{name}] -> {{ [i0, i1] -> [{name} + i0, i1] : 0 <= i0 < 8 and 0 <= i1 < 32 and 0 <= {name} "
                f"and {name} + 7 <= 63 }}")
    assert rel.inputs[1].pattern.rank == 1  # starts: a control read, one point per leaf


def test_relation_2_concat_segments_and_repeat_interleave(b):
    rel = access_relations(Concat(1), (b.var("x", (2, 3)), b.var("y", (2, 5))))
    assert same(rel.inputs[1].pattern.relation,
                "{ [i0, i1] -> [i0, i1 - 3] : 0 <= i0 < 2 and 3 <= i1 < 8 }")
    rel = access_relations(RepeatInterleave(4, 0), (b.var("x", (2, 3)),))
    assert same(rel.inputs[0].pattern.relation,
                "{ [i0, i1] -> [floor(i0/4), i1] : 0 <= i0 < 8 and 0 <= i1 < 3 }")


def test_relation_2_index_select_reads_selected_axis_whole(b):
    rel = access_relations(IndexSelect(0), (b.var("t", (64, 8)), b.var("i", (3,), "i64")))
    image = rel.inputs[0].pattern.relation.range()
    card = image.intersect(isl.Set("{ [o0, o1] : 0 <= o0 < 64 }")).count_val().to_python()
    assert card == 64 * 8  # data decides: every row may be read


def test_relation_2_insert_slice_and_cache_update(b):
    dst, upd = b.var("d", (8, 4)), b.var("u", (2, 4))
    offs = Tuple((b.const(3, "i64"), b.const(0, "i64")),
                 TupleType((TensorType((), DType.i64, None, SK.UMAT),) * 2))
    rel = access_relations(InsertSlice(), (dst, upd, offs))
    assert rel.outputs[0].pattern.relation.range().count_val().to_python() == 8
    assert rel.inputs[0].pattern.relation.range().count_val().to_python() == 24
    cache, new = b.var("c", (1, 16, 2, 4), "bf16"), b.var("n", (1, 4, 2, 4), "bf16")
    pos, s = b.var("pos", (), "i32"), b.var("s", (), "i32")
    rel = access_relations(CacheUpdate(), (cache, pos, s, new))
    names = [n for n, _ in rel.outputs[0].pattern.parameters]
    assert sorted(names) == ["p_cur_pos", "p_s"]
    fixed = rel.outputs[0].pattern.relation.fix_val(isl.dim_type.param, 0, 5).fix_val(isl.dim_type.param, 1, 1)
    assert fixed.range().count_val().to_python() == 8  # one row of 2x4


def test_relation_2_isl_maps_memoised_by_structural_key(b):
    clear_isl_cache()
    first = access_relations(Binary(BK.ADD), (b.var("x", (4, 8)), b.var("y", (4, 8))))
    m1 = first.inputs[0].pattern.relation
    count = isl_cache_size()
    for _ in range(20):
        again = access_relations(Binary(BK.ADD), (b.var("x", (4, 8)), b.var("y", (4, 8))))
        assert again.inputs[1].pattern.relation is m1
    assert isl_cache_size() == count == 1


def test_relation_2_affine_access_refuses_bad_bindings():
    with pytest.raises(VerifyError, match="has no binding"):
        AffineAccess((AxisMap(dim=0, offset="p_a"),), ("4",))
    with pytest.raises(VerifyError, match="is not used by the map"):
        AffineAccess((proj(0),), ("4",), (("p_b", 3),))
    with pytest.raises(VerifyError, match="bound twice"):
        AffineAccess((AxisMap(dim=0, offset="p_a"),), ("4",), (("p_a", 1), ("p_a", 2)))
    with pytest.raises(VerifyError, match="at least one output"):
        AccessRelations((), ())


def test_relation_2_every_registered_op_has_a_relation():
    from tilefoundry.semantics.op_registry import ACCESS_RELATIONS, TF_NAMES, TYPEINFER

    classes = {t.op_class for t in TF_NAMES.values()}
    assert all(c in TYPEINFER and c in ACCESS_RELATIONS for c in classes)


def _factorizations(n: int, parts: int) -> list:
    """Every way to write n as an ordered product of ``parts`` factors."""
    if parts == 1:
        return [(n,)]
    return [(f, *rest) for f in range(1, n + 1) if n % f == 0 for rest in _factorizations(n // f, parts - 1)]


def _row_major_relation(source: tuple, result: tuple):
    """The reshape's source access written the general way: result index ->
    floor(linear / stride) mod extent per source axis (row-major)."""
    from tilefoundry.semantics.canonical import c_order

    linear = " + ".join(f"{s}*i{k}" for k, s in enumerate(c_order(result))) or "0"
    image = ", ".join(f"(floor(({linear})/{s}) mod {e})" for e, s in zip(source, c_order(source)))
    ins = ", ".join(f"i{k}" for k in range(len(result)))
    dom = " and ".join(f"0 <= i{k} < {e}" for k, e in enumerate(result))
    return isl.Map(f"{{ [{ins}] -> [{image}] : {dom} }}")


@pytest.mark.parametrize("total", [12, 16, 24])
def test_relation_2_reshape_source_index_is_the_row_major_position_for_every_factorization(b, total):
    """analysis §2 relations: a reshape's source access is written affine where
    it merges or splits axes; for every pair of 1- to 3-axis shapes of one size
    (merges, splits, and regroupings whose index must carry) it is the same
    relation as floor(linear / stride) mod extent."""
    shapes = [s for parts in (1, 2, 3) for s in _factorizations(total, parts)]
    for source in shapes:
        for result in shapes:
            rel = access_relations(Reshape(result), (b.var("x", source),))
            expected = _row_major_relation(source, result)
            assert rel.inputs[0].pattern.relation.is_equal(expected), (source, result)
