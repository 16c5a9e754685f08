"""Checklist of authoring.md §6.4: every op's result type and every listed error.

One test per catalogue entry (op family as the catalogue groups it). An error is
checked on its first line -- ``<Op>: <message>`` naming the operand (role and/or
position), the offending value and the rule -- and the message stays one line
(the location, when given, is the only second line).
"""
import re

import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Constant, Tuple, Var
from tilefoundry.ir.shard import B, Layout, Mesh, P, S, ShardLayout, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType, TupleType, umat_scalar
from tilefoundry.ops import (
    ArgMax, Arange, Binary, BinaryKind as BK, CacheUpdate, Cast, Clamp, Concat, Conv2D, FullLike, Gelu,
    IndexAdd, IndexCopy, IndexSelect, InsertSlice, LayerNorm, Local, MatMul, Mma_SM80_16x8x16, Quant, Rank,
    Reduce, ReduceKind as RK, ReLU, RepeatInterleave, Reshape, Reshard, RMSNorm, RoPE, ShapeOf, Sigmoid, Silu,
    Slice, SoftMax, Softplus, Split, Stack, Tanh, TopK, Transpose, TupleGetItem, Unary, UnaryKind as UK,
    Wgmma_SM90_64x128x16, Where, Zeros,
)
from tilefoundry.ops.dims import DIM_OPS, DimAdd, DimFloorDiv, DimMod, DimMul, DimSub
from tilefoundry.semantics.canonical import c_order
from tilefoundry.semantics.op_registry import ACCESS_RELATIONS, TF_NAMES, TYPEINFER
from tilefoundry.semantics.relations import relations_of_call
from tilefoundry.semantics.typeinfer import build_call

M1 = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))


def T(shape, dtype="f32", layout=None, storage=SK.GMEM):
    return TensorType(tuple(shape), DType.from_name(dtype), layout, storage)


def V(name, shape, dtype="f32", layout=None, storage=SK.GMEM):
    return Var(name, T(shape, dtype, layout, storage))


def call(op, *args):
    return build_call(op, tuple(args))


def refuses(pattern, op, *args):
    """The call is refused with a one-line message matching ``pattern``: the
    CLI's line (where, the op's reason, the value), its parts kept apart."""
    with pytest.raises(VerifyError) as err:
        build_call(op, tuple(args), location="prog.py:3:5", binding="v")
    reason = err.value.reason
    assert str(err.value) == f"prog.py:3:5: {reason} (value 'v')", str(err.value)
    assert (err.value.location, err.value.value) == ("prog.py:3:5", "v")
    assert re.search(pattern, reason), reason
    assert reason.startswith(f"{type(op).__name__}: "), reason
    return reason


def ints(*values):
    t = umat_scalar(DType.i64)
    return Tuple(tuple(Constant(v, t) for v in values), TupleType((t,) * len(values)))


