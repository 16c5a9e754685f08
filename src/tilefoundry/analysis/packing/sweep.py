"""The timeline cut into sections (MiniMalloc's spatial view).

A section is a stretch of time over which the set of live buffers does not
change. Only the sections that begin where some buffer starts and end where
some buffer ends are kept: any other section's live set is a subset of a
neighbour's, so it can never be the one that overflows. Every buffer covers a
contiguous run of kept sections (``lo[b]`` to ``hi[b]``, half-open), so a
section's members are exactly the buffers whose run contains it.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

__all__ = ["Sweep", "sweep"]


@dataclass(frozen=True)
class Sweep:
    lo: list          # per buffer: its first section
    hi: list          # per buffer: one past its last section
    members: list     # per section: the buffers live over it
    overlaps: list    # per buffer: the other buffers live at some common time
    cuts: list        # per boundary s|s+1: how many buffers span it

    @property
    def sections(self) -> int:
        return len(self.members)


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
    members = [[] for _ in sections]
    for k, b in enumerate(buffers):
        for s in range(lo[k], hi[k]):
            members[s].append(k)
    starts = np.array([b.start for b in buffers], dtype=np.int64)
    ends = np.array([b.end for b in buffers], dtype=np.int64)
    live_together = (starts[:, None] < ends[None, :]) & (starts[None, :] < ends[:, None])
    np.fill_diagonal(live_together, False)
    overlaps = [np.flatnonzero(row).tolist() for row in live_together]
    cuts = [0] * max(len(sections) - 1, 0)
    for k in range(len(buffers)):
        for s in range(lo[k], hi[k] - 1):
            cuts[s] += 1
    return Sweep(lo, hi, members, overlaps, cuts)
