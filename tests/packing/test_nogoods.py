"""Nogood learning (analysis.packing.nogoods): a state seen to fail is answered
at once, the canonical search's last-key rule only prunes what it proved, and
the searches still find (or refuse) what CP-SAT does with the table in use.
Completeness on random cases runs with the table in test_fill_search.py and
test_packing_statuses.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from tilefoundry.packing import Buffer, packing_faults, peak_live
from tilefoundry.packing.nogoods import FailedStates
from tilefoundry.packing.proof import cp_sat_packing
from tilefoundry.packing.search import FOUND, PREORDERINGS, Search
from tilefoundry.packing.sections import sweep

MINIMALLOC = Path(__file__).resolve().parents[2] / "bench" / "data" / "minimalloc"


def test_a_failed_state_fails_for_its_last_key_and_above_only():
    table = FailedStates(buffers=4, capacity=100)
    min_off = np.array([0, 5, 7, 100], dtype=np.int64)
    key = table.key(np.array([0, 2]), min_off)
    table.add(key, last_key=9)
    assert table.failed(key, 9) and table.failed(key, 12)
    assert not table.failed(key, 8)  # a lower key allows more: not proved
    other = table.key(np.array([0, 1]), min_off)  # other buffers unplaced
    assert not table.failed(other, 50)


def test_the_key_is_the_whole_state():
    table = FailedStates(buffers=3, capacity=100)
    min_off = np.array([4, 4, 4], dtype=np.int64)
    # same offsets, different unplaced buffers: different states
    assert table.key(np.array([0]), min_off) != table.key(np.array([1]), min_off)
    assert table.key(np.array([0, 1]), min_off) != table.key(np.array([0, 1]), min_off + 1)


# found among 3,000 random cases: the one where a search meets a failed state
# again (small random cases rarely backtrack at all)
REPEATS = [(4, 5, 7), (2, 5, 3), (3, 5, 3), (5, 6, 4), (1, 3, 2), (1, 4, 4), (4, 6, 4), (5, 6, 7),
           (1, 6, 5), (2, 5, 3), (3, 4, 7), (1, 2, 3)]


def test_a_repeated_failed_state_is_pruned_and_the_packing_still_found():
    buffers = [Buffer(*span) for span in REPEATS]
    capacity = peak_live(buffers)
    search = Search(buffers, capacity, sweep(buffers), PREORDERINGS[1])
    assert search.run() == FOUND and search.failed.hits > 0
    assert packing_faults(buffers, search.solution, capacity) == []
    for below in (capacity - 1, capacity):
        expected, _ = cp_sat_packing(buffers, below, 10)
        outcome = Search(buffers, below, sweep(buffers), PREORDERINGS[1]).run()
        assert (outcome == FOUND) == (expected in ("optimal", "feasible"))


def _pieces(name):
    from tilefoundry.packing.csv_format import read_buffers_csv

    buffers = [r.buffer for r in read_buffers_csv(str(MINIMALLOC / name))]
    layout = sweep(buffers)
    cut = 1 + layout.cuts.index(0)
    return ([b for b, lo in zip(buffers, layout.lo) if lo < cut],
            [b for b, lo in zip(buffers, layout.lo) if lo >= cut])


def test_the_table_settles_the_second_piece_of_minimalloc_e_canonically():
    """E's second piece (84 buffers, zero slack) under (total, area, length):
    17,660 nodes without the table (bench figure), a few thousand with it."""
    _, second = _pieces("E.1048576.csv")
    search = Search(second, 1048576, sweep(second), ("total", "area", "length"))
    assert search.run(node_budget=4000) == FOUND and search.failed.hits > 0
    assert packing_faults(second, search.solution, 1048576) == []


def test_the_first_piece_of_minimalloc_e_settles_under_the_sections_ordering():
    """E's first piece (131 buffers, the timeline cut where nothing spans):
    thrashes under every other ordering tried; this one settles it within a
    few hundred nodes (bench figure 535)."""
    first, _ = _pieces("E.1048576.csv")
    assert len(first) == 131
    search = Search(first, 1048576, sweep(first), ("total", "length", "sections"))
    assert search.run(node_budget=2000) == FOUND
    assert packing_faults(first, search.solution, 1048576) == []


def _cut(rng, t0, t1, a0, a1, out, depth):
    """Buffers tiling the time x address rectangle exactly (guillotine cuts)."""
    stop = (t1 - t0 < 2 and a1 - a0 < 2) or depth > 7 or (depth and rng.random() < 0.25 and len(out) > 3)
    if not stop and rng.random() < 0.5 and t1 - t0 >= 2:
        m = rng.randint(t0 + 1, t1 - 1)
        _cut(rng, t0, m, a0, a1, out, depth + 1)
        _cut(rng, m, t1, a0, a1, out, depth + 1)
    elif not stop and a1 - a0 >= 2:
        m = rng.randint(a0 + 1, a1 - 1)
        _cut(rng, t0, t1, a0, m, out, depth + 1)
        _cut(rng, t0, t1, m, a1, out, depth + 1)
    else:
        out.append(Buffer(t0, t1, a1 - a0))


def test_pruned_states_never_turn_a_zero_slack_packing_into_a_proof_of_none():
    """Soundness where the table works hardest: buffers cut from a full
    rectangle fit its height with no byte to spare, so every search that ends
    must end with a packing. Both searches, every preordering, with the table
    pruning thousands of repeated states over these cases."""
    import random

    from tilefoundry.packing.fill import FILL_PREORDERINGS, FillSearch
    from tilefoundry.packing.search import ABORTED, DEADLINE

    rng = random.Random(6)  # a seed whose cases make the table prune ~2,000 states
    pruned = 0
    for _ in range(12):
        buffers: list = []
        capacity = rng.randint(20, 60)
        _cut(rng, 0, rng.randint(10, 30), 0, capacity, buffers, 0)
        rng.shuffle(buffers)
        searches = [Search(buffers, capacity, sweep(buffers), p) for p in PREORDERINGS]
        searches += [FillSearch(buffers, capacity, sweep(buffers), p) for p in FILL_PREORDERINGS]
        for search in searches:
            outcome = search.run(node_budget=4000)
            assert outcome in (FOUND, ABORTED, DEADLINE), (buffers, capacity, type(search).__name__)
            if outcome == FOUND:
                assert packing_faults(buffers, search.solution, capacity) == []
            pruned += search.failed.hits
    assert pruned > 1000  # the table was in use, so the check means something
