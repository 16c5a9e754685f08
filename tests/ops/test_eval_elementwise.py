"""Evaluators of the elementwise ops (ops/math.py) and the dim ops (ops/dims.py).

Each test calls the registered evaluator directly, rounds its value to the
result's dtype as the runner does, and checks values derived by hand (the
derivation is in the docstring or beside the case).
"""
import numpy as np
import pytest

from tilefoundry.errors import EvaluationError
from tilefoundry.semantics.op_numerics import dtype_name
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.tensor_type import TensorType, umat_scalar
from tilefoundry.ops.dims import (
    DIM_OPS,
    DimAdd,
    DimFloorDiv,
    DimMax,
    DimMin,
    DimMod,
    DimMul,
    DimSub,
)
from tilefoundry.ops.math import (
    Binary,
    BinaryKind,
    Clamp,
    Gelu,
    ReLU,
    Sigmoid,
    Silu,
    Softplus,
    Tanh,
    Unary,
    UnaryKind,
    Where,
)
from tilefoundry.semantics.op_numerics import EvalContext, numpy_dtype, to_dtype
from tilefoundry.semantics.op_registry import EVALUATORS, GLOBAL_COORDINATE_OPS

F32_ULP_AT_1 = 2.0 ** -23


def arr(values, dtype: str):
    """``values`` in the numpy form of ``dtype`` (as the runner hands operands over)."""
    return np.asarray(values, dtype=numpy_dtype(DType.from_name(dtype)))


def evaluate(op, args, result_type):
    """The op's evaluator on ``args``, rounded to ``result_type`` as the runner does."""
    arg_types = tuple(TensorType(np.shape(a), _dtype_name(a)) for a in args)
    ctx = EvalContext(op, arg_types, result_type)
    value = EVALUATORS[type(op)](op, tuple(args), ctx)
    return to_dtype(value, ctx.result_type.dtype)


def _dtype_name(array) -> str:
    return dtype_name(np.asarray(array).dtype)


def same(got, want, dtype: str):
    """Exact equality in the result dtype, NaN equal to NaN, shapes and dtype checked."""
    want = arr(want, dtype)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind not in "iub":  # compare floats (bf16 included) as f64, exactly
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- Binary

# kind -> (operand dtype, lhs, rhs, result dtype, expected); derivation beside each
BINARY_CASES = {
    BinaryKind.ADD: ("f32", [1.5, -2.0], [0.25, 2.0], "f32", [1.75, 0.0]),  # 1.5+.25, -2+2
    BinaryKind.SUB: ("i32", [5, -3], [7, -3], "i32", [-2, 0]),  # 5-7, -3-(-3)
    BinaryKind.MUL: ("f32", [1.5, -2.0], [4.0, 0.5], "f32", [6.0, -1.0]),
    BinaryKind.DIV: ("f32", [1.0, -3.0], [4.0, 2.0], "f32", [0.25, -1.5]),
    # floor(-7/2) = floor(-3.5) = -4, floor(7/2) = 3, floor(7/-2) = -4, floor(-7/-2) = 3
    BinaryKind.FLOOR_DIV: ("i32", [-7, 7, 7, -7], [2, 2, -2, -2], "i32", [-4, 3, -4, 3]),
    # a - b*floor(a/b): -7 - 2*(-4) = 1, 7 - 2*3 = 1, 7 - (-2)(-4) = -1, -7 - (-2)(3) = -1
    BinaryKind.MOD: ("i32", [-7, 7, 7, -7], [2, 2, -2, -2], "i32", [1, 1, -1, -1]),
    BinaryKind.MIN: ("f32", [1.0, -2.0], [0.0, 3.0], "f32", [0.0, -2.0]),
    BinaryKind.MAX: ("i64", [1, -2], [0, 3], "i64", [1, 3]),
    BinaryKind.EQ: ("f32", [1.0, 2.0], [1.0, 3.0], "bool", [True, False]),
    BinaryKind.NE: ("f32", [1.0, 2.0], [1.0, 3.0], "bool", [False, True]),
    BinaryKind.LT: ("i32", [1, 2, 3], [2, 2, 2], "bool", [True, False, False]),
    BinaryKind.LE: ("i32", [1, 2, 3], [2, 2, 2], "bool", [True, True, False]),
    BinaryKind.GT: ("i32", [1, 2, 3], [2, 2, 2], "bool", [False, False, True]),
    BinaryKind.GE: ("i32", [1, 2, 3], [2, 2, 2], "bool", [False, True, True]),
    BinaryKind.AND: ("bool", [True, True, False, False], [True, False, True, False], "bool",
                     [True, False, False, False]),
    BinaryKind.OR: ("bool", [True, True, False, False], [True, False, True, False], "bool",
                    [True, True, True, False]),
}


