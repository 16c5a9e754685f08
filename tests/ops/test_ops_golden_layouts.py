"""Golden layouts: small programs built directly in Python whose every derived
type must equal the type comment of ../shared/programs/expected/*.typed.py."""
from tilefoundry.ir.dim import DimVar
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.shard import B, Layout, Mesh, P, S, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ops import (
    Binary,
    BinaryKind as BK,
    Cast,
    Clamp,
    Concat,
    FullLike,
    LayerNorm,
    MatMul,
    Quant,
    Reduce,
    ReduceKind as RK,
    Reshape,
    Reshard,
    Tanh,
    Transpose,
    TupleGetItem,
    Unary,
    UnaryKind as UK,
    Where,
    Zeros,
)


def T(shape, dtype, layout=None, storage=SK.GMEM):
    return TensorType(shape, DType.from_name(dtype), layout, storage)


def test_golden_p01_rownorm(b):
    mesh = Mesh((Topology("cta", 8), Topology("thread", 128)), Layout((8, 4, 32), (128, 32, 1)),
                names=("row", "warp", "lane"))
    x = b.var("x", (8, 2048), "bf16")
    g = b.var("gain", (8, 2048), "bf16")
    lay = b.sl((8, 4, 32, 16), None, (S(0), S(1), S(2)), mesh)
    rm = b.sl((8, 4, 32, 16), (0, 0, 0, 1), (S(0), S(1), S(2)), mesh)
    v0 = b.call(Reshard(lay, SK.RMEM), x)
    assert v0.type == T((8, 2048), "bf16", rm, SK.RMEM)
    v1 = b.call(Cast(DType.f32), v0)
    assert v1.type == T((8, 2048), "f32", rm, SK.RMEM)
    v2 = b.call(Binary(BK.MUL), v1, v1)
    assert v2.type == v1.type
    v3 = b.call(Reduce((-1,), True, RK.SUM), v2)
    # companions §2.5: the kept reduced axis is one extent-1 position; the
    # reference prints (8 @ row, 1, 1, 1), which no canonical factorization gives
    red = b.sl((8, 1), (1, 0), (S(0), B(), B()), mesh)
    assert v3.type == T((8, 1), "f32", red, SK.RMEM)
    v4 = b.call(Binary(BK.MUL), v3, b.const(0.00048828125))
    v5 = b.call(Binary(BK.ADD), v4, b.const(1e-5))
    v6 = b.call(Unary(UK.RSQRT), v5)
    assert v4.type == v5.type == v6.type == v3.type
    v7 = b.call(Binary(BK.MUL), v1, v6)
    assert v7.type == v1.type
    v8 = b.call(Cast(DType.bf16), v7)
    v9 = b.call(Reshard(lay, SK.RMEM), g)
    v10 = b.call(Binary(BK.MUL), v8, v9)
    assert v10.type == T((8, 2048), "bf16", rm, SK.RMEM)
    v11 = b.call(Reshard(lay, SK.GMEM), v10)
    assert v11.type == T((8, 2048), "bf16", b.sl((8, 4, 32, 16), (2048, 512, 16, 1), (S(0), S(1), S(2)), mesh))


def test_golden_p03_tiled_gemm(b):
    mesh = Mesh((Topology("cta", 16),), Layout((4, 4), (4, 1)), names=("mt", "nt"))
    acc_t = T((512, 384), "f32", b.sl((4, 128, 4, 96), (49152, 384, 96, 1), (S(0), S(2)), mesh), SK.RMEM)
    acc = b.call(Zeros(acc_t))
    assert acc.type == acc_t
    a = b.var("a", (512, 64), "bf16")
    w = b.var("w", (64, 384), "bf16")
    v2 = b.call(Reshard(b.sl((4, 128, 64), None, (S(0), B()), mesh), SK.SMEM), a)
    assert v2.type == T((512, 64), "bf16", b.sl((4, 128, 64), (0, 64, 1), (S(0), B()), mesh), SK.SMEM)
    v5 = b.call(Reshard(b.sl((64, 4, 96), None, (B(), S(1)), mesh), SK.SMEM), w)
    assert v5.type == T((64, 384), "bf16", b.sl((64, 4, 96), (96, 0, 1), (B(), S(1)), mesh), SK.SMEM)
    v7 = b.call(MatMul(), b.call(Cast(DType.f32), v2), b.call(Cast(DType.f32), v5))
    assert v7.type == T((512, 384), "f32", b.sl((4, 128, 4, 96), (49152, 384, 96, 1), (S(0), S(2)), mesh), SK.SMEM)
    v8 = b.call(Reshard(b.sl((4, 128, 4, 96), None, (S(0), S(2)), mesh), SK.RMEM), v7)
    assert v8.type.layout.layout.strides == (0, 96, 0, 1)
    v9 = b.call(Binary(BK.ADD), acc, v8)  # operands disagree on strides: fresh C-order
    assert v9.type == acc_t


