"""Nogood learning for both searches: the exact states whose subtree failed.

Under either search a node's subtree depends only on its unplaced buffers
(those of the piece it searches) and their ``min_off``, and under the
canonical search also on the rank key of the last placement (a subtree may
place nothing below it). Two different sets of placements often leave the
same such state: one buffer placed in a gap that another would have filled,
leaving the same tops; the lowest-point-first search reaches a state both by
a waste branch and by a placement. A state seen to fail fails again, and
under the canonical search it fails for any last key at or above the one it
failed with (a higher key only forbids more). So a repeat is answered at
once, and the search stays exact: a pruned node is one proved to fail.

Measured on bench/minimalloc_solve.py (nodes to settle, one search alone):
the lowest-point-first searches of case D 5,252 -> 2,750, 7,998 -> 3,475 and
3,648 -> 3,016, of case K 3,058 -> 2,001; the canonical search of E's second
piece 17,660 -> 2,539; the other cases little changed (A under the first
canonical ordering 4,921 -> 3,696).

The key is the whole state, never a hash of it, so a hit is a proof. The
table holds at most ``BUDGET_BYTES`` of keys per search; past that it is
emptied and refilled (the recent failures are the ones a search meets again).
"""
from __future__ import annotations

import numpy as np

__all__ = ["FailedStates", "BUDGET_BYTES"]

# Key bytes one search may hold: a state of a few hundred unplaced buffers
# takes about 6 bytes each, so tens of thousands of failures fit.
BUDGET_BYTES = 16 * 1024 * 1024


class FailedStates:
    """Failed states of one search: key -> the lowest last key it failed with."""

    def __init__(self, buffers: int, capacity: int):
        self.index_type = np.int16 if buffers < 2 ** 15 else np.int32
        self.offset_type = np.int32 if capacity < 2 ** 31 else np.int64
        self.table: dict[bytes, int] = {}
        self.held = 0
        self.hits = 0

    def key(self, left, min_off) -> bytes:
        """The state: which buffers are unplaced and the lowest offset of each."""
        return (left.astype(self.index_type).tobytes()
                + min_off[left].astype(self.offset_type).tobytes())

    def failed(self, key: bytes, last_key: int = 0) -> bool:
        known = self.table.get(key)
        if known is not None and known <= last_key:
            self.hits += 1
            return True
        return False

    def add(self, key: bytes, last_key: int = 0) -> None:
        known = self.table.get(key)
        if known is not None:
            self.table[key] = min(known, last_key)
            return
        if self.held + len(key) > BUDGET_BYTES:
            self.table.clear()
            self.held = 0
        self.table[key] = last_key
        self.held += len(key)
