"""Issue 22 item 3: the packer's answer does not depend on units. Times count
only by their order and sizes by their common factor, so a file restated in
other units (sizes and capacity x 2^36, lifetimes shifted by -2^63, values past
int64) gets the same answer; what stays past the exact range after that is
refused in one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from tilefoundry.errors import PackingInputError
from tilefoundry.packing.csv_format import read_buffers_csv
from tilefoundry.packing.problem import Buffer
from tilefoundry.packing.solve import MAX_UNITS, pack, restated
from tilefoundry.packing.validate import packing_faults

CASE = Path(__file__).resolve().parents[2] / "bench" / "data" / "minimalloc" / "input.12.csv"


def _buffers():
    return [row.buffer for row in read_buffers_csv(str(CASE))]


@pytest.mark.parametrize("scale,shift", [(2**36, 0), (1, -2**63), (2**36, -2**63), (2**70, 10**30)])
@pytest.mark.parametrize("capacity", [12, 11])
def test_answer_is_the_same_in_any_units(scale, shift, capacity):
    buffers = _buffers()
    plain = pack(buffers, capacity, time_limit_s=5)
    moved = [Buffer(b.start + shift, b.end + shift, b.size * scale) for b in buffers]
    scaled = pack(moved, capacity * scale, time_limit_s=5)
    assert scaled.status == plain.status
    if plain.offsets:
        assert packing_faults(moved, scaled.offsets, capacity * scale) == []
        assert all(o % scale == 0 for o in scaled.offsets)


def test_restated_question_is_in_smallest_units():
    """Times from the first start (-5 -> 0); sizes 6, 4 and capacity 13 over
    the common factor 2 are 3, 2 and 6 (13 // 2). A span past the exact range
    becomes the endpoints' ranks."""
    small, unit, capacity = restated([Buffer(-5, 100, 6), Buffer(50, 7000, 4)], 13)
    assert (unit, capacity) == (2, 6)
    assert small == [Buffer(0, 105, 3), Buffer(55, 7005, 2)]
    wide, _, _ = restated([Buffer(-2**63, 0, 1), Buffer(-1, 2**63, 1)], 2)
    assert wide == [Buffer(0, 2, 1), Buffer(1, 3, 1)]


def test_past_the_exact_range_is_refused_in_one_line():
    """Coprime sizes leave no common factor: a question that needs a search
    (live bytes 2M+1 fit, the three side by side do not) over a capacity of
    2^62 units or more cannot be solved exactly in 64-bit arithmetic."""
    m = MAX_UNITS
    big = [Buffer(0, 2, m + 1), Buffer(1, 3, m), Buffer(2, 4, m + 1)]
    with pytest.raises(PackingInputError, match=r"past the packer's exact range of 2\^62 units"):
        pack(big, 2 * m + 1, time_limit_s=1)


@pytest.mark.parametrize("raw", ["1_0", "+5", "\uff15", "1e3", " 0x10"])
def test_one_integer_rule_ascii_digits_only(tmp_path, raw):
    """The CSV takes what --dim takes: ASCII digits (and a minus), nothing
    Python's int() would also read."""
    from tilefoundry.packing.csv_format import parse_buffers_csv

    data = f"id,lower,upper,size\na,0,2,{raw}\n".encode()
    with pytest.raises(PackingInputError, match="is not an integer; give size as a base-10 integer of ASCII"):
        parse_buffers_csv(data, "b.csv")


def test_an_integer_past_its_digit_limit_is_refused_by_rule():
    from tilefoundry.packing.csv_format import parse_buffers_csv
    from tilefoundry.text_input import MAX_DIGITS

    data = f"id,lower,upper,size\na,0,2,{'9' * (MAX_DIGITS + 1)}\n".encode()
    with pytest.raises(PackingInputError, match=f"has {MAX_DIGITS + 1:,} digits, past the {MAX_DIGITS:,}"):
        parse_buffers_csv(data, "b.csv")
