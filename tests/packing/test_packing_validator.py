"""The independent validator (analysis.packing.packing_faults): lifetimes and
address ranges are half-open, so packings that touch are accepted and ones
that overlap by a single byte or a single time step are rejected."""
from __future__ import annotations

from tilefoundry.packing import Buffer, packing_faults

A = Buffer(0, 4, 8)


def test_touching_in_address_is_accepted():
    # A holds [0, 8), B [8, 16): adjacent, no shared byte
    assert packing_faults([A, Buffer(2, 6, 8)], [0, 8], 16) == []


def test_touching_in_time_is_accepted():
    # A lives over [0, 4), B from 4: never live together, so they may share bytes
    assert packing_faults([A, Buffer(4, 6, 8)], [0, 0], 8) == []


def test_one_shared_byte_is_rejected():
    faults = packing_faults([A, Buffer(2, 6, 8)], [0, 7], 16)
    assert faults == ["buffers 0 and 1 share bytes [7, 8) while both live over [2, 4)"]


def test_one_shared_time_step_is_rejected():
    faults = packing_faults([A, Buffer(3, 6, 8)], [0, 0], 8)
    assert faults == ["buffers 0 and 1 share bytes [0, 8) while both live over [3, 4)"]


def test_a_buffer_past_the_capacity_by_one_byte_is_rejected():
    assert packing_faults([A], [1], 8) == ["buffer 0 at [1, 9) lies outside [0, 8)"]


def test_a_negative_offset_is_rejected():
    assert packing_faults([A], [-1], 16) == ["buffer 0 at [-1, 7) lies outside [0, 16)"]


def test_a_missing_offset_is_rejected():
    assert packing_faults([A, A], [0], 16) == ["1 offsets for 2 buffers"]


def test_the_sweep_agrees_with_the_pairwise_rule_on_random_packings():
    """packing_faults answers a valid packing by a sorted sweep (neighbours in
    address order) and only falls back to the pairwise scan once a fault is
    known: both must call the same packings valid, zero-byte buffers included."""
    import random

    from tilefoundry.packing.validate import _disjoint_while_live, _shared_bytes

    rng = random.Random(7)
    for _ in range(3000):
        buffers, offsets = [], []
        for _ in range(rng.randint(1, 7)):
            start = rng.randint(0, 5)
            buffers.append(Buffer(start, start + rng.randint(1, 4), rng.choice([0, 0, 1, 2, 3])))
            offsets.append(rng.randint(0, 6))
        assert _disjoint_while_live(buffers, offsets) == (not _shared_bytes(buffers, offsets))