def split_rows(shape, storage=SK.SMEM, dtype="f32"):
    """(shape) split 4-way on axis 0 over M1, materialized by a Reshard."""
    g = (4, shape[0] // 4) + tuple(shape[1:])
    return call(Reshard(ShardLayout(Layout(g), (S(0),), M1), storage), V("x", shape, dtype))


def split_axis(shape, axis, storage=SK.SMEM, dtype="f32"):
    g = tuple(shape[:axis]) + (4, shape[axis] // 4) + tuple(shape[axis + 1:])
    return call(Reshard(ShardLayout(Layout(g), (S(axis),), M1), storage), V("x", shape, dtype))


def partial(shape=(8, 16), storage=SK.SMEM):
    """A Partial('sum') value on M1 via a split-K matmul."""
    k = 16
    a = split_axis((shape[0], k), 1, storage)
    w = split_rows((k, shape[1]), storage)
    return call(MatMul(), a, w)


# ---------------------------------------------------------------- coverage of the catalogue


def test_ops_6_4_every_tf_name_has_typeinfer_and_relation():
    assert len(TF_NAMES) == 72
    for name, entry in TF_NAMES.items():
        assert entry.op_class in TYPEINFER, name
        assert entry.op_class in ACCESS_RELATIONS, name


# ---------------------------------------------------------------- elementwise math


def test_ops_6_4_binary_aliases():
    x, y = V("x", (4, 1), "bf16"), V("y", (3,), "bf16")
    for alias in ("add", "sub", "mul", "div", "min", "max", "minimum", "maximum"):
        kind = dict(TF_NAMES[alias].fixed)["kind"]
        assert call(Binary(kind), x, y).type == T((4, 3), "bf16")  # broadcast shape, lhs dtype
    for alias in ("cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge"):
        assert call(Binary(dict(TF_NAMES[alias].fixed)["kind"]), x, y).type == T((4, 3), "bool")
    assert call(Binary(BK.AND), V("p", (4,), "bool"), V("q", (4,), "bool")).type == T((4,), "bool")
    assert call(Binary(BK.FLOOR_DIV), V("i", (4,), "i32"), V("j", (4,), "i32")).type == T((4,), "i32")
    refuses(r"Binary ADD: dtype mismatch \(bf16 vs f32\); tensor operands are never promoted.*tf\.cast",
            Binary(BK.ADD), x, V("z", (3,)))
    refuses(r"lhs \(operand 0\) is f32; and needs bool operands; compare first", Binary(BK.AND),
            V("a", (4,)), V("b", (4,)))
    refuses(r"lhs \(operand 0\) is f32; mod needs i32/i64 operands; use div", Binary(BK.MOD),
            V("a", (4,)), V("b", (4,)))
    refuses(r"shapes \(4,\), \(3,\) do not broadcast \(axis -1: 4 vs 3\)", Binary(BK.ADD),
            V("a", (4,)), V("b", (3,)))


def test_ops_6_4_numbers_next_to_tensors_are_umat_constants():
    # authoring §5.4: an int literal stays i64, so an f32 tensor + 1 is a dtype error
    refuses(r"dtype mismatch \(f32 vs i64\)", Binary(BK.ADD), V("x", (4,)), Constant(1, umat_scalar(DType.i64)))
    both = call(Binary(BK.ADD), Constant(1.0, umat_scalar(DType.f32)), Constant(2.0, umat_scalar(DType.f32)))
    assert both.type == umat_scalar(DType.f32)


def test_ops_6_4_unary_aliases_and_logical_not():
    x = V("x", (4, 8), "bf16", storage=SK.RMEM)
    for alias in ("neg", "abs", "rsqrt", "exp", "log", "square", "ceil", "round", "exp2", "log2"):
        assert call(Unary(dict(TF_NAMES[alias].fixed)["kind"]), x).type.shape == (4, 8)
        assert call(Unary(dict(TF_NAMES[alias].fixed)["kind"]), x).type.dtype == DType.bf16
    assert call(Unary(UK.NOT), V("b", (4,), "bool")).type == T((4,), "bool")
    refuses(r"x \(operand 0\) is f32; Unary NOT needs a bool operand", Unary(UK.NOT), V("a", (4,)))
    refuses(r"x \(operand 0\) is i32; Unary EXP needs a float operand; tf\.cast", Unary(UK.EXP),
            V("a", (4,), "i32"))
    refuses(r"x \(operand 0\): Unary kind cast has no target dtype; use tf\.cast", Unary(UK.CAST), V("a", (4,)))


def test_ops_6_4_clamp_softplus_activations_gelu():
    x = V("x", (4, 8), "f16")
    for op in (Clamp(-448.0, 448.0), Softplus(), Silu(), Sigmoid(), ReLU(), Tanh(), Gelu()):
        assert call(op, x).type == x.type
    assert Gelu().approximate == "tanh" and Gelu("none").approximate == "none"  # stored as given
    refuses(r"attribute min_val 2\.0 is greater than max_val 1\.0; swap", Clamp(2.0, 1.0), x)
    for op in (Softplus(), Silu(), Sigmoid(), ReLU(), Tanh(), Gelu()):
        refuses(r"x \(operand 0\) is i32; \w+ needs a float operand", op, V("i", (4,), "i32"))


def test_ops_6_4_where():
    t = call(Where(), V("c", (4, 1), "bool"), V("x", (4, 8)), V("y", (8,)))
    assert t.type == T((4, 8))  # three-way broadcast, dtype of the data
    refuses(r"condition \(operand 0\) is f32; it must be bool", Where(), V("c", (4,)), V("x", (4,)), V("y", (4,)))
    refuses(r"other \(operand 2\) is f16 but input \(operand 1\) is f32; no implicit promotion", Where(),
            V("c", (4,), "bool"), V("x", (4,)), V("y", (4,), "f16"))


# ---------------------------------------------------------------- neural-network ops


def test_ops_6_4_matmul():
    assert call(MatMul(), V("a", (2, 1, 4, 8), "bf16"), V("w", (3, 8, 5), "bf16")).type == T((2, 3, 4, 5), "bf16")
    refuses(r"operands need rank >= 2, got lhs \(4,\) and rhs \(4, 8\)", MatMul(), V("a", (4,)), V("w", (4, 8)))
    refuses(r"batch mismatch: shapes \(2,\), \(3,\) do not broadcast", MatMul(), V("a", (2, 4, 4)), V("w", (3, 4, 4)))
    refuses(r"contraction-dim mismatch: lhs K=128 vs rhs K=96", MatMul(), V("a", (4, 128)), V("w", (96, 8)))
    refuses(r"dtype mismatch: lhs f16 vs rhs f32; cast one operand", MatMul(), V("a", (4, 4), "f16"), V("w", (4, 4)))
    m2 = Mesh((Topology("cta", 8),), Layout((2, 4), (4, 1)), names=("p", "q"))
    lhs = call(Reshard(ShardLayout(Layout((8, 2, 8)), (S(1), B()), m2), SK.SMEM), V("a", (8, 16)))
    rhs = call(Reshard(ShardLayout(Layout((4, 4, 8)), (B(), S(0)), m2), SK.SMEM), V("w", (16, 8)))
    refuses(r"K is split on different mesh axes: lhs on mesh axis 0 \('p'\), rhs on mesh axis 1 \('q'\); "
            r"reshard one operand", MatMul(), lhs, rhs)


def test_ops_6_4_rms_norm_and_layer_norm():
    x = V("x", (4, 64), "bf16")
    assert call(RMSNorm(), x, V("w", (64,))).type == x.type  # f32 weight with bf16 x is fine
    assert RMSNorm().eps == 1e-6
    refuses(r"weight must be rank 1 of extent 64 \(x's last axis\), got \(32,\)", RMSNorm(), x, V("w", (32,)))
    assert call(LayerNorm(-1, 1e-5), x, V("w", (64,)), V("c", (64,))).type == x.type
    refuses(r"weight shape \(64,\) must equal the normalized suffix \(4, 64\)", LayerNorm(0, 1e-5), x,
            V("w", (64,)), V("c", (64,)))
    refuses(r"x must be a float tensor, got i32", LayerNorm(-1, 1e-5), V("i", (4, 64), "i32"),
            V("w", (64,)), V("c", (64,)))


def test_ops_6_4_rope():
    q, k = V("q", (1, 4, 8, 64)), V("k", (1, 4, 2, 64))
    cos, sin, pos = V("c", (128, 64)), V("s", (128, 64)), V("p", (4,), "i32")
    assert call(RoPE(), q, k, cos, sin, pos).type == TupleType((q.type, k.type))
    refuses(r"q head dim 3 must be even", RoPE(), V("q", (1, 3)), V("k", (1, 3)), V("c", (8, 3)),
            V("s", (8, 3)), V("p", (1,), "i32"))
    refuses(r"q head dim 64 differs from k head dim 32", RoPE(), q, V("k", (1, 4, 2, 32)), cos, sin, pos)
    qs = split_axis((1, 4, 8, 64), 3, SK.GMEM)
    refuses(r"q \(operand 0\) is split on mesh axis 0 \('u'\) along its head dim.*reshard q", RoPE(), qs, qs,
            cos, sin, pos)


def test_ops_6_4_softmax():
    x = V("x", (4, 64))
    assert call(SoftMax(-1), x).type == x.type
    refuses(r"axis 2 is out of range for rank 2", SoftMax(2), x)
    refuses(r"x must be a float tensor, got i64", SoftMax(-1), V("i", (4,), "i64"))


def test_ops_6_4_conv2d():
    got = call(Conv2D((2, 2), (1, 1), (1, 1), 1), V("x", (1, 3, 9, 9)), V("w", (4, 3, 3, 3)), V("b", (4,)))
    assert got.type == T((1, 4, 5, 5))  # floor((9 + 2 - 2 - 1) / 2) + 1
    refuses(r"needs NCHW input, OIHW weight and rank-1 bias", Conv2D(1, 0, 1, 1), V("x", (3, 8, 8)),
            V("w", (4, 3, 3, 3)), V("b", (4,)))
    refuses(r"input channels 3 != weight in-channels 2 x groups 1", Conv2D(1, 0, 1, 1), V("x", (1, 3, 8, 8)),
            V("w", (4, 2, 3, 3)), V("b", (4,)))
    refuses(r"bias extent 5 != out channels 4", Conv2D(1, 0, 1, 1), V("x", (1, 3, 8, 8)), V("w", (4, 3, 3, 3)),
            V("b", (5,)))


def test_ops_6_4_mma_tiles():
    mma = Mma_SM80_16x8x16(DType.f16, DType.f16, DType.f32)
    assert (mma.a_layout, mma.b_layout) == ("T", "N")
    assert call(mma, V("a", (16, 16), "f16"), V("b", (16, 8), "f16")).type == T((16, 8), "f32")
    wg = Wgmma_SM90_64x128x16(DType.bf16, DType.bf16, DType.bf16)
    assert call(wg, V("a", (64, 16), "bf16"), V("b", (16, 128), "bf16")).type == T((64, 128), "bf16")
    refuses(r"operands must be \(16, 16\) and \(16, 8\), got \(16, 8\) and \(16, 8\)", mma,
            V("a", (16, 8), "f16"), V("b", (16, 8), "f16"))
    refuses(r"dtype triple \('f16', 'f16', 'bf16'\) is not supported",
            Mma_SM80_16x8x16(DType.f16, DType.f16, DType.bf16), V("a", (16, 16), "f16"), V("b", (16, 8), "f16"))
    refuses(r"operand dtypes \(bf16, bf16\) differ from the declared \(f16, f16\)", mma,
            V("a", (16, 16), "bf16"), V("b", (16, 8), "bf16"))
    refuses(r"a_layout must be 'N' or 'T', got 'X'", Mma_SM80_16x8x16(DType.f16, DType.f16, DType.f32, "X"),
            V("a", (16, 16), "f16"), V("b", (16, 8), "f16"))


def test_ops_6_4_quant():
    q = call(Quant(), V("x", (16, 512), "bf16")).type
    assert q == TupleType((T((16, 512), "fp8e4m3"), T((16, 4), "f32")))
    refuses(r"last extent 100 is not divisible by group 128", Quant(), V("x", (4, 100)))
    refuses(r"scheme 'per_tensor' is not supported", Quant("per_tensor"), V("x", (4, 128)))


# ---------------------------------------------------------------- tensor structure


def test_ops_6_4_reshape():
    x = V("x", (4, 6), storage=SK.RMEM, layout=Layout((4, 6), (6, 1)))
    got = call(Reshape((2, 12)), x).type
    assert got == T((2, 12), layout=Layout((2, 12), (12, 1)), storage=SK.RMEM)  # C-order over the new shape
    refuses(r"element count mismatch: \(4, 6\) has 24 elements, new_shape \(5, 5\) has 25", Reshape((5, 5)), x)
    refuses(r"negative extent \(-1\); -1 is not inferred", Reshape((-1, 6)), x)
    sx = split_rows((4, 4))  # G = (4, 1, 4): the split position would have to be factored (2, 2)
    refuses(r"not expressible over \(2, 8\): layout position 0 \(extent 4\) is split over the mesh.*"
            r"reshard before reshaping", Reshape((2, 8)), sx)


def test_ops_6_4_transpose():
    x = V("x", (4, 6), layout=Layout((4, 6), (6, 1)))
    assert call(Transpose((1, 0)), x).type == T((6, 4), layout=Layout((6, 4), (1, 6)))
    refuses(r"perm \(0,\) has length 1 for a rank-2 value", Transpose((0,)), x)
    refuses(r"perm names axis 0 twice", Transpose((0, 0)), x)


def test_ops_6_4_cast():
    x = V("x", (4, 6), "bf16", storage=SK.SMEM)
    assert call(Cast(DType.fp8e4m3), x).type == T((4, 6), "fp8e4m3", storage=SK.SMEM)
    assert call(Cast(DType.f32), call(Cast(DType.f4e2m1), x)).type.dtype == DType.f32
    refuses(r"dtype must be a DType, got 'f32'", Cast("f32"), x)


def test_ops_6_4_reduce():
    x = V("x", (4, 6), storage=SK.RMEM, layout=Layout((4, 6), (6, 1)))
    assert (Reduce((-1,)).keepdim, Reduce((-1,)).kind) == (True, RK.MEAN)
    assert call(Reduce((-1,)), x).type == T((4, 1), layout=Layout((4, 1), (1, 1)), storage=SK.RMEM)
    assert call(Reduce((0, 1), False, RK.SUM), x).type.shape == ()
    refuses(r"axes 2 is out of range for rank 2", Reduce((2,)), x)
    refuses(r"axes names axis -1 twice", Reduce((1, -1)), x)
    refuses(r"ReduceKind: unknown value 'avg'", Reduce((0,), True, "avg"), x)


def test_ops_6_4_argmax_and_topk():
    x = V("x", (4, 6), "bf16")
    assert ArgMax().axis == -1 and call(ArgMax(), x).type == T((4,), "i64")
    t = call(TopK(2), x).type
    assert t == TupleType((T((4, 2), "bf16"), T((4, 2), "i64")))
    refuses(r"k=7 is outside \[1, 6\] for axis -1", TopK(7), x)
    refuses(r"axis 3 is out of range for rank 2", ArgMax(3), x)


def test_ops_6_4_concat_stack_split():
    a, c = V("a", (2, 3)), V("c", (2, 5))
    assert call(Concat(1), a, c).type == T((2, 8))
    refuses(r"input 1 extent 3 on axis 0 differs from input 0's 2", Concat(1), a, V("d", (3, 5)))
    refuses(r"input 1 dtype f16 differs from input 0 dtype f32", Concat(1), a, V("d", (2, 5), "f16"))
    refuses(r"input 1 has rank 1, input 0 has rank 2", Concat(0), a, V("d", (2,)))
    sx = split_rows((8, 4))
    refuses(r"input 0 is split on mesh axis 0 \('u'\) along axis 0, whose extent differs from the output "
            r"axis.*reshard", Concat(0), sx, sx)
    assert call(Stack(-1), a, a).type == T((2, 3, 2))
    refuses(r"input 1 \(2, 5\) f32 differs from input 0 \(2, 3\) f32", Stack(0), a, c)
    assert call(Split(1, 3), V("q", (2, 9))).type == TupleType((T((2, 3)),) * 3)
    refuses(r"axis 1 extent 9 is not divisible by num_splits=2", Split(1, 2), V("q", (2, 9)))


def test_ops_6_4_repeat_interleave():
    x = V("x", (1, 16, 2, 32), "bf16", layout=Layout((1, 16, 2, 32)))
    assert call(RepeatInterleave(4, 2), x).type == T((1, 16, 8, 32), "bf16")  # layout None
    refuses(r"repeats must be a positive int, got 0", RepeatInterleave(0, 2), x)
    refuses(r"x \(operand 0\) is split; .*not a projection; reshard x to Broadcast", RepeatInterleave(2, 1),
            split_rows((8, 4)))
    refuses(r"x \(operand 0\) carries Partial\(sum\) on mesh axis 0 \('u'\).*reshard\(x", RepeatInterleave(2, 0),
            partial())


def test_ops_6_4_slice():
    x = V("x", (1, 16, 2, 32), "bf16")
    assert call(Slice((1, 4, 2, 16), (1, 1, 1, 2)), x, ints(0, 4, 0, 0)).type == T((1, 4, 2, 16), "bf16")
    refuses(r"window \[14, 17\] on axis 1 is outside extent 16", Slice((1, 4, 2, 32), (1, 1, 1, 1)), x,
            ints(0, 14, 0, 0))
    refuses(r"sizes \(4,\) and strides \(1,\) must have the rank 4 of x", Slice((4,), (1,)), x, ints(0))
    refuses(r"strides must be positive ints, got \(1, 1, 1, 0\)", Slice((1, 4, 2, 32), (1, 1, 1, 0)), x,
            ints(0, 0, 0, 0))
    refuses(r"starts must be a tuple of 4 rank-0 ints", Slice((1, 4, 2, 32), (1, 1, 1, 1)), x, ints(0, 0))


def test_ops_6_4_insert_slice():
    dst, upd = V("d", (64, 8)), V("u", (16, 8))
    assert call(InsertSlice(), dst, upd, ints(24, 0)).type == dst.type
    refuses(r"window \[56, 72\) on axis 0 is outside dst extent 64", InsertSlice(), dst, upd, ints(56, 0))
    refuses(r"update rank 1 differs from dst rank 2", InsertSlice(), dst, V("u", (8,)), ints(0, 0))
    refuses(r"update dtype bf16 differs from dst dtype f32", InsertSlice(), dst, V("u", (16, 8), "bf16"),
            ints(0, 0))
    refuses(r"offsets must be a tuple of 2 rank-0 ints", InsertSlice(), dst, upd, ints(0))
    refuses(r"update \(operand 1\) carries sharding .* cannot represent; reshard update", InsertSlice(),
            V("d", (16, 8), storage=SK.SMEM), split_rows((16, 8)), ints(0, 0))


def test_ops_6_4_index_ops():
    t = V("t", (64, 8), "f16")
    assert IndexSelect().dim == 0
    assert call(IndexSelect(0), t, V("i", (3,), "i32")).type == T((3, 8), "f16")
    refuses(r"index must be a rank-1 i32/i64 tensor, got \(3,\) f32", IndexSelect(0), t, V("i", (3,)))
    src = V("s", (2, 8), "f16")
    assert call(IndexAdd(0), t, V("i", (2,), "i32"), src).type == t.type
    assert call(IndexCopy(0), t, V("i", (2,), "i64"), src).type == t.type
    refuses(r"index must be a rank-1 i64 tensor, got \(2,\) i32", IndexCopy(0), t, V("i", (2,), "i32"), src)
    refuses(r"src shape \(3, 8\) must be \(2, 8\)", IndexAdd(0), t, V("i", (2,), "i64"), V("s", (3, 8), "f16"))
    refuses(r"src dtype f32 differs from dst dtype f16", IndexAdd(0), t, V("i", (2,), "i64"), V("s", (2, 8)))


def test_ops_6_4_cache_update():
    cache, new = V("c", (1, 256, 2, 32), "bf16"), V("n", (1, 8, 2, 32), "bf16")
    pos, s = V("p", (), "i32"), V("s", (1,), "i32")  # rank 0 or all-1 dims
    assert call(CacheUpdate(), cache, pos, s, new).type == cache.type
    refuses(r"cur_pos must be an i32 scalar", CacheUpdate(), cache, V("p", (), "i64"), s, new)
    refuses(r"heads differs: cache 2 vs new 4", CacheUpdate(), cache, pos, s, V("n", (1, 8, 4, 32), "bf16"))
    refuses(r"dtype differs: cache bf16 vs new f32", CacheUpdate(), cache, pos, s, V("n", (1, 8, 2, 32)))
    refuses(r"cache and new must be rank 4", CacheUpdate(), V("c", (256, 2, 32)), pos, s, new)


def test_ops_6_4_generators_full_like_shape_values_tuple_get_item():
    x = V("x", (4, 8), "bf16", storage=SK.RMEM)
    assert call(FullLike(0.0), x).type == x.type
    t = T((4, 8), "bf16", storage=SK.RMEM)
    assert call(Zeros(t)).type == t
    refuses(r"type must be a Tensor\[\.\.\.\] type", Zeros("f32"))
    assert call(Arange(T((16,), "i32"), 2, 3)).type == T((16,), "i32")
    refuses(r"step must be a positive int, got 0", Arange(T((16,), "i64"), 0, 0))
    refuses(r"type must be a rank-1 i32/i64 Tensor", Arange(T((16,), "f32")))
    assert call(ShapeOf(), x).type == T((2,), "i64", storage=SK.UMAT)
    assert call(Rank(), x).type == umat_scalar(DType.i64)
    parts = call(Split(0, 2), x)
    assert call(TupleGetItem(-1), parts).type == T((2, 8), "bf16", storage=SK.RMEM)
    refuses(r"index 2 is out of range for a 2-field tuple", TupleGetItem(2), parts)
    refuses(r"tuple_value must be a tuple, got TensorType", TupleGetItem(0), x)


# ---------------------------------------------------------------- sharding ops


def test_ops_6_4_reshard():
    x = V("x", (8, 128))
    got = call(Reshard(ShardLayout(Layout((4, 2, 128)), (S(0),), M1), SK.SMEM), x).type
    assert got.storage == SK.SMEM and got.shape == (8, 128)  # logical shape kept
    assert got.layout.layout.strides == (0, 128, 1)  # toward a nearer level: per-instance storage
    refuses(r"storage change requires an explicit `layout=`", Reshard(None, SK.SMEM), x)
    refuses(r"storage 'umat' is not a residency", Reshard(ShardLayout(Layout((4, 2, 128)), (S(0),), M1), SK.UMAT), x)
    refuses(r"layout domain \(4, 2, 64\) holds 512 elements but the value \(8, 128\) has 1024",
            Reshard(ShardLayout(Layout((4, 2, 64)), (S(0),), M1)), x)


def test_ops_6_4_local():
    got = call(Local(), split_rows((8, 16))).type
    assert got.shape == (1, 2, 16)  # split positions divided by the mesh extent
    refuses(r"x \(operand 0\) has layout None; local\(\) requires a value with a ShardLayout", Local(), V("x", (4,)))
    refuses(r"x \(operand 0\) carries Partial\(sum\) on mesh axis 0 \('u'\).*reshard\(x", Local(), partial())


# ---------------------------------------------------------------- dim arithmetic (companions §1.4)


def test_ops_1_4_dim_arithmetic_ops():
    i = Var("i", umat_scalar(DType.i64))
    four = Constant(4, umat_scalar(DType.i64))
    for cls in DIM_OPS:
        got = call(cls(), i, four)
        assert got.type == umat_scalar(DType.i64)
        rel = relations_of_call(got)
        assert [b.pattern.rank for b in rel.inputs + rel.outputs] == [0, 0, 0]
        assert cls not in {e.op_class for e in TF_NAMES.values()}  # no tf names
    assert [c.infix for c in (DimAdd, DimSub, DimMul, DimFloorDiv, DimMod)] == ["+", "-", "*", "//", "%"]
    refuses(r"rhs \(operand 1\) is f32\[4\]; dim arithmetic takes rank-0 i64 dim values", DimMul(), i,
            V("x", (4,)))
    refuses(r"lhs \(operand 0\) carries layout", DimAdd(),
            Var("j", T((), "i64", Layout((), ()), SK.UMAT)), four)


def test_ops_1_4_front_end_builds_dim_call_for_induction_arithmetic(tmp_path):
    import importlib.util
    import textwrap

    from tilefoundry.ir.expr import Call, GridRegionExpr

    src = textwrap.dedent('''
        from tilefoundry import module, func
        from tilefoundry.dsl import tf, Tensor
        from tilefoundry.target import CpuTarget

        @module(entry="f", target=CpuTarget())
        class Rows:
            @func
            def f(x: Tensor[(16, 16), "f32"]) -> Tensor[(4, 16), "f32"]:
                acc = tf.zeros(Tensor[(4, 16), "f32"])
                for i in range(4):
                    base = i * 4
                    acc = tf.add(acc, x[base:base + 4, :])
                return acc
    ''')
    path = tmp_path / "rows.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("rows_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = mod.Rows.lookup("f") if hasattr(mod.Rows, "lookup") else mod.Rows.functions[0]
    loop = fn.body if isinstance(fn.body, GridRegionExpr) else None
    assert loop is not None
    found = []
    stack = list(loop.yields)
    while stack:
        node = stack.pop()
        if isinstance(node, Call):
            found.append(type(node.op).__name__)
            stack.extend(node.args)
        elif isinstance(node, Tuple):
            stack.extend(node.fields)
    assert "DimMul" in found and "Binary" in found  # i * 4 is dim arithmetic; acc + rows is a tensor add


_ = (P, c_order)
