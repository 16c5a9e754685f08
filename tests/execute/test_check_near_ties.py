"""Issue 42 item 2 (check of a placed MoE layer): a top-k near tie may flip the
chosen experts between two right programs; check draws again where a failing
draw met one (execute/near_ties.py), and still refuses a wrong choice or a
wrong expert's weights."""
from __future__ import annotations

import numpy as np
import pytest

from tilefoundry import execution
from tilefoundry.execute import near_ties
from tilefoundry.execute.near_ties import DRAWS, NearTie, near_tie, redraw_seeds, with_redraws
from tilefoundry.execution import CheckResult

TOKENS, MODEL, EXPERTS, TOP = 4, 64, 16, 4

def _router(name: str, k: str, chosen: str, gathered: str) -> str:
    """A router of TOKENS tokens over EXPERTS experts, top-TOP, mixing the chosen
    experts' rows by their scores; ``chosen``/``gathered``: which of the top-``k``
    it returns, and which experts' rows it mixes."""
    return f'''
@module(entry="route", target=CudaTarget("nvidia.h100_sxm"))
class {name}:
    @func
    def route(h: Tensor[(R, D), "bf16"], w: ConstTensor[(D, E), "bf16"], experts: ConstTensor[(E, D), "bf16"]):
        scores = tf.cast(h @ w, "f32")
        top_p, top_ids = tf.topk(scores, {k}, -1, True, True)
        p, ids = top_p{chosen}, top_ids{chosen}
        rows = tf.index_select(experts, tf.reshape({gathered}, (R * K,)), 0)
        mixed = tf.cast(tf.reshape(rows, (R, K, D)), "f32") * tf.reshape(p, (R, K, 1))
        return ids, tf.reduce(mixed, (1,), False, ReduceKind.SUM)
'''


ROUTERS = f"""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

R, D, E, K = {TOKENS}, {MODEL}, {EXPERTS}, {TOP}
""" + _router("Right", "K", "", "ids") + _router("SkipsBest", "K + 1", "[:, 1:]", "ids") + \
    _router("NeighbourWeights", "K", "", "tf.where(ids < E - 1, ids + 1, ids - 1)")


def exact_router(h, w, experts):
    """The right answer in float64: the k best scores by their exact order, and the
    chosen experts' rows weighted by their scores."""
    scores = h.astype(np.float64) @ w.astype(np.float64)
    ids = np.argsort(-scores, axis=-1, kind="stable")[:, :TOP]
    top = np.take_along_axis(scores, ids, axis=-1)
    rows = experts.astype(np.float64)[ids]
    return ids.astype(np.int64), np.sum(rows * top[..., None], axis=1)


@pytest.fixture(scope="module")
def routers(tmp_path_factory):
    path = tmp_path_factory.mktemp("routers") / "routers.py"
    path.write_text(ROUTERS)
    return str(path)


def _check(routers, root: str, seed: int):
    (result,) = execution.check(f"{routers}:{root}", against=exact_router, seed=seed)
    return result


# ---------------------------------------------------------------- the rule


def test_near_tie_at_the_boundary_of_the_top_k():
    """The k-th (0.30) and the (k+1)-th (0.29) within their bounds (0.006 each)
    tie; with bounds of 0.004 they do not (0.296 > 0.294)."""
    values = np.array([0.5, 0.3, 0.29, 0.1])
    chosen = np.array([0, 1])
    assert near_tie(values, np.full(4, 0.006), chosen, 0, True) == ((), 0.3, 0.29, 0.012)
    assert near_tie(values, np.full(4, 0.004), chosen, 0, True) is None


def test_near_tie_in_the_order_of_the_top_k_and_for_the_smallest():
    """Two chosen scores within their bounds may come in either order; for the
    smallest, the ranking is reversed."""
    found = near_tie(np.array([[0.1, 0.5, 0.499]]), np.full((1, 3), 0.001), np.array([[1, 2]]), 1, True)
    assert found == ((0,), 0.5, 0.499, 0.002)
    found = near_tie(np.array([0.3, -1.0, -0.999, 2.0]), np.full(4, 0.001), np.array([1, 2]), 0, False)
    assert found == ((), -1.0, -0.999, 0.002)


def test_exact_or_unbounded_scores_are_no_near_tie():
    """Equal scores with no error are ordered alike by both sides (the lower index
    first); an unbounded score is left out (its index held exact, as before)."""
    values = np.array([0.5, 0.3, 0.3, 0.1])
    assert near_tie(values, np.zeros(4), np.array([0, 1]), 0, True) is None
    assert near_tie(values, np.array([0.0, np.inf, np.inf, 0.0]), np.array([0, 1]), 0, True) is None


def test_redraw_seeds_are_a_fixed_sequence_from_the_users_seed():
    seeds = redraw_seeds(7)
    assert seeds[0] == 7 and len(seeds) == DRAWS and len(set(seeds)) == DRAWS
    assert seeds == redraw_seeds(7) and seeds[1:] != redraw_seeds(8)[1:]


