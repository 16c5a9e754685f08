"""Evaluators of the indexing ops (ops/indexing.py) and the tensor-structure ops of
ops/tensor_index.py, checked against hand-derived values, and their refusals of
indices, positions, starts and offsets outside range.

Each test types its call through the real typeinfer (``build_call``); a run-time
operand (an index tensor, a starts tuple) is a ``Var`` so the typeinfer cannot
see its value; the evaluator is called directly and its value rounded to the
declared dtype once, as the runner does.
"""
import ml_dtypes
import numpy as np
import pytest

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Var
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.ops import (
    CacheUpdate,
    Concat,
    IndexAdd,
    IndexCopy,
    IndexSelect,
    InsertSlice,
    RepeatInterleave,
    Slice,
    Split,
    Stack,
)
from tilefoundry.semantics.op_numerics import EvalContext, to_dtype
from tilefoundry.semantics.op_registry import EVALUATORS, GLOBAL_COORDINATE_OPS
from tilefoundry.semantics.typeinfer import build_call

BF16 = ml_dtypes.bfloat16
I64 = TensorType((), DType.i64, None, StorageKind.UMAT)


def tensor(value, dtype="f32"):
    """(type, value in its declared dtype's numpy form) of a tensor operand."""
    t = TensorType(np.shape(value), DType.from_name(dtype))
    return t, to_dtype(np.asarray(value), t.dtype)


def ints(*values):
    """A run-time tuple of rank-0 i64 values (starts, offsets)."""
    return TupleType((I64,) * len(values)), tuple(np.asarray(v, np.int64) for v in values)


def run(op, *operands):
    """Type ``op`` over ``(type, value)`` operands, evaluate it, round to the result type."""
    types = tuple(t for t, _ in operands)
    call = build_call(op, tuple(Var(f"a{i}", t) for i, t in enumerate(types)))
    ctx = EvalContext(op, types, call.type)
    value = EVALUATORS[type(op)](op, tuple(v for _, v in operands), ctx)
    if isinstance(call.type, TupleType):
        return tuple(to_dtype(v, t.dtype) for v, t in zip(value, call.type.fields))
    return to_dtype(value, call.type.dtype)


X34 = np.arange(12.0).reshape(3, 4)  # [[0,1,2,3],[4,5,6,7],[8,9,10,11]]


# ---------------------------------------------------------------- IndexSelect / IndexAdd / IndexCopy


def test_index_select_rows_and_columns():
    """dim 0, index [2, 0, 2]: rows 2, 0, 2 of X34; dim 1, index [3, 1]: columns 3 and 1."""
    out = run(IndexSelect(dim=0), tensor(X34), tensor([2, 0, 2], "i64"))
    np.testing.assert_array_equal(out, [[8, 9, 10, 11], [0, 1, 2, 3], [8, 9, 10, 11]])
    out = run(IndexSelect(dim=1), tensor(X34), tensor([3, 1], "i32"))
    np.testing.assert_array_equal(out, [[3, 1], [7, 5], [11, 9]])


def test_index_select_refuses_an_index_out_of_range():
    """x has 3 rows: index 3 is outside [0, 3); -1 is refused too (no wrap)."""
    with pytest.raises(EvaluationError, match=r"index holds 3, outside the valid range \[0, 3\)"):
        run(IndexSelect(dim=0), tensor(X34), tensor([0, 3], "i64"))
    with pytest.raises(EvaluationError, match=r"index holds -1, outside the valid range \[0, 3\)"):
        run(IndexSelect(dim=0), tensor(X34), tensor([-1], "i64"))


def test_index_add_accumulates_repeated_rows():
    """dst zeros (3, 2), index [0, 2, 0], src [[1, 2], [3, 4], [5, 6]]: row 0 = [1+5, 2+6] = [6, 8],
    row 1 untouched 0, row 2 = [3, 4]."""
    out = run(IndexAdd(dim=0), tensor(np.zeros((3, 2))), tensor([0, 2, 0], "i64"),
              tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(out, [[6, 8], [0, 0], [3, 4]])


def test_index_add_bf16_accumulates_in_f32():
    """dst bf16 [1], index [0] x 256, src 2**-8 each: in f32 1 + 256 * 2**-8 = 2; a bf16 running
    sum would stay 1 (1 + 2**-8 ties to the even 1)."""
    out = run(IndexAdd(dim=0), tensor([1.0], "bf16"), tensor([0] * 256, "i32"),
              tensor([2.0 ** -8] * 256, "bf16"))
    assert out.dtype == BF16 and float(out[0]) == 2.0


def test_index_add_along_dim_one_in_integers():
    """i32 dst [[10, 20, 30]], dim 1, index [2, 2], src [[1, 2]]: column 2 = 30 + 1 + 2 = 33."""
    out = run(IndexAdd(dim=1), tensor([[10, 20, 30]], "i32"), tensor([2, 2], "i64"), tensor([[1, 2]], "i32"))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [[10, 20, 33]])