@pytest.mark.parametrize("kind", list(BinaryKind), ids=str)
def test_binary_every_kind(kind):
    """Every BinaryKind member has a hand-derived case (a new member without one fails
    here with a KeyError); comparisons and logical kinds give bool."""
    dtype, lhs, rhs, result_dtype, want = BINARY_CASES[kind]
    got = evaluate(Binary(kind), (arr(lhs, dtype), arr(rhs, dtype)),
                   TensorType((len(want),), result_dtype))
    same(got, want, result_dtype)


def test_binary_int_div_truncates_toward_zero():
    """Integer div is C's: -7/2 = -3.5 -> -3, 7/2 -> 3, 7/-2 -> -3, -7/-2 -> 3 (floor_div
    would give -4 and -4 for the mixed signs); 6/3 = 2 exactly."""
    got = evaluate(Binary(BinaryKind.DIV), (arr([-7, 7, 7, -7, 6], "i32"), arr([2, 2, -2, -2, 3], "i32")),
                   TensorType((5,), "i32"))
    same(got, [-3, 3, -3, 3, 2], "i32")


@pytest.mark.parametrize("kind", [BinaryKind.DIV, BinaryKind.FLOOR_DIV, BinaryKind.MOD], ids=str)
def test_binary_integer_division_by_zero_is_refused(kind):
    """An integer x/0 has no value (numpy would give 0 with a warning): refused."""
    with pytest.raises(EvaluationError, match="division by zero"):
        evaluate(Binary(kind), (arr([1, 2], "i64"), arr([1, 0], "i64")), TensorType((2,), "i64"))


def test_binary_float_division_by_zero_is_ieee():
    """f32: 1/0 = +inf, -1/0 = -inf, 0/0 = NaN (IEEE 754), no refusal."""
    got = evaluate(Binary(BinaryKind.DIV), (arr([1.0, -1.0, 0.0], "f32"), arr([0.0, 0.0, 0.0], "f32")),
                   TensorType((3,), "f32"))
    same(got, [np.inf, -np.inf, np.nan], "f32")


def test_binary_bf16_add_rounds_once_to_nearest_even():
    """bf16 has 7 fraction bits: its spacing at 1 is 2**-7.
    - 1 + 2**-8 is exactly halfway between 1 and 1 + 2**-7: ties to even -> 1.0;
    - 1 + 3*2**-9 = 1 + 0.75 * 2**-7 is past halfway -> 1 + 2**-7 = 1.0078125;
    - (1 + 2**-7) + 2**-8 is halfway between 1 + 2**-7 (odd last bit) and 1 + 2**-6
      (even) -> 1.015625."""
    lhs = arr([1.0, 1.0, 1.0078125], "bf16")
    rhs = arr([2.0 ** -8, 3 * 2.0 ** -9, 2.0 ** -8], "bf16")
    got = evaluate(Binary(BinaryKind.ADD), (lhs, rhs), TensorType((3,), "bf16"))
    same(got, [1.0, 1.0078125, 1.015625], "bf16")


def test_binary_broadcasts_right_aligned():
    """(2,1) * (3,) -> (2,3): [[1],[2]] * [1,2,3] = [[1,2,3],[2,4,6]]."""
    got = evaluate(Binary(BinaryKind.MUL), (arr([[1], [2]], "i32"), arr([1, 2, 3], "i32")),
                   TensorType((2, 3), "i32"))
    same(got, [[1, 2, 3], [2, 4, 6]], "i32")


def test_binary_integer_add_wraps_as_twos_complement():
    """i32: (2**31 - 1) + 1 wraps to -2**31."""
    got = evaluate(Binary(BinaryKind.ADD), (arr([2 ** 31 - 1], "i32"), arr([1], "i32")),
                   TensorType((1,), "i32"))
    same(got, [-2 ** 31], "i32")


def test_binary_rank0_operands():
    """Rank-0 operands give a rank-0 result: 7 - 10 = -3."""
    got = evaluate(Binary(BinaryKind.SUB), (arr(7, "i64"), arr(10, "i64")), TensorType((), "i64"))
    same(got, -3, "i64")


def test_binary_arithmetic_on_bool_is_refused():
    """typeinfer lets add of two bools through; numpy's answer (logical or) is no sum."""
    with pytest.raises(EvaluationError, match="bool"):
        evaluate(Binary(BinaryKind.ADD), (arr([True], "bool"), arr([True], "bool")),
                 TensorType((1,), "bool"))


