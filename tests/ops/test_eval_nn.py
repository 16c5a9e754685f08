"""Evaluators of the neural-network ops (ops/nn.py) and the MMA tiles (ops/mma.py),
checked against hand-derived values.

Each test types its call through the real typeinfer (``build_call``), calls the
registered evaluator directly and rounds the value to the declared dtype once,
as the runner does.
"""
import math

import ml_dtypes
import numpy as np
import pytest

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Var
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ops import (
    Conv2D,
    LayerNorm,
    MatMul,
    Mma_SM80_16x8x16,
    Quant,
    RMSNorm,
    RoPE,
    SoftMax,
    Wgmma_SM90_64x128x16,
)
from tilefoundry.semantics.op_numerics import EvalContext, to_dtype
from tilefoundry.semantics.op_registry import EVALUATORS, GLOBAL_COORDINATE_OPS
from tilefoundry.semantics.typeinfer import build_call

BF16 = ml_dtypes.bfloat16


def run(op, *operands):
    """Type ``op`` over ``(value, dtype)`` operands by its typeinfer, evaluate it and
    round the result (each field of a tuple) to its declared dtype."""
    types = tuple(TensorType(np.shape(v), DType.from_name(d)) for v, d in operands)
    call = build_call(op, tuple(Var(f"a{i}", t) for i, t in enumerate(types)))
    ctx = EvalContext(op, types, call.type)
    args = tuple(to_dtype(np.asarray(v), t.dtype) for (v, _), t in zip(operands, types))
    value = EVALUATORS[type(op)](op, args, ctx)
    if isinstance(call.type, TupleType):
        assert isinstance(value, tuple) and len(value) == len(call.type.fields)
        return tuple(to_dtype(v, t.dtype) for v, t in zip(value, call.type.fields))
    return to_dtype(value, call.type.dtype)


# ---------------------------------------------------------------- MatMul


def test_matmul_two_by_two():
    """[[1,2],[3,4]] @ [[5,6],[7,8]] = [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]] = [[19,22],[43,50]]."""
    out = run(MatMul(), ([[1, 2], [3, 4]], "f32"), ([[5, 6], [7, 8]], "f32"))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[19, 22], [43, 50]])


def test_matmul_broadcasts_batch_axes():
    """lhs (2, 1, 2, 2) with lhs[i, 0] = (i + 1) * I; rhs (3, 2, 2) with rhs[j] = [[j, 1], [0, 2]].
    Batches broadcast right-aligned to (2, 3): out[i, j] = (i + 1) * rhs[j]."""
    lhs = np.array([[np.eye(2)], [2 * np.eye(2)]])
    rhs = np.array([[[j, 1], [0, 2]] for j in range(3)])
    out = run(MatMul(), (lhs, "f32"), (rhs, "f32"))
    assert out.shape == (2, 3, 2, 2)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(out[i, j], (i + 1) * np.array([[j, 1], [0, 2]]))


def test_matmul_bf16_accumulates_in_f32():
    """[1, 2**-8 x 256] . ones(257): the exact sum is 1 + 256 * 2**-8 = 2 (exact in f32 and
    bf16). A bf16 running sum stays 1: 1 + 2**-8 is halfway between 1 and 1 + 2**-7 and
    rounds to the even 1, every time."""
    lhs = np.array([[1.0] + [2.0 ** -8] * 256])
    out = run(MatMul(), (lhs, "bf16"), (np.ones((257, 1)), "bf16"))
    assert out.dtype == BF16
    assert float(out[0, 0]) == 2.0


def test_matmul_integers_stay_exact():
    """i32: (2**24 + 1) * 1 + 1 * 2 = 16777219; in f32 2**24 + 1 rounds to 2**24 first and the
    sum would be 16777218."""
    out = run(MatMul(), ([[2 ** 24 + 1, 1]], "i32"), ([[1], [2]], "i32"))
    assert out.dtype == np.int32 and int(out[0, 0]) == 16777219


# ---------------------------------------------------------------- norms, softmax


def test_rms_norm_by_hand():
    """rms([3, 4]) = sqrt((9 + 16) / 2) = sqrt(12.5): row 0 (w = 1, eps = 0) = [3, 4] / sqrt(12.5);
    row 1 = [1, 1] has rms 1, so with w = [2, 0.5] it is [2, 0.5]."""
    out = run(RMSNorm(eps=0.0), ([[3.0, 4.0], [1.0, 1.0]], "f32"), ([1.0, 1.0], "f32"))
    np.testing.assert_allclose(out[0], [3 / math.sqrt(12.5), 4 / math.sqrt(12.5)], rtol=1e-6)
    out = run(RMSNorm(eps=0.0), ([[1.0, 1.0]], "f32"), ([2.0, 0.5], "f32"))
    np.testing.assert_allclose(out[0], [2.0, 0.5], rtol=1e-6)


