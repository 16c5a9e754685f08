"""Per-unit figures of a relinearised layout (companions §2.6 regroup,
analysis §1.2.1 per-unit quantities): a layout position that straddles two
logical axes is counted once, split between them, never once in each.

p23's accumulator fragment lays a (16, 8) tile over domain (2, 4, 8, 2) with
position 1 split over the 4 lanes of ``x`` and position 2 over the 8 of ``y``.
Read row-major, the domain's digit weights are 64, 16, 2, 1 and the tile's
are 8 (rows) and 1 (columns): position 2 (weights 2 to 16) holds the upper
part of the columns (extent 4, weights 2 to 8) and the lowest part of the rows
(extent 2, weights 8 to 16).
A lane holds 1 of position 1's 4 values and 1 of position 2's 8, so it holds
2 * 1 * 1 * 2 = 4 elements: 128 elements over 32 lanes.
"""
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS
from tilefoundry.semantics.canonical import (
    regroup, relinearised_held_constraints, relinearised_local_extents, straddles,
)

SHAPE, DOMAIN = (16, 8), (2, 4, 8, 2)


def test_companions_2_6_the_fragment_regroup_straddles():
    groups = regroup(SHAPE, DOMAIN)
    assert groups == ((0, 1, 2), (2, 3))
    assert straddles(groups)
    assert not straddles(regroup((16, 16), (2, 4, 2, 8, 2)))


@pytest.mark.parametrize("local, expected", [
    ((2, 1, 1, 2), (2, 2)),   # 4 lanes on position 1, 8 on position 2: 4 elements
    ((2, 4, 8, 2), (16, 8)),  # nothing split: the whole tile
    ((2, 4, 4, 2), (8, 8)),   # 4 of position 2's 8: all 4 column values, 1 of its 2 row values
    ((2, 4, 2, 2), (8, 4)),   # 2 of 8: 2 of the 4 column values, 1 row value
])
def test_companions_2_6_a_straddling_position_is_shared_not_doubled(local, expected):
    extents = relinearised_local_extents(SHAPE, DOMAIN, local)
    assert extents == expected
    # the unit's elements are the product of its positions' local extents
    count = 1
    for e in local:
        count *= e
    assert extents[0] * extents[1] == count


def test_relinearised_held_constraints_count_the_units_elements():
    import islpy as isl

    cons = relinearised_held_constraints(SHAPE, DOMAIN, (2, 1, 1, 2))
    held = isl.Set("{ [o0, o1] : 0 <= o0 < 16 and 0 <= o1 < 8 and " + " and ".join(cons) + " }")
    assert held.count_val().to_python() == 4


def _summary(selector: str, topology: str) -> dict:
    import os

    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        module, function = load_selection(f"p23_mma_fragment.py:{selector}")
        result = analyze(module, function, analysis=("compute-cost", "memory"), level=topology)
        return {line.split()[1]: line for line in render_analysis(result).summary}
    finally:
        os.chdir(cwd)


def test_analysis_1_2_1_per_lane_figures_of_p23():
    """CFragment per lane: 4 f32 products (128 / 32), 4 f32 = 16 B read from gmem
    and 16 B written. WarpTile per lane: the MMA's 4096 bf16 flops shared by 32
    lanes (each accumulator element takes all k = 16: 2 * 4 * 16 = 128); A's
    fragment is 8 bf16 (16 B), B's 4 bf16 (8 B), the bias 4 f32 (16 B): 40 B read
    from gmem, the 4-element f32 result (16 B) written."""
    c = _summary("CFragment", "thread")
    assert "flops=f32:128@4" in c["compute-cost"]
    assert "gmem:r512/w512@r16/w16" in c["traffic"]
    w = _summary("WarpTile", "thread")
    assert "flops=bf16:4096@128,f32:128@4" in w["compute-cost"]
    assert "gmem:r1280/w512@r40/w16" in w["traffic"]