def _tie(row):
    return NearTie("f.py:1:1", "topk (k=4)", (row,), 0.3, 0.29, 0.02)


def test_every_draw_failing_at_a_tie_returns_the_first_with_the_tie_named():
    seen = []

    def attempt(seed):
        seen.append(seed)
        return CheckResult({}, False, (), None, seed), _tie(len(seen))

    result = with_redraws(3, attempt)
    assert seen == redraw_seeds(3)
    assert not result.passed and result.seed == 3
    assert "f.py:1:1: topk (k=4): at row (1,)" in result.tie and f"each of {DRAWS} draws" in result.tie


def test_given_inputs_are_not_drawn_again():
    """A tie that stays the same from one seed to the next: the inputs did not change."""
    seen = []

    def attempt(seed):
        seen.append(seed)
        return CheckResult({}, False, (), None, seed), _tie(0)

    result = with_redraws(0, attempt)
    assert len(seen) == 2 and not result.passed and "given" in result.tie


def test_a_failure_with_no_tie_or_a_pass_is_the_answer_at_once():
    for passed, tie in ((True, _tie(0)), (False, None)):
        seen = []

        def attempt(seed):
            seen.append(seed)
            return CheckResult({}, passed, (), None, seed), tie

        assert with_redraws(5, attempt).passed is passed and seen == [5]


# ---------------------------------------------------------------- on a router


def test_issue42_item2_a_near_tie_flip_of_a_right_router_is_accepted(routers, monkeypatch):
    """A seed where one draw's bf16-rounded scores order two experts otherwise than
    their exact values (a right program, a right reference) fails on that draw
    alone; check draws again and passes, the later seed stated."""
    with monkeypatch.context() as one_draw:
        one_draw.setattr(near_ties, "DRAWS", 1)  # the rule before: one draw, indices exact
        first = {seed: _check(routers, "Right", seed) for seed in range(40)}
    flipped = next((seed for seed, result in first.items() if not result.passed), None)
    assert flipped is not None, "no seed in 0-39 flips an expert: the test has nothing to show"
    assert all(result.tie is not None for result in first.values() if not result.passed)
    assert "topk (k=4)" in first[flipped].tie  # the one draw's failure is named as a tie's
    result = _check(routers, "Right", flipped)
    assert result.passed and result.seed != flipped and result.seed in redraw_seeds(flipped)


@pytest.mark.parametrize("root,wrong", [("SkipsBest", {"output[0]", "output[1]"}),
                                        ("NeighbourWeights", {"output[1]"})])
def test_issue42_item2_a_wrong_choice_or_a_wrong_experts_weights_is_refused(routers, root, wrong):
    """Picking the (k+1)-th expert in place of the best, or mixing a neighbouring
    expert's rows, fails on every draw (a near tie or not): refused, and the
    outputs named are the ones it got wrong."""
    for seed in (0, 1):
        result = _check(routers, root, seed)
        assert not result.passed
        assert {v.name for v in result.verdicts if not v.passed} == wrong
        # the verdicts shown are of a draw with no near tie, or of the user's own draw
        assert result.seed in redraw_seeds(seed) and (result.tie is None or result.seed == seed)


def test_issue42_item2_a_placed_mismatch_at_a_near_tie_is_drawn_again(routers, monkeypatch):
    """check --placed: a lockstep mismatch on a draw whose logical run met a near
    tie is drawn again (the placed run's own order of sums may flip the top-k); a
    mismatch with no tie is the answer at once."""
    from dataclasses import replace

    from tilefoundry import execute

    with monkeypatch.context() as one_draw:
        one_draw.setattr(near_ties, "DRAWS", 1)
        flipped = next((seed for seed in range(40) if not _check(routers, "Right", seed).passed), None)
    assert flipped is not None, "no seed in 0-39 meets a flipping near tie: the test has nothing to show"
    real = execute.check_placed
    calls = []

    def mismatch_on_the_first_draw(function, arguments):
        calls.append(1)
        report = real(function, arguments)
        return report if len(calls) > 1 else replace(report, passed=False)

    monkeypatch.setattr(execute, "check_placed", mismatch_on_the_first_draw)
    (result,) = execution.check(f"{routers}:Right", placed=True, seed=flipped)
    assert result.passed and result.seed != flipped and len(calls) == 2

    def no_tie(function, arguments, *rest, **kwargs):
        outputs, bounds, derivation = real_bounded(function, arguments, *rest, **kwargs)
        derivation.tie = None
        return outputs, bounds, derivation

    from tilefoundry.execute import bounded_run

    real_bounded = bounded_run.run_bounded
    monkeypatch.setattr(bounded_run, "run_bounded", no_tie)
    monkeypatch.setattr(execute, "check_placed", lambda f, a: replace(real(f, a), passed=False))
    (result,) = execution.check(f"{routers}:Right", placed=True, seed=flipped)
    assert not result.passed and result.seed == flipped