def test_rms_norm_eps_inside_the_root():
    """eps = 3: x = [1, 1] -> [1, 1] / sqrt(1 + 3) = [0.5, 0.5]; x = [0, 0] -> 0 / sqrt(0 + 3) = 0
    (no division by zero)."""
    out = run(RMSNorm(eps=3.0), ([[1.0, 1.0], [0.0, 0.0]], "f32"), ([1.0, 1.0], "f32"))
    np.testing.assert_allclose(out, [[0.5, 0.5], [0.0, 0.0]], rtol=1e-6)


def test_layer_norm_over_a_two_axis_suffix():
    """x (1, 2, 2) = [[1, 2], [3, 4]], axis 1: mean 2.5, biased var (2.25 + .25 + .25 + 2.25) / 4
    = 1.25; (x - 2.5) / sqrt(1.25) * 2 + 1 with weight 2 and bias 1 everywhere."""
    x = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    out = run(LayerNorm(axis=1, eps=0.0), (x, "f32"), (np.full((2, 2), 2.0), "f32"),
              (np.ones((2, 2)), "f32"))
    want = (np.array([[-1.5, -0.5], [0.5, 1.5]]) / math.sqrt(1.25)) * 2 + 1
    np.testing.assert_allclose(out[0], want, rtol=1e-6)


def test_layer_norm_last_axis_rows_apart():
    """axis -1 on (2, 2): row [0, 2] -> mean 1, var 1 -> [-1, 1]; row [5, 5] -> var 0, so
    0 / sqrt(0 + 1e-12) = [0, 0]."""
    out = run(LayerNorm(axis=-1, eps=1e-12), ([[0.0, 2.0], [5.0, 5.0]], "f32"), ([1.0, 1.0], "f32"),
              ([0.0, 0.0], "f32"))
    np.testing.assert_allclose(out, [[-1.0, 1.0], [0.0, 0.0]], atol=1e-5)


def test_softmax_by_hand():
    """softmax([0, ln 3]) = [1, 3] / (1 + 3) = [0.25, 0.75]."""
    out = run(SoftMax(axis=-1), ([[0.0, math.log(3.0)]], "f32"))
    np.testing.assert_allclose(out, [[0.25, 0.75]], rtol=1e-6)


def test_softmax_subtracts_the_max_first():
    """[1000, 1000 + ln 3] is the same softmax [0.25, 0.75]; exp(1000) alone overflows f32."""
    out = run(SoftMax(axis=-1), ([[1000.0, 1000.0 + math.log(3.0)]], "f32"))
    np.testing.assert_allclose(out, [[0.25, 0.75]], rtol=1e-3)


def test_softmax_along_axis_zero():
    """axis 0 of [[0, 0], [ln 3, 0]]: column 0 -> [0.25, 0.75], column 1 -> [0.5, 0.5]."""
    out = run(SoftMax(axis=0), ([[0.0, 0.0], [math.log(3.0), 0.0]], "f32"))
    np.testing.assert_allclose(out, [[0.25, 0.5], [0.75, 0.5]], rtol=1e-6)


# ---------------------------------------------------------------- RoPE


def _tables():
    """Rows [positions, head_dim 4] in the rotate-half form cos[p] = [cos a0, cos a1, cos a0, cos a1]:
    row 0 angles (0, 0): identity; row 1 angles (pi/2, 0); row 2 angles (pi, pi)."""
    cos = np.array([[1, 1, 1, 1], [0, 1, 0, 1], [-1, -1, -1, -1]], float)
    sin = np.array([[0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]], float)
    return cos, sin


