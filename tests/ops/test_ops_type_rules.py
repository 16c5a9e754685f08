"""Per-op type rules and errors of authoring.md §6 (one test per rule)."""
import dataclasses

import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Tuple
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ops import (
    ArgMax,
    Arange,
    Binary,
    BinaryKind as BK,
    CacheUpdate,
    Cast,
    Clamp,
    Concat,
    Conv2D,
    Gelu,
    IndexCopy,
    IndexSelect,
    InsertSlice,
    LayerNorm,
    MatMul,
    Mma_SM80_16x8x16,
    Quant,
    Rank,
    Reduce,
    ReduceKind as RK,
    RepeatInterleave,
    Reshape,
    Reshard,
    RMSNorm,
    RoPE,
    ShapeOf,
    Slice,
    SoftMax,
    Split,
    Stack,
    TopK,
    Transpose,
    TupleGetItem,
    Unary,
    UnaryKind as UK,
    Where,
    Zeros,
)
from tilefoundry.semantics.op_registry import TF_NAMES

TF72 = """abs add arange argmax binary cache_update cast ceil clamp cmp_eq cmp_ge cmp_gt
cmp_le cmp_lt cmp_ne concat conv2d div exp exp2 floor_div full_like gelu index_add
index_copy index_select insert_slice layer_norm local log log2 logical_and
logical_not logical_or matmul max maximum min minimum mma_sm80_16x8x16 mod mul neg
quant rank reduce relu repeat_interleave reshape reshard rms_norm rope round rsqrt
shape_of sigmoid silu slice softmax softplus split square stack sub tanh topk
transpose tuple_get_item unary wgmma_sm90_64x128x16 where zeros""".split()


def scalars(*values):
    t = TensorType((), DType.i64, None, SK.UMAT)
    from tilefoundry.ir.expr import Constant

    return Tuple(tuple(Constant(v, t) for v in values), TupleType((t,) * len(values)))


def test_ops_6_1_the_72_tf_names_and_aliases():
    assert sorted(TF_NAMES) == sorted(TF72)
    assert TF_NAMES["max"].op_class is Binary and dict(TF_NAMES["maximum"].fixed) == {"kind": BK.MAX}
    assert dict(TF_NAMES["logical_not"].fixed) == {"kind": UK.NOT}
    assert dict(TF_NAMES["cmp_ge"].fixed) == {"kind": BK.GE}


def test_ops_6_1_attributes_defaults_and_attr_kinds():
    for entry in TF_NAMES.values():
        cls = entry.op_class
        names = [f.name for f in dataclasses.fields(cls)]
        assert list(cls.attr_kinds) == names, cls
    assert Reduce((-1,)).keepdim is True and Reduce((-1,)).kind == RK.MEAN
    assert Reshard().layout is None and Reshard().storage is None
    assert Slice.inputs == ("x", "starts") and Concat.variadic and Stack.variadic
    assert Gelu().approximate == "tanh" and TopK(4).axis == -1 and Quant().group == 128


def test_ops_6_2_kind_enums_values():
    assert [k.value for k in RK] == ["mean", "sum", "abs_max", "max"]
    assert BK("floor_div") is BK.FLOOR_DIV and UK("exp2") is UK.EXP2


def test_ops_6_3_binary_no_dtype_promotion(b):
    with pytest.raises(VerifyError, match=r"^f\.py:1:2: Binary: Binary ADD: dtype mismatch \(bf16 vs f32\); tensor operands are never promoted"):
        b.call(Binary(BK.ADD), b.var("x", (4,), "bf16"), b.var("y", (4,)), location="f.py:1:2")


def test_ops_6_3_binary_broadcast_comparison_logical_integer(b):
    assert b.call(Binary(BK.ADD), b.var("x", (4, 1)), b.var("y", (3,))).type.shape == (4, 3)
    assert b.call(Binary(BK.LT), b.var("x", (4,)), b.var("y", (4,))).type.dtype == DType.bool
    with pytest.raises(VerifyError, match="needs bool operands"):
        b.call(Binary(BK.AND), b.var("x", (4,)), b.var("y", (4,)))
    with pytest.raises(VerifyError, match="needs i32/i64"):
        b.call(Binary(BK.MOD), b.var("x", (4,)), b.var("y", (4,)))
    with pytest.raises(VerifyError, match="do not broadcast"):
        b.call(Binary(BK.ADD), b.var("x", (4,)), b.var("y", (3,)))


