"""The timeline cut into sections (MiniMalloc's spatial view).

A section is a stretch of time over which the set of live buffers does not
change. Only the sections that begin where some buffer starts and end where
some buffer ends are kept: any other section's live set is a subset of a
neighbour's, so it can never be the one that overflows. Every buffer covers a
contiguous run of kept sections (``lo[b]`` to ``hi[b]``, half-open), so a
section's members are exactly the buffers whose run contains it, and two
buffers live at a common time share a kept section.

Nothing here is quadratic in memory beyond the neighbour lists themselves:
``pieces`` and ``table_cells`` size a problem by sorting alone, so a stated
limit can refuse it before any table is built (``solve.py``).
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

__all__ = ["Sweep", "sweep", "pieces", "table_cells"]


@dataclass(frozen=True)
class Sweep:
    lo: list          # per buffer: its first section
    hi: list          # per buffer: one past its last section
    sections: int     # how many kept sections
    overlaps: list    # per buffer: the other buffers live at some common time (numpy, ascending)
    cuts: list        # per boundary s|s+1: how many buffers span it


def _kept_sections(buffers):
    """(start, end) of every kept section, in time order."""
    times = sorted({b.start for b in buffers} | {b.end for b in buffers})
    starts = {b.start for b in buffers}
    ends = {b.end for b in buffers}
    return [(a, z) for a, z in zip(times, times[1:]) if a in starts and z in ends]


def sweep(buffers) -> Sweep:
    sections = _kept_sections(buffers)
    section_starts = [a for a, _ in sections]
    section_ends = [z for _, z in sections]
    lo = [bisect_left(section_starts, b.start) for b in buffers]
    hi = [bisect_left(section_ends, b.end + 1) for b in buffers]  # sections ending <= b.end
    cuts = [0] * max(len(sections) - 1, 0)
    for k in range(len(buffers)):
        for s in range(lo[k], hi[k] - 1):
            cuts[s] += 1
    return Sweep(lo, hi, len(sections), _overlaps(buffers), cuts)


def _overlaps(buffers) -> list:
    """Per buffer, the others live at some common time. In start order, those
    of buffer k started before k ends and after k's start less the longest
    lifetime: a window of the sorted starts, filtered by their ends."""
    starts = np.array([b.start for b in buffers], dtype=np.int64)
    ends = np.array([b.end for b in buffers], dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    by_start = starts[order]
    longest = int((ends - starts).max(initial=0))
    result = []
    for k in range(len(buffers)):
        first = int(np.searchsorted(by_start, starts[k] - longest, side="right"))
        last = int(np.searchsorted(by_start, ends[k], side="left"))
        window = order[first:last]
        result.append(np.sort(window[(ends[window] > starts[k]) & (window != k)]))
    return result


def pieces(buffers) -> list[list[int]]:
    """The buffers (indices, ascending: a search breaks ties by index, so the
    input order decides them) of each independent piece of the timeline, in
    time order: a new piece begins where a buffer starts no earlier than every
    buffer before it (in start order) has ended. No buffer spans such a time,
    which is exactly where no buffer spans the boundary of two kept sections."""
    order = sorted(range(len(buffers)), key=lambda k: buffers[k].start)
    result: list[list[int]] = []
    reach = None
    for k in order:
        if reach is None or buffers[k].start >= reach:
            result.append([])
            reach = buffers[k].end
        result[-1].append(k)
        reach = max(reach, buffers[k].end)
    return [sorted(piece) for piece in result]


def table_cells(buffers) -> tuple[int, int]:
    """(sections, cells) of the tables a search of these buffers holds:
    buffers x kept sections (membership and floors), plus one neighbour entry
    per ordered pair live at once; by sorting alone. Buffer k meets the others
    that start before it ends, less those that end by its start."""
    starts = np.sort(np.array([b.start for b in buffers], dtype=np.int64))
    ends = np.sort(np.array([b.end for b in buffers], dtype=np.int64))
    times = np.union1d(starts, ends)
    kept = int((np.isin(times[:-1], starts) & np.isin(times[1:], ends)).sum())
    mine_starts = np.array([b.start for b in buffers], dtype=np.int64)
    mine_ends = np.array([b.end for b in buffers], dtype=np.int64)
    meets = (np.searchsorted(starts, mine_ends, side="left")
             - np.searchsorted(ends, mine_starts, side="right") - 1)
    return kept, len(buffers) * kept + int(meets.sum())
