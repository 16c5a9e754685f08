"""Issue 42: a logical kernel whose body is a loop carrying state (a selective
scan) is placed by the loop kind (placer/loop.py): a data-parallel axis of the
carried values, found by structure, split over CTAs, the loop kept as written in
the mesh; every answer is checked against the logical kernel and priced."""
from __future__ import annotations

import pytest

from tilefoundry import api
from tilefoundry.errors import AnalysisError
from tilefoundry.placer import place
from tilefoundry.placer.objective import objective_of, price

SCAN = "tests/place/data/scan_small.py"
SELECTION = f"{SCAN}:SmallScan.scan"


def _variant(tmp_path, old: str, new: str, name: str = "scan_variant.py") -> str:
    text = open(SCAN, encoding="utf-8").read()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return f"{path}:SmallScan.scan"


@pytest.fixture(scope="module")
def placed():
    return place(SELECTION, time_limit=30, top=2, progress=False)


def test_a_scan_is_placed_split_over_its_heads_and_checked(placed):
    """The scan's state (1, HEADS, ROWS, STATE) splits on its heads and rows, never
    on STATE (the matmul with c reads across it) nor the tokens (the loop walks
    them): every point of the space is priced, and the answer is checked."""
    assert placed.kind == "loop" and placed.proven and not placed.bugs
    best = placed.best
    assert best.checked
    labels = [best.choice.labels[c] for c, _ in best.choice.splits]
    assert set(labels) <= {"state axis 1", "state axis 2"}
    assert "for t in range(6):" in best.text and "@ g." in best.text


def test_the_placed_scan_is_priced_below_the_logical_one_as_written(placed):
    """The logical kernel as written runs its loop on one CTA with its state in
    gmem; the placed one shares the state out and keeps it at a CTA's own level."""
    module, function = api.load(SELECTION)
    written = price((module, function), objective_of(module.target)).objective_ns
    assert placed.best.figures[placed.objective] < written
    assert set(placed.best.figures["peak_bytes"]) & {"smem", "rmem"}


def test_an_axis_read_across_each_trip_is_not_split(tmp_path):
    """Each trip's output less its sum over the heads: the heads axis is read across,
    so only the rows may be split (found by structure, not by a name)."""
    selection = _variant(tmp_path, "                y_t = tf.reshape(tf.matmul(state, c_t), (1, 1, HEADS, ROWS))",
                         "                y_c = tf.matmul(state, c_t)\n"
                         "                y_h = y_c - tf.reduce(y_c, (1,), True, ReduceKind.SUM)\n"
                         "                y_t = tf.reshape(y_h, (1, 1, HEADS, ROWS))")
    result = place(selection, time_limit=30, progress=False)
    assert result.kind == "loop" and result.best.checked and not result.bugs
    labels = {result.best.choice.labels[c] for c, _ in result.best.choice.splits}
    assert labels == {"state axis 2"}


def test_a_loop_with_no_data_parallel_axis_is_refused(tmp_path):
    """A state the loop reads across on every axis (each trip's state summed
    whole into the next) leaves no share a CTA can own: refused in one line."""
    selection = _variant(tmp_path, "                state = state * tf.exp(dt_t * a) + (dt_t * x_t) * b_t",
                         "                state = state * tf.exp(dt_t * a) + (dt_t * x_t) * b_t\n"
                         "                state = state + tf.reduce(state, (0, 1, 2, 3), True, ReduceKind.SUM)")
    with pytest.raises(AnalysisError, match=r"no axis of the loop's carried values is data-parallel"):
        place(selection, time_limit=5, progress=False)


def test_a_placed_loop_that_walks_one_trip_short_fails_the_check(placed, tmp_path):
    """The check sees the loop: the best answer with its last trip left out is
    refused by the comparison with the logical kernel (a place bug, never shown)."""
    from tilefoundry.placer.driver import _checked
    from tilefoundry.placer.kernel import read_kernel

    module, function = api.load(SELECTION)
    kernel = read_kernel(module, function)
    path = tmp_path / "short.py"
    path.write_text(placed.best.text.replace("range(6)", "range(5)"), encoding="utf-8")
    assert _checked((module, function), kernel, str(path), 0) is not None
    good = tmp_path / "good.py"
    good.write_text(placed.best.text, encoding="utf-8")
    assert _checked((module, function), kernel, str(good), 0) is None


def test_a_long_loop_bound_by_dim_is_checked_at_fewer_trips(tmp_path):
    """A scan whose token count is a DimVar bound to 64 is searched at 64 trips
    and checked at 4 (placer/loop_check.py): the same split, the result says so."""
    selection = _variant(tmp_path, "TOKENS = 6", 'TOKENS = DimVar("tokens", 1, 129)')
    result = place(selection, dims={"tokens": 64}, time_limit=30, progress=False)
    assert result.kind == "loop" and result.best.checked and not result.bugs
    assert result.checked_at == "reduced extents tokens: 64->4 trips"
    assert "for t in range(64):" in result.best.text