def test_ops_6_3_binary_fresh_layout_in_rmem(b):
    t = b.call(Binary(BK.ADD), b.var("x", (4, 1), storage=SK.RMEM), b.var("y", (3,), storage=SK.RMEM)).type
    assert t.layout.shape == (4, 3) and t.layout.strides == (3, 1)


def test_ops_6_4_unary_rules(b):
    assert b.call(Unary(UK.EXP), b.var("x", (4,), "bf16")).type == TensorType((4,), DType.bf16)
    with pytest.raises(VerifyError, match="NOT needs a bool"):
        b.call(Unary(UK.NOT), b.var("x", (4,)))
    with pytest.raises(VerifyError, match="use tf.cast"):
        b.call(Unary(UK.CAST), b.var("x", (4,)))


def test_ops_6_4_clamp_gelu_softmax_keep_type(b):
    x = b.var("x", (4, 8), storage=SK.RMEM)
    for op in (Clamp(-1.0, 1.0), Gelu(), SoftMax(-1)):
        assert b.call(op, x).type.shape == (4, 8)
    with pytest.raises(VerifyError, match="greater than max_val"):
        b.call(Clamp(2.0, 1.0), x)


def test_ops_6_4_matmul_rules(b):
    assert b.call(MatMul(), b.var("a", (2, 1, 4, 8), "bf16"), b.var("w", (3, 8, 5), "bf16")).type.shape == (2, 3, 4, 5)
    with pytest.raises(VerifyError, match="MatMul contraction-dim mismatch: lhs K=128 vs rhs K=96"):
        b.call(MatMul(), b.var("a", (4, 128)), b.var("w", (96, 8)))
    with pytest.raises(VerifyError, match="rank >= 2"):
        b.call(MatMul(), b.var("a", (4,)), b.var("w", (4, 8)))
    with pytest.raises(VerifyError, match="dtype mismatch"):
        b.call(MatMul(), b.var("a", (4, 4), "f16"), b.var("w", (4, 4)))
    with pytest.raises(VerifyError, match="batch mismatch"):
        b.call(MatMul(), b.var("a", (2, 4, 4)), b.var("w", (3, 4, 4)))


def test_ops_6_4_norms(b):
    x = b.var("x", (4, 64), "bf16")
    assert b.call(RMSNorm(), x, b.var("w", (64,))).type == x.type
    with pytest.raises(VerifyError, match="weight must be rank 1"):
        b.call(RMSNorm(), x, b.var("w", (32,)))
    assert b.call(LayerNorm(-1, 1e-5), x, b.var("w", (64,)), b.var("c", (64,))).type == x.type
    with pytest.raises(VerifyError, match="normalized suffix"):
        b.call(LayerNorm(0, 1e-5), x, b.var("w", (64,)), b.var("c", (64,)))


def test_ops_6_4_rope_tuple(b):
    q, k = b.var("q", (1, 4, 8, 64)), b.var("k", (1, 4, 2, 64))
    t = b.call(RoPE(), q, k, b.var("c", (128, 64)), b.var("s", (128, 64)), b.var("p", (4,), "i32"))
    assert t.type == TupleType((q.type, k.type))
    with pytest.raises(VerifyError, match="must be even"):
        b.call(RoPE(), b.var("q", (1, 3)), b.var("k", (1, 3)), b.var("c", (8, 3)), b.var("s", (8, 3)), b.var("p", (1,), "i32"))