def test_rope_rotate_half_by_hand():
    """q = [1, 2, 3, 4] at pos 1: x1 = [1, 2], x2 = [3, 4], rotate_half = [-3, -4, 1, 2];
    x * cos[1] + rotate_half * sin[1] = [0 - 3, 2 - 0, 0 + 1, 4 + 0] = [-3, 2, 1, 4]: the pair
    (d, d + 2) = (1, 3) turned by pi/2 to (-3, 1), the pair (2, 4) by 0 (an interleaved
    convention would pair (d, d + 1) instead). Token 1 at pos 2 turns by pi: -x. k has one
    head (GQA) and the same positions."""
    cos, sin = _tables()
    q = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]], [[1, 2, 3, 4], [1, 0, 0, 0]]]], float)  # (1, 2, 2, 4)
    k = np.array([[[[1, 0, 0, 0]], [[0, 0, 2, 0]]]], float)  # (1, 2, 1, 4)
    q_r, k_r = run(RoPE(), (q, "f32"), (k, "f32"), (cos, "f32"), (sin, "f32"), ([1, 2], "i32"))
    np.testing.assert_array_equal(q_r[0, 0, 0], [-3, 2, 1, 4])
    np.testing.assert_array_equal(q_r[0, 0, 1], [-7, 6, 5, 8])  # (5, 7) -> (-7, 5); (6, 8) kept
    np.testing.assert_array_equal(q_r[0, 1], -q[0, 1])
    np.testing.assert_array_equal(k_r[0, 0, 0], [0, 0, 1, 0])  # (1, 0) turned by pi/2 -> (0, 1)
    np.testing.assert_array_equal(k_r[0, 1, 0], [0, 0, -2, 0])


def test_rope_refuses_a_position_past_the_table():
    """pos_ids = [1, 3] against a 3-row table: 3 is outside [0, 3)."""
    cos, sin = _tables()
    q = np.zeros((1, 2, 1, 4))
    with pytest.raises(EvaluationError, match=r"pos_ids holds 3, outside the valid range \[0, 3\)"):
        run(RoPE(), (q, "f32"), (q, "f32"), (cos, "f32"), (sin, "f32"), ([1, 3], "i32"))
    with pytest.raises(EvaluationError, match=r"pos_ids holds -1, outside the valid range \[0, 3\)"):
        run(RoPE(), (q, "f32"), (q, "f32"), (cos, "f32"), (sin, "f32"), ([-1, 0], "i32"))


# ---------------------------------------------------------------- Conv2D


