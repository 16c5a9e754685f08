"""Evaluators of the tensor structure ops (ops/tensor.py) and the creation ops
(ops/creation.py).

Each test calls the registered evaluator directly, rounds its value to the
result's dtype as the runner does, and checks values derived by hand (the
derivation is in the docstring or beside the case).
"""
import subprocess
import sys

import numpy as np
import pytest

from tilefoundry.errors import EvaluationError
from tilefoundry.semantics.op_numerics import dtype_name
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.tensor_type import TensorType, TupleType, umat_scalar, umat_tensor
from tilefoundry.ops.creation import Arange, FullLike, Rank, ShapeOf, Zeros
from tilefoundry.ops.tensor import (
    ArgMax,
    Cast,
    Reduce,
    ReduceKind,
    Reshape,
    TopK,
    Transpose,
    TupleGetItem,
)
from tilefoundry.semantics.op_numerics import EvalContext, numpy_dtype, to_dtype
from tilefoundry.semantics.op_registry import EVALUATORS, GLOBAL_COORDINATE_OPS

NAN, INF = float("nan"), float("inf")


def arr(values, dtype: str):
    """``values`` in the numpy form of ``dtype`` (as the runner hands operands over)."""
    return np.asarray(values, dtype=numpy_dtype(DType.from_name(dtype)))


def _round(value, type_):
    if isinstance(type_, TupleType):
        assert isinstance(value, tuple) and len(value) == len(type_.fields)
        return tuple(_round(v, t) for v, t in zip(value, type_.fields))
    return to_dtype(value, type_.dtype)


def evaluate(op, args, result_type, arg_types=None):
    """The op's evaluator on ``args``, each result leaf rounded to its dtype as the runner does."""
    if arg_types is None:
        arg_types = tuple(TensorType(np.shape(a), _dtype_name(a)) for a in args)
    ctx = EvalContext(op, arg_types, result_type)
    return _round(EVALUATORS[type(op)](op, tuple(args), ctx), result_type)


def _dtype_name(array) -> str:
    return dtype_name(np.asarray(array).dtype)


def same(got, want, dtype: str):
    """Exact equality in ``dtype``, NaN equal to NaN, shape and dtype checked."""
    want = arr(want, dtype)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind not in "iub":
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- Reshape / Transpose


def test_reshape_row_major():
    """(2,3) [[0,1,2],[3,4,5]] read row-major into (3,2): [[0,1],[2,3],[4,5]]."""
    got = evaluate(Reshape((3, 2)), (arr([[0, 1, 2], [3, 4, 5]], "f32"),), TensorType((3, 2), "f32"))
    same(got, [[0, 1], [2, 3], [4, 5]], "f32")


def test_reshape_takes_the_result_types_shape_not_new_shape():
    """A participant holding half of a (4,2,3) -> (4,6) reshape has a (2,2,3) box and a (2,6)
    result type: 12 elements into (2,6) (new_shape (4,6) would need 24)."""
    x = arr(np.arange(12).reshape(2, 2, 3), "i32")
    got = evaluate(Reshape((4, 6)), (x,), TensorType((2, 6), "i32"))
    same(got, [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]], "i32")


def test_transpose():
    """perm (1,0) of [[1,2,3],[4,5,6]] is [[1,4],[2,5],[3,6]]; (-1,0) is the same perm.
    perm (2,0,1) of x = arange(24).reshape(2,3,4): out[k,i,j] = x[i,j,k], so
    out[3,1,2] = x[1,2,3] = 12 + 8 + 3 = 23 and the shape is (4,2,3)."""
    x = arr([[1, 2, 3], [4, 5, 6]], "bf16")
    for perm in ((1, 0), (-1, 0)):
        got = evaluate(Transpose(perm), (x,), TensorType((3, 2), "bf16"))
        same(got, [[1, 4], [2, 5], [3, 6]], "bf16")
    got = evaluate(Transpose((2, 0, 1)), (arr(np.arange(24).reshape(2, 3, 4), "i64"),),
                   TensorType((4, 2, 3), "i64"))
    assert got.shape == (4, 2, 3) and int(got[3, 1, 2]) == 23 and int(got[0, 1, 0]) == 12