def test_ops_6_4_reshape_transpose_cast(b):
    x = b.var("x", (4, 6))
    assert b.call(Reshape((2, 12)), x).type.shape == (2, 12)
    with pytest.raises(VerifyError, match="element count mismatch"):
        b.call(Reshape((5, 5)), x)
    with pytest.raises(VerifyError, match="-1 is not inferred"):
        b.call(Reshape((-1, 6)), x)
    assert b.call(Transpose((1, 0)), x).type.shape == (6, 4)
    with pytest.raises(VerifyError, match="perm"):
        b.call(Transpose((0,)), x)
    assert b.call(Cast(DType.fp8e4m3), x).type.dtype == DType.fp8e4m3


def test_ops_6_4_reduce_argmax_topk(b):
    x = b.var("x", (4, 6), storage=SK.RMEM)
    assert b.call(Reduce((-1,)), x).type == TensorType((4, 1), DType.f32, None, SK.RMEM)
    assert b.call(Reduce((0, 1), False, RK.SUM), x).type.shape == ()
    with pytest.raises(VerifyError, match="out of range"):
        b.call(Reduce((2,)), x)
    assert b.call(ArgMax(), x).type == TensorType((4,), DType.i64, None, SK.RMEM)
    t = b.call(TopK(2), x).type
    assert t.fields[0].shape == (4, 2) and t.fields[1].dtype == DType.i64


def test_ops_6_4_concat_stack_split(b):
    a, c = b.var("a", (2, 3)), b.var("c", (2, 5))
    assert b.call(Concat(1), a, c).type.shape == (2, 8)
    with pytest.raises(VerifyError, match="axis 0 differs"):
        b.call(Concat(1), a, b.var("d", (3, 5)))
    assert b.call(Stack(0), a, a).type.shape == (2, 2, 3)
    assert b.call(Stack(-1), a, a).type.shape == (2, 3, 2)
    with pytest.raises(VerifyError, match="differs from input 0"):
        b.call(Stack(0), a, c)
    parts = b.call(Split(1, 3), b.var("q", (2, 9)))
    assert parts.type.fields == (TensorType((2, 3), DType.f32),) * 3
    with pytest.raises(VerifyError, match="not divisible by num_splits"):
        b.call(Split(1, 2), b.var("q", (2, 9)))
    assert b.call(TupleGetItem(2), parts).type.shape == (2, 3)
    with pytest.raises(VerifyError, match="out of range"):
        b.call(TupleGetItem(3), parts)


def test_ops_6_4_repeat_interleave_slice_insert(b):
    x = b.var("x", (1, 16, 2, 32), "bf16")
    assert b.call(RepeatInterleave(4, 2), x).type.shape == (1, 16, 8, 32)
    assert b.call(Slice((1, 4, 2, 32), (1, 1, 1, 1)), x, scalars(0, 0, 0, 0)).type.shape == (1, 4, 2, 32)
    with pytest.raises(VerifyError, match="outside extent 16"):
        b.call(Slice((1, 4, 2, 32), (1, 1, 1, 1)), x, scalars(0, 14, 0, 0))
    dst, upd = b.var("d", (64, 8)), b.var("u", (16, 8))
    assert b.call(InsertSlice(), dst, upd, scalars(24, 0)).type == dst.type
    with pytest.raises(VerifyError, match="outside dst extent 64"):
        b.call(InsertSlice(), dst, upd, scalars(56, 0))


def test_ops_6_4_index_ops_and_cache_update(b):
    t = b.var("t", (64, 8), "f16")
    assert b.call(IndexSelect(0), t, b.var("i", (3,), "i64")).type.shape == (3, 8)
    with pytest.raises(VerifyError, match="rank-1 i32/i64"):
        b.call(IndexSelect(0), t, b.var("i", (3,), "f32"))
    with pytest.raises(VerifyError, match="rank-1 i64"):
        b.call(IndexCopy(0), t, b.var("i", (2,), "i32"), b.var("s", (2, 8), "f16"))
    assert b.call(IndexCopy(0), t, b.var("i", (2,), "i64"), b.var("s", (2, 8), "f16")).type == t.type
    cache, new = b.var("c", (1, 256, 2, 32), "bf16"), b.var("n", (1, 8, 2, 32), "bf16")
    pos, s = b.var("p", (), "i32"), b.var("s", (), "i32")
    assert b.call(CacheUpdate(), cache, pos, s, new).type == cache.type
    with pytest.raises(VerifyError, match="i32 scalar"):
        b.call(CacheUpdate(), cache, b.var("p", (), "i64"), s, new)