def _conv(x, w, b, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    op = Conv2D(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return run(op, (x, "f32"), (w, "f32"), (b, "f32"))


X33 = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)  # [[1,2,3],[4,5,6],[7,8,9]]


def test_conv2d_window_sums_plus_bias():
    """ones 2x2 kernel over [[1,2,3],[4,5,6],[7,8,9]]: window sums [[1+2+4+5, 2+3+5+6],
    [4+5+7+8, 5+6+8+9]] = [[12, 16], [24, 28]], plus bias 10."""
    out = _conv(X33, np.ones((1, 1, 2, 2)), [10.0])
    np.testing.assert_array_equal(out[0, 0], [[22, 26], [34, 38]])


def test_conv2d_is_a_cross_correlation():
    """kernel [[1, 0], [0, 0]] picks each window's top-left element (no flip): x[:2, :2]."""
    out = _conv(X33, np.array([[[[1.0, 0.0], [0.0, 0.0]]]]), [0.0])
    np.testing.assert_array_equal(out[0, 0], [[1, 2], [4, 5]])


def test_conv2d_padding_stride_dilation():
    """padding 1, stride 2, ones 2x2: out extent floor((3 + 2 - 1 - 1) / 2) + 1 = 2; the
    windows of the zero-bordered 5x5 at rows/cols {0, 2}: [[0+0+0+1, 0+0+2+3], [0+4+0+7,
    5+6+8+9]] = [[1, 5], [11, 28]]. Dilation 2 (no padding): one output, 1 + 3 + 7 + 9 = 20."""
    out = _conv(X33, np.ones((1, 1, 2, 2)), [0.0], stride=(2, 2), padding=(1, 1))
    np.testing.assert_array_equal(out[0, 0], [[1, 5], [11, 28]])
    out = _conv(X33, np.ones((1, 1, 2, 2)), [0.0], dilation=(2, 2))
    np.testing.assert_array_equal(out, [[[[20]]]])


def test_conv2d_groups_keep_channels_apart():
    """groups 2, 1x1 kernels [2] and [3]: out channel 0 = 2 * in 0, channel 1 = 3 * in 1
    (no cross-channel terms); bias [1, -1]."""
    x = np.stack([X33[0, 0], 10 * X33[0, 0]])[None]
    out = _conv(x, np.array([[[[2.0]]], [[[3.0]]]]), [1.0, -1.0], groups=2)
    np.testing.assert_array_equal(out[0, 0], 2 * X33[0, 0] + 1)
    np.testing.assert_array_equal(out[0, 1], 30 * X33[0, 0] - 1)


# ---------------------------------------------------------------- Quant


def test_quant_fp8e4m3_per_group_scales_and_rounding():
    """group 4. Group [448, 17, -17, 0.3]: amax 448 -> scale 448 / 448 = 1; e4m3 has 3
    mantissa bits, so on [16, 32) the step is 2 and 17 is a tie that rounds to even 16;
    0.3 lies on [0.25, 0.5) with step 2**-5, between 0.28125 and 0.3125, nearer 0.3125.
    Group [224, 8.5, 0, -1]: scale 0.5; 8.5 / 0.5 = 17 -> 16, -1 / 0.5 = -2, 224 -> 448.
    An all-zero group takes scale 1e-10 / 448 and quantises to zeros."""
    x = np.array([[448.0, 17.0, -17.0, 0.3, 224.0, 8.5, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0]])
    q, scale = run(Quant(group=4), (x, "f32"))
    assert q.dtype == ml_dtypes.float8_e4m3fn and scale.dtype == np.float32
    assert scale.shape == (1, 3)
    np.testing.assert_allclose(scale[0], [1.0, 0.5, np.float32(1e-10) / np.float32(448)], rtol=1e-6)
    np.testing.assert_array_equal(q.astype(np.float32)[0],
                                  [448, 16, -16, 0.3125, 448, 16, 0, -2, 0, 0, 0, 0])


def test_quant_bf16_input():
    """bf16 x = [-3, 1.5], one group of 2: amax 3 -> scale 3 / 448; -3 / scale = -448 and
    1.5 / scale = 224 (both on the e4m3 grid: step 32 on [256, 512), 16 on [128, 256))."""
    q, scale = run(Quant(group=2), ([[-3.0, 1.5]], "bf16"))
    np.testing.assert_allclose(scale, [[3 / 448]], rtol=1e-6)
    np.testing.assert_array_equal(q.astype(np.float32), [[-448, 224]])


# ---------------------------------------------------------------- MMA tiles


def _mma(cls, a, b, dtype_a, dtype_acc, **layouts):
    op = cls(dtype_a=DType.from_name(dtype_a), dtype_b=DType.from_name(dtype_a),
             dtype_acc=DType.from_name(dtype_acc), **layouts)
    return run(op, (a, dtype_a), (b, dtype_a))


def test_mma_sm80_product_by_hand():
    """B = [I8; 0] (16 x 8): D = A @ B = A's first 8 columns; A[m, c] = m + 16 c."""
    a = np.add.outer(np.arange(16.0), 16 * np.arange(16.0))
    b = np.vstack([np.eye(8), np.zeros((8, 8))])
    for layouts in ({}, {"a_layout": "N", "b_layout": "T"}):
        d = _mma(Mma_SM80_16x8x16, a, b, "f16", "f32", **layouts)
        assert d.dtype == np.float32
        np.testing.assert_array_equal(d, a[:, :8])


def test_mma_sm80_accumulates_in_dtype_acc():
    """Row 0 of A = [1, 2**-8 x 15], B = ones: with an f32 accumulator 1 + 15 * 2**-8 =
    1.05859375 exactly; with a bf16 one each step 1 + 2**-8 ties between 1 and 1 + 2**-7 and
    rounds to the even 1, so D = 1. Likewise f16 with 2**-11 terms (half of f16's ulp at 1)."""
    b = np.ones((16, 8))
    a = np.zeros((16, 16))
    a[0] = [1.0] + [2.0 ** -8] * 15
    assert float(_mma(Mma_SM80_16x8x16, a, b, "bf16", "f32")[0, 0]) == 1.05859375
    assert float(_mma(Mma_SM80_16x8x16, a, b, "bf16", "bf16")[0, 0]) == 1.0
    a[0] = [1.0] + [2.0 ** -11] * 15
    assert float(_mma(Mma_SM80_16x8x16, a, b, "f16", "f32")[0, 0]) == 1 + 15 * 2.0 ** -11
    assert float(_mma(Mma_SM80_16x8x16, a, b, "f16", "f16")[0, 0]) == 1.0


def test_wgmma_sm90_product_by_hand():
    """A = ones (64, 16), B[k, n] = n: D[m, n] = sum_k n = 16 n."""
    b = np.tile(np.arange(128.0), (16, 1))
    d = _mma(Wgmma_SM90_64x128x16, np.ones((64, 16)), b, "bf16", "f32")
    assert d.shape == (64, 128)
    np.testing.assert_array_equal(d, np.tile(16 * np.arange(128.0), (64, 1)))


def test_global_coordinate_ops_are_marked():
    """Conv2D and the MMA tiles read global coordinates; the row-wise ops run on boxes."""
    assert {Conv2D, Mma_SM80_16x8x16, Wgmma_SM90_64x128x16} <= GLOBAL_COORDINATE_OPS
    assert not {MatMul, RMSNorm, LayerNorm, SoftMax, RoPE, Quant} & GLOBAL_COORDINATE_OPS
