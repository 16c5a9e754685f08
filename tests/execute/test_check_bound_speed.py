"""Issue 42's speed goal (a zoo decoder layer placed and checked within 60 s on 2
cores): what made check's bound run slow, and that removing it changed no bound.

- an exact value (an input, a weight) cast to f32 stays exact: no zero array of
  its size is carried into every product after it;
- a matmul's worst-case and rss bounds are made in one pass over its right
  operand, a block of columns at a time: the same numbers as whole;
- numpy's BLAS runs on one thread during a run, and is restored after.
"""
from __future__ import annotations

import numpy as np
import pytest

from tilefoundry.execute import bound_rules
from tilefoundry.execute.blas_threads import blas_threads, one_blas_thread
from tilefoundry.execute.bounded_run import BoundDomain, run_bounded
from tilefoundry.execute.error_bounds import RSS, WORST, Bounded, bounds_of, is_exact, values_of
from tilefoundry.execution import prepare

CHAIN = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="chain", target=CudaTarget("nvidia.h100_sxm"))
class Chain:
    @func
    def chain(h: Tensor[(3, 40), "bf16"], w: ConstTensor[(40, 50), "bf16"], v: ConstTensor[(50, 30), "bf16"]):
        a = h @ w
        exact = tf.cast(v, "f32")
        return tf.cast(a, "f32") @ exact, a @ v, tf.cast(a, "f32") @ tf.transpose(tf.cast(a, "f32"), (1, 0))
'''


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    path = tmp_path_factory.mktemp("chain") / "chain.py"
    path.write_text(CHAIN)
    return prepare(f"{path}:Chain", seed=0)


class _Recording(BoundDomain):
    """Every call's bounded result, by op name, in order."""

    def __init__(self):
        super().__init__()
        self.seen: list = []

    def apply(self, call, args):
        result = super().apply(call, args)
        self.seen.append((call, args, result))
        return result


def _recorded(prepared) -> list:
    from tilefoundry.execute.interpreter import run_body

    domain = _Recording()
    run_body(prepared.function, {p: Bounded(v, np.zeros(())) for p, v in prepared.arguments.items()}, domain)
    return domain.seen


def test_an_exact_weight_cast_to_f32_stays_exact(chain):
    """``tf.cast(v, "f32")`` of a bf16 weight is exact (every bf16 is an f32): its
    bound stays the number 0, not a zero array of the weight's size."""
    casts = [result for call, args, result in _recorded(chain)
             if call.op.name == "cast" and all(is_exact(a.e) for a in args)]
    assert casts, "the program casts an exact weight"
    for result in casts:
        assert is_exact(result.e) and is_exact(result.s)


def test_a_matmul_bound_is_the_rule_of_each_model(chain):
    """Both models' bounds made in one blocked pass equal each model's rule run on
    its own (``Model.dot`` and gamma_K·|a|@|b|), on every matmul of the program."""
    checked = 0
    for call, args, result in _recorded(chain):
        if call.op.name != "matmul":
            continue
        xs = tuple(values_of(a) for a in args)
        x = values_of(result)
        for model, mine in ((WORST, result.e), (RSS, result.s)):
            alone = bound_rules.bound_of(call, xs, tuple(bounds_of(a, model.rss) for a in args), x,
                                         BoundDomain(), model)
            np.testing.assert_allclose(mine, np.broadcast_to(alone, np.shape(mine)), rtol=1e-12, atol=0)
        checked += 1
    assert checked == 4  # h @ w, then a against an exact weight, a bf16 weight and itself


def test_blocking_the_columns_changes_no_bound(chain, monkeypatch):
    """A block of 7 elements (a few columns at a time) gives every output the same
    bound as the whole right operand at once: each column's sums are the same
    terms, so they differ only by the f64 rounding of the bound arithmetic itself
    (BLAS may order a GEMV's sum otherwise than a GEMM's: a few 2^-53)."""
    _, whole, _ = run_bounded(chain.function, chain.arguments)
    monkeypatch.setattr(bound_rules, "_BLOCK", 7)
    _, blocked, _ = run_bounded(chain.function, chain.arguments)
    assert whole.keys() == blocked.keys()
    for name in whole:
        np.testing.assert_allclose(blocked[name], whole[name], rtol=1e-12, atol=0, err_msg=name)
        assert np.all(np.isfinite(whole[name])) and np.any(whole[name] > 0)


def test_one_blas_thread_within_a_run_and_restored_after():
    before = blas_threads()
    if not before:
        pytest.skip("no OpenBLAS loaded in this process: nothing to set")
    with one_blas_thread():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before


@pytest.mark.parametrize("shape,is_weight", [((33, 21), True), ((101,), True), ((3, 5), False)])
def test_a_bf16_draw_made_in_blocks_is_the_f32_draws_top_half(shape, is_weight, monkeypatch):
    """inputs.py's draw: a bf16 value is the unit-variance f32 draw (scaled by
    1/sqrt(fan-in) for a matrix weight, 1 + 0.1·draw for a vector one) truncated to
    its top 16 bits; made 7 elements at a time it is the same value, and the
    generator is left where one whole draw leaves it."""
    import ml_dtypes

    from tilefoundry.execute import inputs
    from tilefoundry.ir.dtype import DType
    from tilefoundry.ir.tensor_type import TensorType

    monkeypatch.setattr(inputs, "_DRAW_BLOCK", 7)
    rng = np.random.default_rng(11)
    got = inputs._random_value(rng, TensorType(shape, DType.bf16), is_weight, None)
    after = rng.random()
    whole = np.random.default_rng(11)
    unit = whole.random(size=shape, dtype=np.float32).astype(np.float64) - 0.5
    spread = 0.1 if is_weight and len(shape) == 1 else (shape[-2] ** -0.5 if is_weight else 1.0)
    expected = (unit * np.float32(12 ** 0.5 * spread)).astype(np.float32) + (1.0 if is_weight and len(shape) == 1 else 0.0)
    truncated = (expected.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    assert got.dtype == ml_dtypes.bfloat16 and got.shape == shape
    assert np.array_equal(got.view(np.uint16), truncated)
    assert after == whole.random()


def test_a_twin_that_reads_only_is_given_views_and_cannot_write(chain):
    """check's Python twin gets its own copy of every input (it may write into it),
    unless it states ``reads_only = True`` (place's logical twin): then read-only
    views, no copy of a layer's weights, and a write is refused in one line."""
    from tilefoundry import execution
    from tilefoundry.errors import EvaluationError
    from tilefoundry.execute.bounded_run import run_bounded as bounded

    reference, _, _ = bounded(chain.function, chain.arguments)
    seen = {}

    def twin(h, w, v):
        seen["writeable"] = (h.flags.writeable, w.flags.writeable)
        return tuple(reference.values())

    selection = (chain.module, chain.view.authored)
    (copied,) = execution.check(selection, against=twin, seed=0)
    assert copied.passed and seen["writeable"] == (True, True)
    twin.reads_only = True
    (viewed,) = execution.check(selection, against=twin, seed=0)
    assert viewed.passed and seen["writeable"] == (False, False)

    def writer(h, w, v):
        h[0, 0] = 0
        return tuple(reference.values())

    writer.reads_only = True
    with pytest.raises(EvaluationError, match="the function raised ValueError"):
        execution.check(selection, against=writer, seed=0)