def test_ops_6_4_generators_and_shape_values(b):
    t = TensorType((4, 8), DType.bf16, None, SK.RMEM)
    assert b.call(Zeros(t)).type == t
    assert b.call(Arange(TensorType((16,), DType.i64))).type.shape == (16,)
    with pytest.raises(VerifyError, match="positive int"):
        b.call(Arange(TensorType((16,), DType.i64), 0, 0))
    x = b.var("x", (4, 8))
    assert b.call(ShapeOf(), x).type == TensorType((2,), DType.i64, None, SK.UMAT)
    assert b.call(Rank(), x).type == TensorType((), DType.i64, None, SK.UMAT)


def test_ops_6_4_where_and_quant_and_mma_and_conv(b):
    cond = b.var("c", (4, 1), "bool")
    assert b.call(Where(), cond, b.var("x", (4, 8)), b.var("y", (8,))).type.shape == (4, 8)
    with pytest.raises(VerifyError, match=r"condition \(operand 0\) is f32; it must be bool"):
        b.call(Where(), b.var("c", (4,)), b.var("x", (4,)), b.var("y", (4,)))
    q = b.call(Quant(), b.var("x", (16, 512))).type
    assert q.fields[0].dtype == DType.fp8e4m3 and q.fields[1].shape == (16, 4)
    mma = Mma_SM80_16x8x16(DType.f16, DType.f16, DType.f32)
    assert b.call(mma, b.var("a", (16, 16), "f16"), b.var("w", (16, 8), "f16")).type.dtype == DType.f32
    with pytest.raises(VerifyError, match="not supported"):
        b.call(Mma_SM80_16x8x16(DType.f16, DType.f16, DType.bf16), b.var("a", (16, 16), "f16"),
               b.var("w", (16, 8), "f16"))
    conv = b.call(Conv2D((1, 1), (1, 1), (1, 1), 1), b.var("x", (1, 3, 8, 8)), b.var("w", (4, 3, 3, 3)),
                  b.var("bias", (4,)))
    assert conv.type.shape == (1, 4, 8, 8)


def test_ops_6_4_errors_name_op_and_location(b):
    with pytest.raises(VerifyError) as err:
        b.call(Reshape((5, 5)), b.var("x", (4, 6)), location="m.py:7:9", binding="r")
    assert str(err.value).startswith("m.py:7:9: Reshape: element count mismatch")
    assert str(err.value).endswith(" (value 'r')") and "\n" not in str(err.value)
    assert (err.value.location, err.value.value) == ("m.py:7:9", "r")
    assert err.value.reason.startswith("Reshape: element count mismatch")


def test_types_binary_dtype_mismatch_names_the_literal_written():
    """authoring §5.4: ints keep i64, so `f32_tensor + 1` is a dtype error whose
    remedy names the number written (and never claims it was f32)."""
    from tilefoundry.errors import VerifyError
    from tilefoundry.ir.expr import Constant, Var
    from tilefoundry.ir.tensor_type import TensorType
    from tilefoundry.ops import Binary, BinaryKind
    from tilefoundry.semantics.typeinfer import build_call

    x = Var("x", TensorType((4,), "f32"))
    one = Constant(1, TensorType((), "i64", None, "umat"))
    with pytest.raises(VerifyError) as info:
        build_call(Binary(BinaryKind.ADD), (x, one))
    assert "The number 1 you wrote (operand 1) is i64" in str(info.value)
    y = Var("y", TensorType((4,), "bf16"))
    with pytest.raises(VerifyError) as info:
        build_call(Binary(BinaryKind.ADD), (x, y))
    assert "you wrote" not in str(info.value) and "tf.cast one side" in str(info.value)
