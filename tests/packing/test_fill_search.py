"""The lowest-point-first search (analysis.packing.fill) and the per-piece
portfolio of ``pack``: complete (decides as CP-SAT does), every packing valid,
and its pruning rules keep a packing when one exists."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tilefoundry.packing import Buffer, pack, packing_faults, peak_live
from tilefoundry.packing.fill import FILL_PREORDERINGS, FillSearch
from tilefoundry.packing.proof import cp_sat_packing
from tilefoundry.packing.search import FOUND
from tilefoundry.packing.sections import sweep

MINIMALLOC = Path(__file__).resolve().parents[2] / "bench" / "data" / "minimalloc"


def _random_case(rng, twins):
    buffers = []
    for _ in range(rng.randint(3, 9)):
        start = rng.randint(0, 7)
        buffers.append(Buffer(start, rng.randint(start + 1, 9), rng.choice([1, 2, 3, 5, 7])))
        if twins and rng.random() < 0.3:
            buffers.append(buffers[-1])  # an identical buffer: the twin rule's case
    return buffers


@pytest.mark.parametrize("seed", range(4))
def test_fill_search_decides_as_cp_sat_does(seed):
    """Completeness of the waste branch, the twin, hatless and spanning rules:
    at capacities from one below the live peak up, the search finds a packing
    exactly when CP-SAT does, and every packing it finds is valid."""
    rng = random.Random(seed)
    for _ in range(25):
        buffers = _random_case(rng, twins=seed % 2 == 1)
        for capacity in (peak_live(buffers) - 1, peak_live(buffers), peak_live(buffers) + 2):
            preordering = FILL_PREORDERINGS[seed % len(FILL_PREORDERINGS)]
            search = FillSearch(buffers, capacity, sweep(buffers), preordering)
            outcome = search.run()
            expected, _ = cp_sat_packing(buffers, capacity, 10)
            assert (outcome == FOUND) == (expected in ("optimal", "feasible")), (buffers, capacity)
            if outcome == FOUND:
                assert packing_faults(buffers, search.solution, capacity) == []


def test_fill_search_takes_the_waste_branch_where_its_packing_needs_it():
    """A case (found among random ones) where the search reaches its packing
    only past a waste branch (nothing starts at some lowest point); there and
    one byte lower it decides as CP-SAT does."""
    spans = [(4, 6, 1), (4, 8, 2), (4, 9, 1), (6, 7, 3), (6, 10, 6), (7, 12, 2), (9, 10, 4),
             (10, 11, 3), (10, 12, 2)]
    buffers = [Buffer(*span) for span in spans]
    search = FillSearch(buffers, 12, sweep(buffers), FILL_PREORDERINGS[0])
    assert search.run() == FOUND and search.wastes > 0
    assert packing_faults(buffers, search.solution, 12) == []
    for capacity in (11, 12):
        expected, _ = cp_sat_packing(buffers, capacity, 10)
        outcome = FillSearch(buffers, capacity, sweep(buffers), FILL_PREORDERINGS[0]).run()
        assert (outcome == FOUND) == (expected in ("optimal", "feasible"))


def test_a_buffer_meeting_every_other_goes_lowest():
    # the long buffer meets all three others: some packing has it at 0, and
    # the search places it there with no other branch
    buffers = [Buffer(0, 6, 2), Buffer(0, 2, 3), Buffer(2, 4, 3), Buffer(4, 6, 3)]
    search = FillSearch(buffers, 5, sweep(buffers), FILL_PREORDERINGS[0])
    assert search.run() == FOUND
    assert search.solution[0] == 0
    assert packing_faults(buffers, search.solution, 5) == []


def test_fill_search_settles_a_real_minimalloc_case():
    from tilefoundry.packing.csv_format import read_buffers_csv

    buffers = [r.buffer for r in read_buffers_csv(str(MINIMALLOC / "H.1048576.csv"))]
    search = FillSearch(buffers, 1048576, sweep(buffers), FILL_PREORDERINGS[0])
    assert search.run(node_budget=20000) == FOUND
    assert packing_faults(buffers, search.solution, 1048576) == []


def _shifted(buffers, by):
    return [Buffer(b.start + by, b.end + by, b.size) for b in buffers]


@pytest.mark.parametrize("seed", range(2))
def test_pack_settles_each_piece_of_the_timeline(seed):
    """Two independent cases side by side in time (no buffer spans the cut):
    pack settles as CP-SAT does on the whole, and its packing is valid."""
    rng = random.Random(100 + seed)
    for _ in range(10):
        first, second = _random_case(rng, twins=False), _random_case(rng, twins=False)
        buffers = first + _shifted(second, 20)
        for capacity in (peak_live(buffers) - 1, peak_live(buffers), peak_live(buffers) + 1):
            result = pack(buffers, capacity, time_limit_s=10)
            expected, _ = cp_sat_packing(buffers, capacity, 10)
            found = result.status in ("optimal", "feasible")
            assert found == (expected in ("optimal", "feasible")), (buffers, capacity, result)
            if found:
                assert packing_faults(buffers, result.offsets, capacity) == []