# ---------------------------------------------------------------- Unary

NAN, INF = float("nan"), float("inf")
# kind -> (dtype, x, expected); None: the kind is refused
UNARY_CASES = {
    UnaryKind.NEG: ("f32", [1.5, -2.0], [-1.5, 2.0]),
    UnaryKind.ABS: ("i32", [-3, 4], [3, 4]),
    UnaryKind.RSQRT: ("f32", [4.0, 0.25], [0.5, 2.0]),  # 1/sqrt(4) = 1/2, 1/sqrt(1/4) = 2
    UnaryKind.CAST: None,  # no target dtype: typeinfer refuses it, so does the evaluator
    UnaryKind.NOT: ("bool", [True, False], [False, True]),
    UnaryKind.RELU: ("f32", [-1.0, 0.0, 2.0], [0.0, 0.0, 2.0]),
    UnaryKind.SQUARE: ("i32", [-3, 4], [9, 16]),
    UnaryKind.EXP: ("f32", [0.0, -INF], [1.0, 0.0]),  # e**0 = 1, e**-inf = 0
    UnaryKind.LOG: ("f32", [1.0, 0.0, -1.0], [0.0, -INF, NAN]),  # ln 1 = 0, ln 0 = -inf, ln(-1) NaN
    UnaryKind.CEIL: ("f32", [1.2, -1.2, 2.0], [2.0, -1.0, 2.0]),
    # half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0; 2.6 -> 3
    UnaryKind.ROUND: ("f32", [0.5, 1.5, 2.5, -0.5, 2.6], [0.0, 2.0, 2.0, -0.0, 3.0]),
    UnaryKind.EXP2: ("f32", [3.0, -1.0], [8.0, 0.5]),
    UnaryKind.LOG2: ("f32", [8.0, 0.5], [3.0, -1.0]),
}


@pytest.mark.parametrize("kind", list(UnaryKind), ids=str)
def test_unary_every_kind(kind):
    """Every UnaryKind member has a hand-derived case (KeyError for a new member)."""
    case = UNARY_CASES[kind]
    if case is None:
        with pytest.raises(EvaluationError, match="cast"):
            evaluate(Unary(kind), (arr([1.0], "f32"),), TensorType((1,), "f32"))
        return
    dtype, x, want = case
    got = evaluate(Unary(kind), (arr(x, dtype),), TensorType((len(want),), dtype))
    same(got, want, dtype)
    if kind == UnaryKind.ROUND:
        assert np.signbit(got[3])  # round(-0.5) is -0.0


def test_unary_exp_of_one_is_e_in_f32():
    """exp(1) = e = 2.718281828...; the f32 nearest is 2.7182817459106445."""
    got = evaluate(Unary(UnaryKind.EXP), (arr([1.0], "f32"),), TensorType((1,), "f32"))
    assert float(got[0]) == pytest.approx(2.718281828459045, abs=0, rel=F32_ULP_AT_1)


def test_unary_bf16_rsqrt_rounds_the_f32_value_once():
    """rsqrt(2) = 0.70710678 = 1.0110101|0000010... * 2**-1 in binary: bf16 keeps 7 fraction
    bits and the rest is below half an ulp, so 1.0110101b * 2**-1 = 181/256 = 0.70703125."""
    got = evaluate(Unary(UnaryKind.RSQRT), (arr([2.0], "bf16"),), TensorType((1,), "bf16"))
    same(got, [0.70703125], "bf16")


def test_unary_arithmetic_on_bool_is_refused():
    """typeinfer lets neg of a bool through; numpy has no bool negative either."""
    with pytest.raises(EvaluationError, match="bool"):
        evaluate(Unary(UnaryKind.NEG), (arr([True], "bool"),), TensorType((1,), "bool"))


# ---------------------------------------------------------------- Clamp


def test_clamp_float():
    """clamp to [-1, 1]: -3 -> -1, 0.5 stays, 3 -> 1; NaN stays NaN."""
    got = evaluate(Clamp(-1.0, 1.0), (arr([-3.0, 0.5, 3.0, NAN], "f32"),), TensorType((4,), "f32"))
    same(got, [-1.0, 0.5, 1.0, NAN], "f32")


def test_clamp_integer_uses_the_integers_inside_the_bounds():
    """ints clamped to [-1.5, 2.5] hold ceil(-1.5) = -1 .. floor(2.5) = 2: -7 -> -1, 0, 7 -> 2;
    infinite bounds clamp nothing."""
    got = evaluate(Clamp(-1.5, 2.5), (arr([-7, 0, 7], "i32"),), TensorType((3,), "i32"))
    same(got, [-1, 0, 2], "i32")
    got = evaluate(Clamp(-INF, INF), (arr([-7, 0, 7], "i32"),), TensorType((3,), "i32"))
    same(got, [-7, 0, 7], "i32")