def test_golden_p04_split_k_partial(b):
    mesh = Mesh((Topology("cta", 8),), Layout((2, 4), (4, 1)), names=("mt", "ks"))
    a = b.var("a", (128, 1024))
    w = b.var("b", (1024, 64))
    v0 = b.call(Reshard(b.sl((2, 64, 4, 256), None, (S(0), S(2)), mesh), SK.SMEM), a)
    assert v0.type.layout.layout.strides == (0, 256, 0, 1)
    v1 = b.call(Reshard(b.sl((4, 256, 64), None, (B(), S(0)), mesh), SK.SMEM), w)
    assert v1.type.layout.layout.strides == (0, 64, 1)
    v2 = b.call(MatMul(), v0, v1)
    part = b.sl((2, 64, 64), (4096, 64, 1), (S(0), P("sum")), mesh)
    assert v2.type == T((128, 64), "f32", part, SK.SMEM)
    v3 = b.call(Binary(BK.MUL), v2, b.const(0.5))
    assert v3.type == v2.type
    v4 = b.call(Reshard(b.sl((2, 64, 64), None, (S(0), B()), mesh), SK.GMEM), v3)
    assert v4.type == T((128, 64), "f32", b.sl((2, 64, 64), (4096, 64, 1), (S(0), B()), mesh))
    v5 = b.call(Reduce((-1,), True, RK.SUM), v3)
    assert v5.type == T((128, 1), "f32", b.sl((2, 64, 1), (64, 1, 0), (S(0), P("sum")), mesh), SK.SMEM)
    v6 = b.call(Reshard(b.sl((2, 64, 1), None, (S(0), B()), mesh), SK.GMEM), v5)
    assert v6.type == T((128, 1), "f32", b.sl((2, 64, 1), (64, 1, 1), (S(0), B()), mesh))