def test_index_add_refuses_an_index_out_of_range():
    """dst has 3 rows: 5 is outside [0, 3)."""
    with pytest.raises(EvaluationError, match=r"index holds 5, outside the valid range \[0, 3\)"):
        run(IndexAdd(dim=0), tensor(np.zeros((3, 2))), tensor([5], "i64"), tensor([[1.0, 1.0]]))


def test_index_copy_writes_rows_last_wins():
    """dst X34, index [1, 0, 1], src rows a=[-1]*4, b=[-2]*4, c=[-3]*4: row 0 = b, row 1 = c
    (the later of the two writes to row 1), row 2 kept."""
    src = np.array([[-1.0] * 4, [-2.0] * 4, [-3.0] * 4])
    out = run(IndexCopy(dim=0), tensor(X34), tensor([1, 0, 1], "i64"), tensor(src))
    np.testing.assert_array_equal(out, [[-2] * 4, [-3] * 4, [8, 9, 10, 11]])


def test_index_copy_refuses_an_index_out_of_range():
    """dim 1 of X34 has 4 columns: 4 is outside [0, 4); dst itself is not changed."""
    dst = tensor(X34)
    with pytest.raises(EvaluationError, match=r"index holds 4, outside the valid range \[0, 4\)"):
        run(IndexCopy(dim=1), dst, tensor([4], "i64"), tensor(np.zeros((3, 1))))
    np.testing.assert_array_equal(dst[1], X34)


# ---------------------------------------------------------------- CacheUpdate


def _cache_args(cur_pos, s):
    cache = np.arange(8.0).reshape(1, 4, 1, 2)  # rows [0,1], [2,3], [4,5], [6,7]
    new = -np.arange(1.0, 7.0).reshape(1, 3, 1, 2)  # rows [-1,-2], [-3,-4], [-5,-6]
    return (tensor(cache), tensor(np.int32(cur_pos), "i32"), tensor(np.array([s], np.int32), "i32"),
            tensor(new))


def test_cache_update_writes_the_first_s_rows_at_cur_pos():
    """cur_pos 1, s 2: cache rows 1 and 2 become new rows 0 and 1; rows 0 and 3 kept; new's
    row 2 unused."""
    out = run(CacheUpdate(), *_cache_args(1, 2))
    np.testing.assert_array_equal(out[0, :, 0], [[0, 1], [-1, -2], [-3, -4], [6, 7]])


def test_cache_update_refuses_positions_out_of_range():
    """cache length 4: with s 2, cur_pos must lie in [0, 3) (3 + 2 > 4); s must lie in
    [1, min(new len 3, 4) + 1) = [1, 4)."""
    with pytest.raises(EvaluationError, match=r"cur_pos holds 3, outside the valid range \[0, 3\)"):
        run(CacheUpdate(), *_cache_args(3, 2))
    with pytest.raises(EvaluationError, match=r"cur_pos holds -1, outside the valid range \[0, 3\)"):
        run(CacheUpdate(), *_cache_args(-1, 2))
    with pytest.raises(EvaluationError, match=r"s holds 4, outside the valid range \[1, 4\)"):
        run(CacheUpdate(), *_cache_args(0, 4))
    with pytest.raises(EvaluationError, match=r"s holds 0, outside the valid range \[1, 4\)"):
        run(CacheUpdate(), *_cache_args(0, 0))


# ---------------------------------------------------------------- Concat, Stack, Split, RepeatInterleave


