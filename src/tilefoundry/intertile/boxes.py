"""Which boxes of one list overlap which of another, without comparing every pair.

Relayout tables of thousands of cores would make the pairwise test quadratic
(8,192 cores: 67 million box pairs). Boxes are bucketed by the elementary
cells of the axis that cuts finest; only boxes sharing a cell are compared, so
the work follows the overlaps that exist, not the product of the counts.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

Box = tuple[tuple[int, int], ...]


def overlap(a: Box, b: Box) -> bool:
    return all(lo < ohi and olo < hi for (lo, hi), (olo, ohi) in zip(a, b))


def _finest_axis(boxes: list[Box]) -> int:
    rank = len(boxes[0]) if boxes else 0
    return max(range(rank), key=lambda k: len({b[k][0] for b in boxes}), default=0)


def overlapping_pairs(first: list[Box], second: list[Box]) -> list[tuple[int, int]]:
    """Every (i, j) with first[i] overlapping second[j], sorted."""
    if not first or not second or not first[0]:
        return [(i, j) for i in range(len(first)) for j in range(len(second))
                if overlap(first[i], second[j])]
    k = _finest_axis(first + second)
    cuts = sorted({b[k][0] for b in first + second} | {b[k][1] for b in first + second})
    cells: dict[int, list[int]] = {}
    for i, box in enumerate(first):
        lo, hi = box[k]
        for cell in range(bisect_left(cuts, lo), bisect_right(cuts, hi) - 1):
            cells.setdefault(cell, []).append(i)
    pairs = []
    for j, box in enumerate(second):
        lo, hi = box[k]
        met = set()  # boxes of `first` already tested against this one
        for cell in range(bisect_left(cuts, lo), bisect_right(cuts, hi) - 1):
            for i in cells.get(cell, ()):
                if i not in met:
                    met.add(i)
                    if overlap(first[i], box):
                        pairs.append((i, j))
    return sorted(pairs)


def first_overlap_within(boxes: list[Box]) -> tuple[int, int] | None:
    """The first pair (i < j) of overlapping boxes in one list, or None."""
    found = [(i, j) for i, j in overlapping_pairs(boxes, boxes) if i < j]
    return found[0] if found else None


def count_overlapping(intervals_a: list[tuple[int, int]],
                      intervals_b: list[tuple[int, int]]) -> tuple[int, ...]:
    """For each interval of ``intervals_b``, how many of ``intervals_a`` it meets:
    those starting before its end, less those ending by its start (an interval
    that ends by b's start also starts before b's end, so the difference is exact)."""
    starts = sorted(lo for lo, _ in intervals_a)
    ends = sorted(hi for _, hi in intervals_a)
    return tuple(bisect_left(starts, hi) - bisect_right(ends, lo) for lo, hi in intervals_b)