def test_golden_p05_gqa_fragments(b):
    mesh = Mesh((Topology("cta", 2),), Layout((2,), (1,)), names=("kvh",))
    q = b.var("q", (1, 2, 8, 64))
    v5 = b.call(Reshard(b.sl((1, 2, 8, 64), None, (S(1),), mesh), SK.SMEM), q)
    v6 = b.call(Binary(BK.MUL), v5, b.const(0.125))
    smem = b.sl((1, 2, 8, 64), (0, 0, 64, 1), (S(1),), mesh)
    assert v6.type == T((1, 2, 8, 64), "f32", smem, SK.SMEM)
    v7 = b.call(Reduce((-1,), True, RK.MAX), v6)
    row = b.sl((1, 2, 8, 1), (0, 8, 1, 0), (S(1),), mesh)
    assert v7.type == T((1, 2, 8, 1), "f32", row, SK.SMEM)
    run_max = b.call(FullLike(-1e30), v7)
    assert run_max.type == v7.type
    k = b.var("k", (1, 128, 2, 64), "bf16")
    v12 = b.call(Reshard(b.sl((1, 128, 2, 64), None, (S(2),), mesh), SK.SMEM), k)
    assert v12.type.layout.layout.strides == (0, 64, 0, 1)
    v14 = b.call(Transpose((0, 2, 3, 1)), b.call(Cast(DType.f32), v12))
    assert v14.type == T((1, 2, 64, 128), "f32", b.sl((1, 2, 64, 128), (0, 0, 1, 64), (S(1),), mesh), SK.SMEM)
    v15 = b.call(MatMul(), v6, v14)
    fresh = b.sl((1, 2, 8, 128), (2048, 1024, 128, 1), (S(1),), mesh)
    assert v15.type == T((1, 2, 8, 128), "f32", fresh, SK.SMEM)
    v17 = b.call(Binary(BK.MAX), run_max, b.call(Reduce((-1,), True, RK.MAX), v15))
    assert v17.type == v7.type
    v21 = b.call(Binary(BK.SUB), v15, v17)  # one equal-shape operand: its strides
    assert v21.type == v15.type
    v19 = b.call(Unary(UK.EXP), b.call(Binary(BK.SUB), run_max, v17))
    v25 = b.call(Binary(BK.MUL), b.call(FullLike(0.0), v6), v19)
    assert v25.type == v6.type
    v36 = b.call(Reshard(b.sl((1, 2, 1, 64), None, (S(1),), mesh), SK.SMEM), b.var("kn", (1, 2, 1, 64)))
    assert v36.type.layout.layout.strides == (0, 0, 0, 1)
    v48 = b.call(Binary(BK.MUL), v19, v36)  # no operand has the result shape: fresh C-order
    c_order = b.sl((1, 2, 8, 64), (1024, 512, 64, 1), (S(1),), mesh)
    assert v48.type == T((1, 2, 8, 64), "f32", c_order, SK.SMEM)
    v49 = b.call(Binary(BK.ADD), v25, v48)  # operands disagree: fresh C-order
    assert v49.type == T((1, 2, 8, 64), "f32", c_order, SK.SMEM)
    v54 = b.call(Reshape((1, 1, 16, 64)), v49)
    assert v54.type == T((1, 1, 16, 64), "f32", b.sl((1, 1, 2, 8, 64), (0, 0, 512, 64, 1), (S(2),), mesh), SK.SMEM)
    v56 = b.call(Reshard(b.sl((1, 1, 2, 8, 64), None, (S(2),), mesh), SK.GMEM), b.call(Cast(DType.bf16), v54))
    assert v56.type == T((1, 1, 16, 64), "bf16", b.sl((1, 1, 2, 8, 64), (1024, 1024, 512, 64, 1), (S(2),), mesh))


def test_golden_p09_where_and_reduce(b):
    mesh = Mesh((Topology("cta", 8),), Layout((8,), (1,)), names=("r",))
    scores = b.var("scores", (32, 1024))
    lengths = b.var("lengths", (32, 1), "i64")
    iota = b.var("iota", (1024,), "i64")
    mask = b.call(Binary(BK.LT), iota, lengths)
    assert mask.type == T((32, 1024), "bool")
    v8 = b.call(Reshard(b.sl((8, 4, 1024), None, (S(0),), mesh), SK.GMEM), scores)
    lay = b.sl((8, 4, 1024), (4096, 1024, 1), (S(0),), mesh)
    assert v8.type == T((32, 1024), "f32", lay)
    v10 = b.call(Where(), mask, v8, b.call(FullLike(-30000.0), v8))
    assert v10.type == v8.type
    v11 = b.call(Reduce((-1,), True, RK.MAX), v10)
    assert v11.type == T((32, 1), "f32", b.sl((8, 4, 1), (4, 1, 0), (S(0),), mesh))
    v12 = b.call(Binary(BK.SUB), v10, v11)
    assert v12.type == v8.type


def test_golden_p10_quant_reshape(b):
    mesh = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("t",))
    x = b.var("x", (16, 512), "f16")
    v1 = b.call(Reshard(b.sl((4, 4, 512), None, (S(0),), mesh), SK.GMEM), x)
    v2 = b.call(Cast(DType.f32), v1)
    v3 = b.call(Quant(), v2)
    q_t = T((16, 512), "fp8e4m3", b.sl((4, 4, 512), (2048, 512, 1), (S(0),), mesh))
    s_t = T((16, 4), "f32", b.sl((4, 4, 4), (16, 4, 1), (S(0),), mesh))
    assert v3.type == TupleType((q_t, s_t))
    v6 = b.call(Reshape((16, 4, 128)), b.call(Cast(DType.f32), b.call(TupleGetItem(0), v3)))
    assert v6.type == T((16, 4, 128), "f32", b.sl((4, 4, 4, 128), (2048, 512, 128, 1), (S(0),), mesh))
    v8 = b.call(Reshape((16, 4, 1)), b.call(TupleGetItem(1), v3))
    assert v8.type == T((16, 4, 1), "f32", b.sl((4, 4, 4, 1), (16, 4, 1, 0), (S(0),), mesh))
    v9 = b.call(Binary(BK.MUL), v6, v8)
    assert v9.type == v6.type
    v10 = b.call(Reshape((16, 512)), v9)
    assert v10.type == T((16, 512), "f32", v6.type.layout)
    w = b.var("w", (512, 256), "f16")
    v15 = b.call(MatMul(), b.call(Cast(DType.f16), v10), w)
    assert v15.type == T((16, 256), "f16", b.sl((4, 4, 256), (1024, 256, 1), (S(0),), mesh))
    v18 = b.call(Clamp(-448.0, 448.0), b.call(Cast(DType.f32), v15))
    assert v18.type.layout == v15.type.layout


