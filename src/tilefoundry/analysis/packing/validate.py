"""The independent check every packing passes before it is recorded.

It shares nothing with the search: it sweeps the timeline with an interval
sort of its own and compares address ranges directly, so a search bug cannot
hide in both places.
"""
from __future__ import annotations

__all__ = ["packing_faults"]


def packing_faults(buffers, offsets, capacity: int) -> list[str]:
    """Why this packing is not one (empty when it is): a buffer outside
    [0, capacity), or two buffers live at one time sharing a byte. Lifetimes
    and address ranges are half-open, so touching ones do not overlap."""
    buffers = list(buffers)
    offsets = list(offsets)
    if len(offsets) != len(buffers):
        return [f"{len(offsets)} offsets for {len(buffers)} buffers"]
    faults = [f"buffer {k} at [{o}, {o + b.size}) lies outside [0, {capacity})"
              for k, (b, o) in enumerate(zip(buffers, offsets))
              if o < 0 or o + b.size > capacity]
    by_start = sorted(range(len(buffers)), key=lambda k: buffers[k].start)
    live: list[int] = []
    for k in by_start:
        b, o = buffers[k], offsets[k]
        live = [j for j in live if buffers[j].end > b.start]
        for j in live:
            if o < offsets[j] + buffers[j].size and offsets[j] < o + b.size:
                faults.append(f"buffers {j} and {k} share bytes "
                              f"[{max(o, offsets[j])}, {min(o + b.size, offsets[j] + buffers[j].size)}) "
                              f"while both live over [{b.start}, {min(b.end, buffers[j].end)})")
        live.append(k)
    return faults
