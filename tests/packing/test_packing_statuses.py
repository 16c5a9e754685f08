"""analysis §1.2.2 allocation, through the packer (analysis.packing.pack):
the statuses, the two shortcuts that settle without searching, and small
instances whose best peak is derived by hand (the live-bytes peak is a lower
bound on any packing's peak, so a packing that reaches it is best)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tilefoundry.packing import Buffer, pack, packed_height, packing_faults, peak_live
from tilefoundry.packing.proof import cp_sat_packing
from tilefoundry.packing.search import (
    ABORTED, DEADLINE, EXHAUSTED, FOUND, PREORDERINGS, Search,
)
from tilefoundry.packing.sections import sweep

MINIMALLOC = Path(__file__).resolve().parents[2] / "bench" / "data" / "minimalloc"

# MiniMalloc's own example (bench/data/minimalloc/input.12.csv): b1 [0,3) 4,
# b2 [3,9) 4, b3 [0,9) 4, b4 [9,21) 4, b5 [0,21) 4. Over [0,3) b1, b3 and b5
# are live: 12 bytes, so no packing is lower than 12; b1 and b2 never meet and
# can share one slot, b4 meets only b5, so three 4-byte slots suffice: 12.
EXAMPLE = [Buffer(0, 3, 4), Buffer(3, 9, 4), Buffer(0, 9, 4), Buffer(9, 21, 4), Buffer(0, 21, 4)]


def test_1_2_2_fits_at_once_is_settled_without_searching():
    # 4 + 4 + 4 = 12 bytes side by side within 12: nothing to decide
    result = pack([Buffer(0, 2, 4), Buffer(1, 3, 4), Buffer(5, 6, 4)], 12)
    assert (result.status, result.searched, result.method) == ("optimal", False, "fit-at-once")
    assert result.offsets == (0, 4, 8)


def test_1_2_2_live_bytes_over_capacity_refused_without_searching():
    # over [1, 2) both are live: 5 + 5 = 10 > 8
    result = pack([Buffer(0, 2, 5), Buffer(1, 3, 5)], 8)
    assert (result.status, result.searched, result.method) == ("infeasible", False, "live-bytes")


def test_1_2_2_one_buffer_over_capacity_refused_without_searching():
    result = pack([Buffer(0, 1, 9), Buffer(2, 3, 1)], 8)
    assert (result.status, result.searched) == ("infeasible", False)


def test_1_2_2_a_buffer_that_cannot_be_expressed_is_invalid():
    # an empty lifetime [3, 3) is no rectangle: cannot be expressed as a packing
    assert pack([Buffer(3, 3, 4), Buffer(0, 2, 4)], 4).status == "invalid"


def test_1_2_2_first_fit_reaches_the_derived_peak_of_the_minimalloc_example():
    # room enough for first fit, largest first: no search (past the two
    # shortcuts, so ``searched`` as for any packer work)
    result = pack(EXAMPLE, 12)
    assert (result.status, result.searched, result.method, result.nodes) == ("optimal", True, "greedy", 0)
    assert peak_live(EXAMPLE) == 12
    assert packed_height(EXAMPLE, result.offsets) == 12
    assert packing_faults(EXAMPLE, result.offsets, 12) == []


# Over [0,1) the long buffer and the two short ones fill all 6 bytes; over
# [1,3) the long one and the 3-byte one need 5. First fit, largest first, puts
# the 3-byte buffer at 0 and the long one at 3, which leaves the short ones
# [0,2) and a 1-byte gap: it fails. The packing: the long one at 0, the 3-byte
# one at 2, the short ones at 2 and 4.
FIRST_FIT_FAILS = [Buffer(0, 5, 2), Buffer(0, 1, 2), Buffer(0, 1, 2), Buffer(1, 3, 3)]


def test_1_2_2_the_search_settles_what_first_fit_cannot():
    from tilefoundry.packing.greedy import first_fit

    assert first_fit(FIRST_FIT_FAILS, 6) is None
    result = pack(FIRST_FIT_FAILS, 6)
    assert (result.status, result.searched, result.method) == ("optimal", True, "search")
    assert packing_faults(FIRST_FIT_FAILS, result.offsets, 6) == []
    assert packed_height(FIRST_FIT_FAILS, result.offsets) == peak_live(FIRST_FIT_FAILS) == 6


def test_1_2_2_first_fit_packings_are_valid_or_absent():
    """On random cases at capacities from the live peak up: a first-fit
    packing is never invalid, and where it fails the packer still decides as
    CP-SAT does."""
    from tilefoundry.packing.greedy import first_fit

    rng = random.Random(11)
    for _ in range(30):
        buffers = _random_case(rng)
        for capacity in (peak_live(buffers), peak_live(buffers) + 2):
            offsets = first_fit(buffers, capacity)
            if offsets is not None:
                assert packing_faults(buffers, offsets, capacity) == []
            expected, _ = cp_sat_packing(buffers, capacity, 10)
            found = pack(buffers, capacity).status == "optimal"
            assert found == (expected in ("optimal", "feasible")), (buffers, capacity)


def test_1_2_2_first_fit_stops_at_its_deadline():
    # a passed deadline hands the question over (None), it never claims a fit
    from tilefoundry.packing.greedy import first_fit

    assert first_fit(EXAMPLE, 12, deadline=0.0) is None
    assert packing_faults(EXAMPLE, first_fit(EXAMPLE, 12, deadline=None), 12) == []


def test_1_2_2_reuse_finds_the_only_arrangement():
    # a [0,2) and b [2,4) never meet; c [0,4) meets both. 8 bytes: c takes one
    # 4-byte half, a and b the other (each alone with c, 4 + 4 = 8). Both the
    # packer (first fit settles it) and the search on its own find it.
    buffers = [Buffer(0, 2, 4), Buffer(2, 4, 4), Buffer(0, 4, 4)]
    search = Search(buffers, 8, sweep(buffers))
    assert search.run() == FOUND
    for offsets in (pack(buffers, 8).offsets, search.solution):
        a, b, c = offsets
        assert {a, c} == {0, 4} and {b, c} == {0, 4}


def test_1_2_2_search_proves_nothing_fits_when_a_section_overflows():
    # straight to the search (no shortcut): over [1, 2) 3 + 3 = 6 bytes > 5, so
    # the section check refuses every placement and the search ends exhausted
    buffers = [Buffer(0, 2, 3), Buffer(1, 3, 3)]
    assert Search(buffers, 5, sweep(buffers)).run() == EXHAUSTED


def test_1_2_2_time_is_a_limit_not_an_answer():
    # a search stopped by its deadline or node budget claims nothing either way
    search = Search(EXAMPLE, 12, sweep(EXAMPLE))
    assert search.run(deadline=0.0, slice_nodes=1) == DEADLINE
    assert Search(EXAMPLE, 12, sweep(EXAMPLE)).run(node_budget=1, slice_nodes=1) == ABORTED


def test_1_2_2_every_preordering_finds_the_example():
    for preordering in PREORDERINGS:
        search = Search(EXAMPLE, 12, sweep(EXAMPLE), preordering)
        assert search.run() == FOUND
        assert packing_faults(EXAMPLE, search.solution, 12) == []


def _random_case(rng):
    buffers = []
    for _ in range(rng.randint(3, 8)):
        start = rng.randint(0, 6)
        buffers.append(Buffer(start, rng.randint(start + 1, 8), rng.choice([1, 2, 3, 5])))
    return buffers


@pytest.mark.parametrize("seed", range(3))
def test_1_2_2_search_decides_as_cp_sat_does(seed):
    """Completeness: on small random cases, at capacities from one below the
    live peak up, the search finds a packing exactly when CP-SAT does."""
    rng = random.Random(seed)
    for _ in range(15):
        buffers = _random_case(rng)
        for capacity in (peak_live(buffers) - 1, peak_live(buffers), peak_live(buffers) + 1):
            search = Search(buffers, capacity, sweep(buffers), PREORDERINGS[seed % len(PREORDERINGS)])
            outcome = search.run()
            expected, _ = cp_sat_packing(buffers, capacity, 10)
            assert (outcome == FOUND) == (expected in ("optimal", "feasible")), (buffers, capacity)
            if outcome == FOUND:
                assert packing_faults(buffers, search.solution, capacity) == []


def test_1_2_2_a_real_minimalloc_case_settles_and_validates():
    from tilefoundry.packing.csv_format import read_buffers_csv

    buffers = [r.buffer for r in read_buffers_csv(str(MINIMALLOC / "J.1048576.csv"))]
    result = pack(buffers, 1048576, time_limit_s=60)
    assert result.status == "optimal" and result.method == "search"
    assert packing_faults(buffers, result.offsets, 1048576) == []