# ---------------------------------------------------------------- Cast


def test_cast_float_to_int_truncates_toward_zero_and_saturates():
    """2.7 -> 2, -2.7 -> -2, +-0.5 -> 0 (toward zero, not floor); NaN -> 0; 1e10 and +inf -> 2**31-1,
    -1e10 and -inf -> -2**31 (saturated, as PTX cvt.rzi.sat)."""
    x = arr([2.7, -2.7, 0.5, -0.5, NAN, 1e10, -1e10, INF, -INF], "f32")
    got = evaluate(Cast(DType.i32), (x,), TensorType((9,), "i32"))
    same(got, [2, -2, 0, 0, 0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31], "i32")


def test_cast_float_to_i64_saturates_at_its_edges():
    """1e19 > 2**63 -> 2**63 - 1; -1e19 -> -2**63; -2**63 itself (exact in f32) stays -2**63;
    bf16 -3.5 -> -3."""
    got = evaluate(Cast(DType.i64), (arr([1e19, -1e19, -2.0 ** 63], "f32"),), TensorType((3,), "i64"))
    same(got, [2 ** 63 - 1, -2 ** 63, -2 ** 63], "i64")
    same(evaluate(Cast(DType.i64), (arr([-3.5], "bf16"),), TensorType((1,), "i64")), [-3], "i64")


def test_cast_to_bf16_rounds_once_to_nearest_even():
    """f32 -> bf16 (7 fraction bits, spacing 2**-7 at 1): 1 + 2**-8 is a tie -> 1.0 (even);
    1 + 3*2**-9 -> 1.0078125; 1 + 2**-8 + 2**-20 is just past the tie -> 1.0078125."""
    x = arr([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -9, 1 + 2.0 ** -8 + 2.0 ** -20], "f32")
    same(evaluate(Cast(DType.bf16), (x,), TensorType((3,), "bf16")), [1.0, 1.0078125, 1.0078125], "bf16")


def test_cast_int_to_float_rounds_once():
    """i32 -> f32: 2**24 + 1 is a tie between 2**24 and 2**24 + 2 -> 2**24 (even).
    i32 -> bf16 (8 significant bits): 257 ties between 256 and 258 -> 256 (even); 259 -> 260."""
    same(evaluate(Cast(DType.f32), (arr([2 ** 24 + 1], "i32"),), TensorType((1,), "f32")), [2 ** 24], "f32")
    same(evaluate(Cast(DType.bf16), (arr([257, 259], "i32"),), TensorType((2,), "bf16")), [256, 260], "bf16")


def test_cast_bf16_to_f32_is_exact():
    """Widening holds every bf16: 1.0078125 and -3.5 unchanged."""
    got = evaluate(Cast(DType.f32), (arr([1.0078125, -3.5], "bf16"),), TensorType((2,), "f32"))
    same(got, [1.0078125, -3.5], "f32")


def test_cast_to_bool_and_back_and_int_narrowing():
    """-> bool is x != 0: f32 [0, -0, 2.5, NaN] -> [F, F, T, T], i32 [0, 3] -> [F, T];
    bool -> f32 is 0/1; i64 -> i32 keeps the low 32 bits: 2**32 + 5 -> 5, 2**31 -> -2**31."""
    same(evaluate(Cast(DType.bool), (arr([0.0, -0.0, 2.5, NAN], "f32"),), TensorType((4,), "bool")),
         [False, False, True, True], "bool")
    same(evaluate(Cast(DType.bool), (arr([0, 3], "i32"),), TensorType((2,), "bool")), [False, True], "bool")
    same(evaluate(Cast(DType.f32), (arr([True, False], "bool"),), TensorType((2,), "f32")), [1.0, 0.0], "f32")
    same(evaluate(Cast(DType.i32), (arr([2 ** 32 + 5, 2 ** 31], "i64"),), TensorType((2,), "i32")),
         [5, -2 ** 31], "i32")


# ---------------------------------------------------------------- Reduce

