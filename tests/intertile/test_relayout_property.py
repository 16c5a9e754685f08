"""§7.2 per-axis table vs brute-force region enumeration, two-axis pairs <= 32."""
from __future__ import annotations

from math import prod

from hypothesis import given, settings, strategies as st

from tilefoundry.intertile.classify import axis_row, classify_divisions, classify_tables
from tilefoundry.intertile.regions import enumerate_pair, two_axis_divisions
from tilefoundry.intertile.tables import from_divisions

DIVISIONS = two_axis_divisions(32)
division = st.sampled_from(DIVISIONS)


def test_relayout_7_2_there_are_119_two_axis_divisions():
    assert len(DIVISIONS) == 119 and len(DIVISIONS) ** 2 == 14161


@settings(max_examples=300, deadline=None)
@given(division, division)
def test_relayout_7_2_axis_table_equals_region_enumeration(src, dst):
    rows = [axis_row(f"a{k}", src[k], dst[k]) for k in range(2)]
    e = enumerate_pair(src, dst)
    assert max(e.fanin) == prod(r.fanin for r in rows)
    assert max(e.fanout) == prod(r.fanout for r in rows)
    assert e.components == prod(r.gcd for r in rows)
    assert e.uniform == all(r.uniform for r in rows)


@settings(max_examples=60, deadline=None)
@given(division, division)
def test_relayout_7_3_table_path_agrees_with_division_path(src, dst):
    s, d = {"a": src[0], "b": src[1]}, {"a": dst[0], "b": dst[1]}
    tables = from_divisions(s, d, 32)
    by_tables = classify_tables(tables)
    by_division = classify_divisions(s, d, 32)
    assert by_tables.components == enumerate_pair(src, dst).components
    if by_division.verdict == "op":
        assert by_tables.row == by_division.row
        assert by_tables.verdict in ("op", "no-op", "insufficient-information")


def test_relayout_7_2_shortcut_is_wrong_exactly_where_named():
    """Ns=6, Nd=4 scans [2,2,2,2] while 6 // 4 = 1; Ns=2, Nd=3 scans [1,2,1]."""
    assert axis_row("a", 6, 4).fanin_scan == (2, 2, 2, 2)
    assert axis_row("a", 2, 3).fanin_scan == (1, 2, 1)
    assert not axis_row("a", 2, 3).uniform
