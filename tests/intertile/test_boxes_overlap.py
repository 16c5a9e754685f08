"""intertile/boxes.py (issue 11: classification not quadratic in cores): the
bucketed overlap search finds exactly the pairs the every-pair test finds, and
the bisection count equals the direct 1-D count."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tilefoundry.intertile.boxes import (count_overlapping, first_overlap_within, overlap,
                                         overlapping_pairs)

interval = st.tuples(st.integers(0, 12), st.integers(1, 6)).map(lambda t: (t[0], t[0] + t[1]))


def boxes(rank):
    return st.lists(st.tuples(*[interval] * rank), max_size=12)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.integers(1, 3).flatmap(lambda r: st.tuples(boxes(r), boxes(r))))
def test_overlapping_pairs_equal_every_pair_test(pair):
    first, second = pair
    expected = [(i, j) for i in range(len(first)) for j in range(len(second))
                if overlap(first[i], second[j])]
    assert overlapping_pairs(first, second) == expected


@settings(max_examples=100, deadline=None, derandomize=True)
@given(boxes(2))
def test_first_overlap_within_is_the_first_overlapping_pair(side):
    pairs = [(i, j) for i in range(len(side)) for j in range(i + 1, len(side))
             if overlap(side[i], side[j])]
    assert first_overlap_within(side) == (pairs[0] if pairs else None)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(interval, max_size=10), st.lists(interval, max_size=10))
def test_count_overlapping_equals_the_direct_count(a, b):
    direct = tuple(sum(lo < ohi and olo < hi for lo, hi in a) for olo, ohi in b)
    assert count_overlapping(a, b) == direct