def test_concat_along_each_axis():
    """[[1, 2]] ++ [[3, 4], [5, 6]] on axis 0; [[1], [2]] ++ [[3, 4], [5, 6]] on axis -1."""
    out = run(Concat(axis=0), tensor([[1.0, 2.0]]), tensor([[3.0, 4.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(out, [[1, 2], [3, 4], [5, 6]])
    out = run(Concat(axis=-1), tensor([[1.0], [2.0]]), tensor([[3.0, 4.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(out, [[1, 3, 4], [2, 5, 6]])


def test_stack_on_a_new_axis():
    """stack([1, 2], [3, 4]) on axis 0 = [[1, 2], [3, 4]]; on axis -1 (the new last) = [[1, 3], [2, 4]]."""
    a, b = tensor([1, 2], "i32"), tensor([3, 4], "i32")
    np.testing.assert_array_equal(run(Stack(axis=0), a, b), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(run(Stack(axis=-1), a, b), [[1, 3], [2, 4]])


def test_split_into_equal_pieces():
    """X34 cut in 2 along axis 1: columns [0, 1] and [2, 3]; in 3 along axis 0: one row each."""
    left, right = run(Split(axis=1, num_splits=2), tensor(X34))
    np.testing.assert_array_equal(left, [[0, 1], [4, 5], [8, 9]])
    np.testing.assert_array_equal(right, [[2, 3], [6, 7], [10, 11]])
    rows = run(Split(axis=0, num_splits=3), tensor(X34))
    assert len(rows) == 3
    np.testing.assert_array_equal(rows[2], [[8, 9, 10, 11]])


def test_repeat_interleave_repeats_in_place():
    """[[1, 2], [3, 4]], repeats 2: axis 1 -> [[1, 1, 2, 2], [3, 3, 4, 4]]; axis 0 -> rows
    [1, 2], [1, 2], [3, 4], [3, 4] (not tiled [1, 2], [3, 4], [1, 2], ...)."""
    x = tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(run(RepeatInterleave(repeats=2, axis=1), x), [[1, 1, 2, 2], [3, 3, 4, 4]])
    np.testing.assert_array_equal(run(RepeatInterleave(repeats=2, axis=0), x),
                                  [[1, 2], [1, 2], [3, 4], [3, 4]])


# ---------------------------------------------------------------- Slice, InsertSlice


def test_slice_window_with_strides():
    """X34 from (1, 0), sizes (2, 2), strides (1, 2): rows 1, 2 and columns 0, 2 ->
    [[4, 6], [8, 10]]."""
    out = run(Slice(sizes=(2, 2), strides=(1, 2)), tensor(X34), ints(1, 0))
    np.testing.assert_array_equal(out, [[4, 6], [8, 10]])


def test_slice_refuses_a_window_outside_x():
    """sizes (1, 2), strides (1, 2) on 4 columns: the window's last column is start + 2, so
    starts[1] must lie in [0, 2); 2 reaches column 4. A negative start is refused, not wrapped."""
    op = Slice(sizes=(1, 2), strides=(1, 2))
    with pytest.raises(EvaluationError, match=r"starts\[1\] holds 2, outside the valid range \[0, 2\)"):
        run(op, tensor(X34), ints(0, 2))
    with pytest.raises(EvaluationError, match=r"starts\[0\] holds -1, outside the valid range \[0, 3\)"):
        run(op, tensor(X34), ints(-1, 0))


def test_insert_slice_writes_the_window():
    """zeros (3, 4) with [[1, 2], [3, 4]] at offsets (1, 2): rows 1-2, columns 2-3."""
    out = run(InsertSlice(), tensor(np.zeros((3, 4))), tensor([[1.0, 2.0], [3.0, 4.0]]), ints(1, 2))
    np.testing.assert_array_equal(out, [[0, 0, 0, 0], [0, 0, 1, 2], [0, 0, 3, 4]])


def test_insert_slice_refuses_offsets_outside_dst():
    """a (2, 2) update in (3, 4): offsets[0] in [0, 2), offsets[1] in [0, 3)."""
    dst, upd = tensor(np.zeros((3, 4))), tensor(np.ones((2, 2)))
    with pytest.raises(EvaluationError, match=r"offsets\[0\] holds 2, outside the valid range \[0, 2\)"):
        run(InsertSlice(), dst, upd, ints(2, 0))
    with pytest.raises(EvaluationError, match=r"offsets\[1\] holds -1, outside the valid range \[0, 3\)"):
        run(InsertSlice(), dst, upd, ints(0, -1))


def test_index_and_structure_ops_read_global_coordinates():
    """Every op here is evaluated on assembled operands, never on a participant's box."""
    ops = {CacheUpdate, Concat, IndexAdd, IndexCopy, IndexSelect, InsertSlice, RepeatInterleave, Slice,
           Split, Stack}
    assert ops <= GLOBAL_COORDINATE_OPS
