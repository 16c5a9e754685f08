"""The independent validator (analysis.packing.packing_faults): lifetimes and
address ranges are half-open, so packings that touch are accepted and ones
that overlap by a single byte or a single time step are rejected."""
from __future__ import annotations

from tilefoundry.analysis.packing import Buffer, packing_faults

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