def test_golden_p11_concat(b):
    mesh = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("d",))
    t = T((1, 1024), "f32", b.sl((1, 4, 256), (1024, 256, 1), (S(1),), mesh))
    total = b.call(Zeros(t))
    peak = b.call(FullLike(-3e38), total)
    v11 = b.call(Concat(0), total, peak)
    assert v11.type == T((2, 1024), "f32", b.sl((2, 4, 256), (1024, 256, 1), (S(1),), mesh))


def test_golden_p13_layernorm_multilevel(b):
    mesh = Mesh((Topology("cta", 4), Topology("thread", 128)), Layout((4, 4, 32), (128, 32, 1)),
                names=("blk", "w", "l"))
    lay = b.sl((4, 4, 32, 1, 128), None, (S(0), S(1), S(2)), mesh)
    x = b.call(Reshard(lay, SK.RMEM), b.var("x", (512, 128), "bf16"))
    r = b.call(Reshard(lay, SK.RMEM), b.var("r", (512, 128), "bf16"))
    rm = b.sl((4, 4, 32, 1, 128), (0, 0, 0, 0, 1), (S(0), S(1), S(2)), mesh)
    summed = b.call(Binary(BK.ADD), x, r)
    assert summed.type == T((512, 128), "bf16", rm, SK.RMEM)
    normed = b.call(LayerNorm(-1, 1e-5), b.call(Cast(DType.f32), summed), b.var("g", (128,)), b.var("be", (128,)))
    assert normed.type == T((512, 128), "f32", rm, SK.RMEM)


def test_golden_p14_matmul_bias_tanh(b):
    mesh = Mesh((Topology("core", 4),), Layout((4,), (1,)), names=("p",))
    rows = b.call(Reshard(b.sl((4, 64, 128), None, (S(0),), mesh), SK.GMEM), b.var("x", (256, 128)))
    y = b.call(Binary(BK.ADD), b.call(MatMul(), rows, b.var("w", (128, 96))), b.var("bias", (96,)))
    out = b.call(Tanh(), y)
    assert out.type == T((256, 96), "f32", b.sl((4, 64, 96), (6144, 96, 1), (S(0),), mesh))


def test_golden_p16_fully_broadcast_matmul_carries_no_layout(b):
    """Spec §3.2 (README 'reference behaviour that looks wrong' #2): a fully
    Broadcast input carries no sharding, so the matmul result carries none; the
    reference copied the lhs layout across a shape change."""
    mesh = Mesh((Topology("cta", 6),), Layout((6,), (1,)), names=("u",))
    a = b.call(Reshard(b.sl((64, 128), None, (B(),), mesh), SK.GMEM), b.var("a", (64, 128)))
    w = b.call(Reshard(b.sl((128, 32), None, (B(),), mesh), SK.GMEM), b.var("b", (128, 32)))
    assert a.type.layout == b.sl((64, 128), (128, 1), (B(),), mesh)
    out = b.call(MatMul(), a, w)
    assert out.type == T((64, 32), "f32")


def test_golden_p12_symbolic_width_strides(b):
    width = DimVar("width", 16, 2049)
    mesh = Mesh((Topology("cta", 2),), Layout((2,), (1,)), names=("r",))
    v0 = b.call(Reshard(b.sl((2, 32, width), None, (S(0),), mesh), SK.SMEM), b.var("a", (64, width)))
    assert v0.type.layout.layout.strides == (0, width, 1)
    v2 = b.call(Binary(BK.MUL), v0, v0)
    assert v2.type == v0.type