# kind -> (x, axes, keepdim, expected)
REDUCE_CASES = {
    ReduceKind.MEAN: ([[1, 2, 3, 4]], (1,), True, [[2.5]]),  # (1+2+3+4)/4
    ReduceKind.SUM: ([[1, 2], [3, 4]], (0,), False, [4, 6]),  # 1+3, 2+4
    ReduceKind.ABS_MAX: ([[1, -5, 3], [-2, 4, 0]], (-1,), True, [[5], [4]]),  # max |x| per row
    ReduceKind.MAX: ([[1, -5, 3], [-2, 4, 0]], (-1,), False, [3, 4]),
}


@pytest.mark.parametrize("kind", list(ReduceKind), ids=str)
def test_reduce_every_kind(kind):
    """Every ReduceKind member has a hand-derived case (KeyError for a new member)."""
    x, axes, keepdim, want = REDUCE_CASES[kind]
    got = evaluate(Reduce(axes, keepdim, kind), (arr(x, "f32"),), TensorType(np.shape(want), "f32"))
    same(got, want, "f32")


def test_reduce_bf16_sum_accumulates_in_f32():
    """512 bf16 ones: bf16 accumulation stalls at 256 (256 + 1 = 257 ties to even 256: 8
    significant bits); f32 holds every partial sum, so the sum is 512, exact in bf16 (2**9)."""
    got = evaluate(Reduce((0,), False, ReduceKind.SUM), (arr(np.ones(512), "bf16"),), TensorType((), "bf16"))
    same(got, 512.0, "bf16")


def test_reduce_bf16_sum_rounds_once_at_the_end():
    """[1, 2**-8, 2**-8] in bf16: summed in f32 = 1 + 2**-7 = 1.0078125, exact in bf16; bf16
    accumulation would round 1 + 2**-8 (a tie) to 1 twice and give 1.0. [1, 2**-8]: f32 1.00390625
    is a bf16 tie -> 1.0 once rounded."""
    reduce = Reduce((-1,), False, ReduceKind.SUM)
    same(evaluate(reduce, (arr([1.0, 2.0 ** -8, 2.0 ** -8], "bf16"),), TensorType((), "bf16")),
         1.0078125, "bf16")
    same(evaluate(reduce, (arr([1.0, 2.0 ** -8], "bf16"),), TensorType((), "bf16")), 1.0, "bf16")


def test_reduce_bf16_mean():
    """mean of bf16 [1, 2, 2, 2] = 7/4 = 1.75 (exact); of [1, 1, 1, 1 + 2**-7] =
    (4 + 2**-7)/4 = 1 + 2**-9 -> bf16 1.0 (below half of the 2**-7 spacing)."""
    reduce = Reduce((1,), False, ReduceKind.MEAN)
    same(evaluate(reduce, (arr([[1, 2, 2, 2]], "bf16"),), TensorType((1,), "bf16")), [1.75], "bf16")
    same(evaluate(reduce, (arr([[1, 1, 1, 1.0078125]], "bf16"),), TensorType((1,), "bf16")), [1.0], "bf16")


def test_reduce_integers_exact():
    """i32 sum over both axes of [[2**30, 3], [-2**30, 4]] = 7; mean of [-7, 0] = -3.5 ->
    -3 (toward zero, as int div), of [7, 0] -> 3; max of [-9, -4] = -4."""
    x = arr([[2 ** 30, 3], [-(2 ** 30), 4]], "i32")
    same(evaluate(Reduce((0, 1), False, ReduceKind.SUM), (x,), TensorType((), "i32")), 7, "i32")
    mean = Reduce((1,), False, ReduceKind.MEAN)
    same(evaluate(mean, (arr([[-7, 0], [7, 0]], "i32"),), TensorType((2,), "i32")), [-3, 3], "i32")
    same(evaluate(Reduce((0,), True, ReduceKind.MAX), (arr([-9, -4], "i64"),), TensorType((1,), "i64")),
         [-4], "i64")


