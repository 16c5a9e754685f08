"""Issue 41 item 3 / issue 38 item 5: integer numerics as the hardware does them
and as users expect. An i32 mean accumulates wide and exactly, rounds toward
zero (as integer division) and never leaves the range of its inputs; an i32
sum wraps as two's complement; neg and abs of INT_MIN are INT_MIN (stated in
docs/ops.md)."""
from __future__ import annotations

import numpy as np
import pytest

import tilefoundry.ops  # noqa: F401  (the op families)
from tilefoundry.ops.math import Unary, UnaryKind
from tilefoundry.ops.tensor import Reduce, ReduceKind
from tilefoundry.semantics.op_registry import EVALUATORS

INT_MIN, INT_MAX = -2**31, 2**31 - 1


def _reduce(kind, values, axes=(0,), dtype=np.int32):
    op = Reduce(axes, False, kind)
    return EVALUATORS[Reduce](op, (np.asarray(values, dtype=dtype),), None)


def _toward_zero(values) -> int:
    """The exact mean rounded toward zero, in Python's unbounded integers."""
    total, n = sum(int(v) for v in values), len(values)
    quotient = abs(total) // n
    return quotient if total >= 0 else -quotient


@pytest.mark.parametrize("values", [
    [INT_MAX] * 4 + [INT_MAX - 1],          # five large values: an i32 sum would wrap
    [-1, -2147483647],                        # the sum is INT_MIN: negating it wrapped the sign
    [INT_MIN, INT_MIN, INT_MIN],
    [INT_MIN, INT_MAX],
    [-7, 1, 1], [3, 4], [-3, -4], [5],
])
def test_int_mean_is_exact_toward_zero_and_inside_its_inputs(values):
    got = _reduce(ReduceKind.MEAN, values)
    assert got.dtype == np.int32
    assert int(got) == _toward_zero(values)
    assert min(values) <= int(got) <= max(values)


def test_int_mean_of_the_issue_has_the_right_sign():
    assert int(_reduce(ReduceKind.MEAN, [-1, -2147483647])) == -1073741824


def test_int_mean_over_several_axes_and_i64():
    rng = np.random.default_rng(0)
    x = rng.integers(INT_MIN, INT_MAX, size=(3, 5, 7), dtype=np.int64).astype(np.int32)
    got = _reduce(ReduceKind.MEAN, x, axes=(0, 2))
    want = [_toward_zero(x[:, j, :].reshape(-1)) for j in range(5)]
    assert got.tolist() == want
    big = np.array([2**62, 2**62, 2**62 - 3], np.int64)
    assert int(_reduce(ReduceKind.MEAN, big, dtype=np.int64)) == _toward_zero(big.tolist())


def test_int_sum_wraps_as_twos_complement():
    got = _reduce(ReduceKind.SUM, [INT_MAX, 1])
    assert got.dtype == np.int32 and int(got) == INT_MIN


@pytest.mark.parametrize("kind", [UnaryKind.NEG, UnaryKind.ABS])
def test_int_min_negation_wraps_to_itself(kind):
    got = EVALUATORS[Unary](Unary(kind), (np.array([INT_MIN, -5], np.int32),), None)
    assert got.tolist() == [INT_MIN, 5]  # -(-5) and |-5| alike


def test_int_min_negation_is_stated_in_the_op_reference():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "ops.md").read_text()
    assert "neg and abs of the dtype's minimum (INT_MIN, -2^31 for i32) are INT_MIN itself" in text
    assert "an integer mean accumulates wide and exactly" in text


def test_int_mean_property():
    """hypothesis: any i32 values, any count: exact toward zero, inside the inputs."""
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(INT_MIN, INT_MAX), min_size=1, max_size=40))
    def holds(values):
        got = int(_reduce(ReduceKind.MEAN, values))
        assert got == _toward_zero(values) and min(values) <= got <= max(values)

    holds()