def test_clamp_bf16_fp8_range():
    """clamp(-448, 448) (the fp8e4m3 range) of bf16 [-1000, 3, 1000] -> [-448, 3, 448]:
    448 = 1.75 * 2**8 is exact in bf16."""
    got = evaluate(Clamp(-448.0, 448.0), (arr([-1000.0, 3.0, 1000.0], "bf16"),), TensorType((3,), "bf16"))
    same(got, [-448.0, 3.0, 448.0], "bf16")


def test_clamp_nan_bound_is_refused():
    """typeinfer's min_val > max_val check is false for a NaN bound; the evaluator refuses it."""
    with pytest.raises(EvaluationError, match="NaN"):
        evaluate(Clamp(NAN, 1.0), (arr([0.0], "f32"),), TensorType((1,), "f32"))


# ---------------------------------------------------------------- activations


def test_softplus():
    """softplus(0) = ln 2 = 0.693147...; softplus(100) = 100 + ln(1 + e**-100) = 100 in f32
    (exp(100) itself would overflow f32); softplus(-20) = ln(1 + e**-20) ~ e**-20 = 2.0611536e-9."""
    got = evaluate(Softplus(), (arr([0.0, 100.0, -20.0], "f32"),), TensorType((3,), "f32"))
    assert float(got[0]) == pytest.approx(0.6931471805599453, abs=0, rel=F32_ULP_AT_1)
    assert float(got[1]) == 100.0
    assert float(got[2]) == pytest.approx(2.061153622438558e-09, abs=0, rel=1e-6)


def test_sigmoid():
    """sigmoid(0) = 1/(1+1) = 0.5; sigmoid(100) = 1 in f32; sigmoid(-100) = e**-100/(1 + e**-100)
    = 3.72e-44, a subnormal f32 (the form 1/(1+exp(100)) would overflow exp to inf and give 0)."""
    got = evaluate(Sigmoid(), (arr([0.0, 100.0, -100.0], "f32"),), TensorType((3,), "f32"))
    assert float(got[0]) == 0.5
    assert float(got[1]) == 1.0
    assert float(got[2]) == pytest.approx(3.720075976020836e-44, abs=0, rel=0.05)  # 26 subnormal steps


def test_silu():
    """silu(0) = 0; silu(1) = 1/(1 + e**-1) = 0.7310586; silu(-1) = -1/(1 + e) = -0.26894142."""
    got = evaluate(Silu(), (arr([0.0, 1.0, -1.0], "f32"),), TensorType((3,), "f32"))
    assert float(got[0]) == 0.0
    assert float(got[1]) == pytest.approx(0.7310585786300049, abs=0, rel=2 * F32_ULP_AT_1)
    assert float(got[2]) == pytest.approx(-0.2689414213699951, abs=0, rel=2 * F32_ULP_AT_1)


def test_tanh():
    """tanh(0) = 0; tanh(0.5) = (e - 1)/(e + 1) = 0.46211716; tanh(+-20) = +-1 in f32
    (1 - tanh(20) ~ 8.5e-18 is far below half an f32 ulp at 1)."""
    got = evaluate(Tanh(), (arr([0.0, 0.5, 20.0, -20.0], "f32"),), TensorType((4,), "f32"))
    assert float(got[0]) == 0.0
    assert float(got[1]) == pytest.approx(0.46211715726000974, abs=0, rel=2 * F32_ULP_AT_1)
    assert float(got[2]) == 1.0 and float(got[3]) == -1.0


def test_relu():
    """max(x, 0): -1 -> 0, 0 -> 0, 2.5 stays; NaN stays NaN (as torch.relu)."""
    got = evaluate(ReLU(), (arr([-1.0, 0.0, 2.5, NAN], "f32"),), TensorType((4,), "f32"))
    same(got, [0.0, 0.0, 2.5, NAN], "f32")


def test_gelu_tanh_approximation():
    """gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) (1 + 0.044715))) = 0.5 (1 + tanh(0.83356197))
    = 0.5 (1 + 0.68238398) = 0.8411920; gelu_tanh(-1) = -0.5 (1 + tanh(-0.83356197)) = -0.1588080;
    gelu(0) = 0."""
    got = evaluate(Gelu("tanh"), (arr([1.0, -1.0, 0.0], "f32"),), TensorType((3,), "f32"))
    assert float(got[0]) == pytest.approx(0.8411919906082768, abs=0, rel=4 * F32_ULP_AT_1)
    assert float(got[1]) == pytest.approx(-0.15880800939172324, abs=0, rel=16 * F32_ULP_AT_1)
    assert float(got[2]) == 0.0