def test_reduce_empty_axis_gives_the_identity():
    """Over an extent-0 axis: sum 0, max -inf, abs_max 0 (the identities a later combine needs);
    mean 0/0 = NaN."""
    x = arr(np.zeros((2, 0)), "f32")
    want = {ReduceKind.SUM: [0.0, 0.0], ReduceKind.MAX: [-INF, -INF], ReduceKind.ABS_MAX: [0.0, 0.0],
            ReduceKind.MEAN: [NAN, NAN]}
    for kind, values in want.items():
        same(evaluate(Reduce((1,), False, kind), (x,), TensorType((2,), "f32")), values, "f32")


def test_reduce_of_bool_is_refused():
    """typeinfer lets a bool reduce through; a bool sum or mean has no bool value."""
    with pytest.raises(EvaluationError, match="bool"):
        evaluate(Reduce((0,), False, ReduceKind.SUM), (arr([True, True], "bool"),), TensorType((), "bool"))


# ---------------------------------------------------------------- ArgMax / TopK


def test_argmax():
    """Row 0 [1, 3, 3, 2]: the max 3 first at index 1 (ties to the lowest index); row 1
    [NaN, 1, 5, 2]: NaN counts as the largest -> 0. Over axis 0 of [[1, 9], [5, 2]]: [1, 0]."""
    x = arr([[1, 3, 3, 2], [NAN, 1, 5, 2]], "bf16")
    same(evaluate(ArgMax(-1), (x,), TensorType((2,), "i64")), [1, 0], "i64")
    same(evaluate(ArgMax(0), (arr([[1, 9], [5, 2]], "i32"),), TensorType((2,), "i64")), [1, 0], "i64")


def test_topk_largest_and_smallest():
    """[1, 3, 3, 2]: the 2 largest are 3 (index 1), 3 (index 2), equal values lower index first;
    the 3 smallest are 1 (0), 2 (3), 3 (1)."""
    x = arr([[1, 3, 3, 2]], "f32")
    shape = (1, 2)
    values, indices = evaluate(TopK(2), (x,), TupleType((TensorType(shape, "f32"), TensorType(shape, "i64"))))
    same(values, [[3, 3]], "f32")
    same(indices, [[1, 2]], "i64")
    shape = (1, 3)
    values, indices = evaluate(TopK(3, largest=False), (x,),
                               TupleType((TensorType(shape, "f32"), TensorType(shape, "i64"))))
    same(values, [[1, 2, 3]], "f32")
    same(indices, [[0, 3, 1]], "i64")


def test_topk_nan_ranks_above_every_number():
    """[NaN, 1, 5, -inf]: largest 2 -> NaN (0), 5 (2); smallest 2 -> -inf (3), 1 (1): NaN is
    the largest, so it is last in the smallest order."""
    x = arr([[NAN, 1, 5, -INF]], "f32")
    result = TupleType((TensorType((1, 2), "f32"), TensorType((1, 2), "i64")))
    values, indices = evaluate(TopK(2), (x,), result)
    same(values, [[NAN, 5]], "f32")
    same(indices, [[0, 2]], "i64")
    values, indices = evaluate(TopK(2, largest=False), (x,), result)
    same(values, [[-INF, 1]], "f32")
    same(indices, [[3, 1]], "i64")


def test_topk_integers_along_axis_0_and_unsorted():
    """i32 [[-2**31, 9], [5, -2**31]], k=1 along axis 0: column maxima 5 (row 1) and 9 (row 0);
    the int minimum orders correctly (no overflow negating it); smallest gives -2**31 in both.
    sorted=False gives the same selection (best first)."""
    x = arr([[-(2 ** 31), 9], [5, -(2 ** 31)]], "i32")
    result = TupleType((TensorType((1, 2), "i32"), TensorType((1, 2), "i64")))
    for sorted_ in (True, False):
        values, indices = evaluate(TopK(1, axis=0, sorted=sorted_), (x,), result)
        same(values, [[5, 9]], "i32")
        same(indices, [[1, 0]], "i64")
    values, indices = evaluate(TopK(1, axis=0, largest=False), (x,), result)
    same(values, [[-(2 ** 31), -(2 ** 31)]], "i32")
    same(indices, [[0, 1]], "i64")


