"""The independent check every packing passes before it is recorded.

It shares nothing with the search: it sweeps the timeline with an interval
sort of its own and compares address ranges directly, so a search bug cannot
hide in both places.
"""
from __future__ import annotations

import bisect
import heapq

__all__ = ["packing_faults"]


def packing_faults(buffers, offsets, capacity: int) -> list[str]:
    """Why this packing is not one (empty when it is): a buffer outside
    [0, capacity), or two buffers live at one time sharing a byte. Lifetimes
    and address ranges are half-open, so touching ones do not overlap."""
    from tilefoundry.arguments import checked, whole_at_least
    from tilefoundry.packing.problem import checked_buffers, checked_offsets

    who = "tilefoundry.packing.packing_faults"
    buffers, offsets = checked_buffers(buffers, who), checked_offsets(offsets, who)
    capacity = checked(who, "capacity", capacity, whole_at_least(0, "capacity=1024"))
    if len(offsets) != len(buffers):
        return [f"{len(offsets)} offsets for {len(buffers)} buffers"]
    faults = [f"buffer {k} at [{o}, {o + b.size}) lies outside [0, {capacity})"
              for k, (b, o) in enumerate(zip(buffers, offsets))
              if o < 0 or o + b.size > capacity]
    if _disjoint_while_live(buffers, offsets):
        return faults
    return faults + _shared_bytes(buffers, offsets)


def _disjoint_while_live(buffers, offsets) -> bool:
    """Whether the pairwise rule of ``_shared_bytes`` finds nothing, in
    O(n log n). While the live sized buffers are pairwise disjoint, a new one
    meets one of them iff it meets its neighbour below or above in address
    order. A zero-byte buffer at ``o`` meets a range [a, b) by that rule iff
    a < o < b, so zero-byte buffers are kept apart and looked up by address."""
    sized: list[tuple[int, int]] = []  # (offset, k) of live sized buffers, by offset
    points: list[tuple[int, int]] = []  # (offset, k) of live zero-byte buffers, by offset
    ending: list[tuple[int, int, int]] = []  # heap of (end, offset, k)
    for k in sorted(range(len(buffers)), key=lambda k: buffers[k].start):
        b, o = buffers[k], offsets[k]
        while ending and ending[0][0] <= b.start:
            _, gone, j = heapq.heappop(ending)
            held = sized if buffers[j].size else points
            del held[bisect.bisect_left(held, (gone, j))]
        if _meets_live(buffers, sized, points, o, b.size, k):
            return False
        held = sized if b.size else points
        held.insert(bisect.bisect_left(held, (o, k)), (o, k))
        heapq.heappush(ending, (b.end, o, k))
    return True


def _meets_live(buffers, sized, points, o: int, size: int, k: int) -> bool:
    i = bisect.bisect_left(sized, (o, k))
    if i and o < sized[i - 1][0] + buffers[sized[i - 1][1]].size and (
            size or sized[i - 1][0] < o):
        return True  # the range below reaches into this one
    if size == 0:
        return False  # a point meets no sized range above it, nor another point
    if i < len(sized) and sized[i][0] < o + size:
        return True  # the range above starts inside this one
    j = bisect.bisect_right(points, (o, len(buffers)))
    return j < len(points) and points[j][0] < o + size  # a point strictly inside


def _shared_bytes(buffers, offsets) -> list[str]:
    """Every pair of buffers live at one time that share bytes, named with the
    bytes and the time (the pairwise scan, run only once a fault is known)."""
    faults = []
    live: list[int] = []
    for k in sorted(range(len(buffers)), key=lambda k: buffers[k].start):
        b, o = buffers[k], offsets[k]
        live = [j for j in live if buffers[j].end > b.start]
        for j in live:
            if o < offsets[j] + buffers[j].size and offsets[j] < o + b.size:
                faults.append(f"buffers {j} and {k} share bytes "
                              f"[{max(o, offsets[j])}, {min(o + b.size, offsets[j] + buffers[j].size)}) "
                              f"while both live over [{b.start}, {min(b.end, buffers[j].end)})")
        live.append(k)
    return faults