def test_gelu_exact():
    """gelu(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.5 (1 + 0.68268949) = 0.8413447;
    gelu(-1) = -0.5 (1 - 0.68268949) = -0.15865525 (the tanh form differs in the 4th digit)."""
    got = evaluate(Gelu("none"), (arr([1.0, -1.0, 0.0], "f32"),), TensorType((3,), "f32"))
    assert float(got[0]) == pytest.approx(0.8413447460685429, abs=0, rel=4 * F32_ULP_AT_1)
    assert float(got[1]) == pytest.approx(-0.15865525393145707, abs=0, rel=16 * F32_ULP_AT_1)
    assert float(got[2]) == 0.0


def test_gelu_bf16_rounds_once():
    """bf16 gelu_tanh(1) = 0.84119 = 1.1010111|01011... * 2**-1: the bits after the 7th fraction
    bit are below half an ulp, so bf16 1.1010111b * 2**-1 = 215/256 = 0.83984375."""
    got = evaluate(Gelu("tanh"), (arr([1.0], "bf16"),), TensorType((1,), "bf16"))
    same(got, [0.83984375], "bf16")


def test_gelu_unknown_form_is_refused():
    """typeinfer stores any string; only "tanh" and "none" have a meaning."""
    with pytest.raises(EvaluationError, match="approximate"):
        evaluate(Gelu("erf"), (arr([1.0], "f32"),), TensorType((1,), "f32"))


# ---------------------------------------------------------------- Where


def test_where_selects_and_broadcasts():
    """condition (2,1) [[T],[F]], input (3,) [1,2,3], other rank-0 0 -> (2,3):
    row 0 takes input, row 1 takes other."""
    got = evaluate(Where(), (arr([[True], [False]], "bool"), arr([1.5, 2.5, 3.5], "bf16"), arr(0.0, "bf16")),
                   TensorType((2, 3), "bf16"))
    same(got, [[1.5, 2.5, 3.5], [0.0, 0.0, 0.0]], "bf16")


def test_elementwise_ops_run_on_boxes():
    """None of these reads global coordinates."""
    for cls in (Binary, Unary, Clamp, Softplus, Silu, Sigmoid, Tanh, ReLU, Gelu, Where, *DIM_OPS):
        assert cls in EVALUATORS
        assert cls not in GLOBAL_COORDINATE_OPS


# ---------------------------------------------------------------- dim ops

# op class -> (lhs, rhs, expected)
DIM_CASES = {
    DimAdd: (3, 4, 7),
    DimSub: (3, 4, -1),
    DimMul: (-3, 4, -12),
    DimFloorDiv: (-7, 2, -4),  # floor(-3.5) = -4
    DimMod: (-7, 2, 1),  # -7 - 2 * (-4) = 1
    DimMin: (3, -4, -4),
    DimMax: (3, -4, 3),
}


@pytest.mark.parametrize("cls", DIM_OPS, ids=lambda c: c.__name__)
def test_dim_ops(cls):
    """Integer arithmetic on rank-0 i64 values, floor division and mod as Python's."""
    lhs, rhs, want = DIM_CASES[cls]
    got = evaluate(cls(), (arr(lhs, "i64"), arr(rhs, "i64")), umat_scalar(DType.i64))
    same(got, want, "i64")


def test_dim_floor_div_and_mod_with_a_negative_divisor():
    """7 // -2 = floor(-3.5) = -4; 7 % -2 = 7 - (-2)(-4) = -1 (the divisor's sign)."""
    dim = umat_scalar(DType.i64)
    same(evaluate(DimFloorDiv(), (arr(7, "i64"), arr(-2, "i64")), dim), -4, "i64")
    same(evaluate(DimMod(), (arr(7, "i64"), arr(-2, "i64")), dim), -1, "i64")


def test_dim_division_by_zero_and_overflow_are_refused():
    """A dim is an extent or an index: x // 0 and 2**62 * 4 = 2**64 (past i64) are refused."""
    dim = umat_scalar(DType.i64)
    with pytest.raises(EvaluationError, match="division by zero"):
        evaluate(DimMod(), (arr(5, "i64"), arr(0, "i64")), dim)
    with pytest.raises(EvaluationError, match="outside i64"):
        evaluate(DimMul(), (arr(2 ** 62, "i64"), arr(4, "i64")), dim)