def test_tuple_get_item():
    """Field 1 (and -1) of (a, b) is b, as it is."""
    a, b = arr([1.0, 2.0], "f32"), arr([7, 8], "i64")
    types = (TupleType((TensorType((2,), "f32"), TensorType((2,), "i64"))),)
    for index in (1, -1):
        got = evaluate(TupleGetItem(index), ((a, b),), TensorType((2,), "i64"), arg_types=types)
        same(got, [7, 8], "i64")


# ---------------------------------------------------------------- creation


def test_full_like_float_rounds_the_written_value_once():
    """2.5 fills a (2,2) f32; into bf16, 1 + 2**-8 + 2**-30 rounds once to 1 + 2**-7 = 1.0078125
    (past the tie; rounding to f32 first would land on the tie 1 + 2**-8 and then give 1.0)."""
    x = arr(np.zeros((2, 2)), "f32")
    same(evaluate(FullLike(2.5), (x,), TensorType((2, 2), "f32")), [[2.5, 2.5], [2.5, 2.5]], "f32")
    got = evaluate(FullLike(1 + 2.0 ** -8 + 2.0 ** -30), (arr([0.0], "bf16"),), TensorType((1,), "bf16"))
    same(got, [1.0078125], "bf16")


def test_full_like_integer_and_bool_results():
    """An i32 fill of 3.0 is 3; 2.5 and 2**31 are refused (not an integer / outside i32);
    bool takes 1.0 -> True."""
    x = arr([0, 0], "i32")
    same(evaluate(FullLike(3.0), (x,), TensorType((2,), "i32")), [3, 3], "i32")
    for bad in (2.5, float(2 ** 31), NAN):
        with pytest.raises(EvaluationError, match="value"):
            evaluate(FullLike(bad), (x,), TensorType((2,), "i32"))
    same(evaluate(FullLike(1.0), (arr([False], "bool"),), TensorType((1,), "bool")), [True], "bool")


def test_full_like_and_zeros_take_the_local_shape():
    """In a placed run the result type is the participant's box: (2,4) of a (4,4) value."""
    got = evaluate(FullLike(-1.0), (arr(np.zeros((2, 4)), "f32"),), TensorType((2, 4), "f32"),
                   arg_types=(TensorType((2, 4), "f32"),))
    same(got, -np.ones((2, 4)), "f32")
    got = evaluate(Zeros(TensorType((4, 3), "bf16")), (), TensorType((2, 3), "bf16"))
    same(got, np.zeros((2, 3)), "bf16")


def test_arange():
    """start 3, step 2, 5 elements: 3, 5, 7, 9, 11."""
    got = evaluate(Arange(TensorType((5,), "i32"), start=3, step=2), (), TensorType((5,), "i32"))
    same(got, [3, 5, 7, 9, 11], "i32")


def test_shape_of_and_rank():
    """A (2,3,4) value: shape [2,3,4], rank 3; a rank-0 value: shape [], rank 0."""
    x = arr(np.zeros((2, 3, 4)), "f32")
    same(evaluate(ShapeOf(), (x,), umat_tensor((3,), DType.i64)), [2, 3, 4], "i64")
    same(evaluate(Rank(), (x,), umat_scalar(DType.i64)), 3, "i64")
    s = arr(1.0, "f32")
    same(evaluate(ShapeOf(), (s,), umat_tensor((0,), DType.i64)), np.zeros((0,)), "i64")
    same(evaluate(Rank(), (s,), umat_scalar(DType.i64)), 0, "i64")


def test_which_ops_read_global_coordinates():
    """ArgMax/TopK (indices), Arange (values are indices), ShapeOf/Rank (the logical shape) never
    run on a box; the rest here do."""
    for cls in (ArgMax, TopK, Arange, ShapeOf, Rank):
        assert cls in EVALUATORS and cls in GLOBAL_COORDINATE_OPS
    for cls in (Reshape, Transpose, Cast, Reduce, TupleGetItem, FullLike, Zeros):
        assert cls in EVALUATORS and cls not in GLOBAL_COORDINATE_OPS


def test_importing_the_ops_imports_no_numpy():
    """The evaluators reach numpy and ml_dtypes through the lazy proxy only."""
    code = ("import sys, tilefoundry.ops; "
            "print([m for m in ('numpy', 'ml_dtypes') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
