"""The packing search's stated memory limit (TILEFOUNDRY_MAX_PACKING_CELLS):
a piece whose tables would pass it is refused in one line naming the limit and
the variable, before any table is built; the sizing by sorting alone agrees
with the tables a search builds."""
from __future__ import annotations

import random

import pytest

from tilefoundry.packing import Buffer, pack
from tilefoundry.packing.search import Tables
from tilefoundry.packing.sections import pieces, sweep, table_cells
from tilefoundry.cli.main import main
from tilefoundry.limits import LimitError

# first fit cannot pack these at 6 bytes (test_packing_statuses.FIRST_FIT_FAILS)
FIRST_FIT_FAILS = [Buffer(0, 5, 2), Buffer(0, 1, 2), Buffer(0, 1, 2), Buffer(1, 3, 3)]


def _hostile(copies):
    """FIRST_FIT_FAILS under ``copies`` 7-byte buffers live all along: first
    fit stacks those first and fails above them as before, and the search
    would need a neighbour entry for every pair (all meet)."""
    return FIRST_FIT_FAILS + [Buffer(0, 5, 7)] * copies, 6 + 7 * copies


def _random_case(rng):
    buffers = []
    for _ in range(rng.randint(1, 12)):
        start = rng.randint(0, 15)
        buffers.append(Buffer(start, rng.randint(start + 1, 18), rng.randint(1, 4)))
    return buffers


@pytest.mark.parametrize("seed", range(3))
def test_sizing_by_sorting_agrees_with_the_tables_built(seed):
    rng = random.Random(seed)
    for _ in range(30):
        buffers = _random_case(rng)
        layout = sweep(buffers)
        tables = Tables(layout, 100, len(buffers))
        built = tables.member.size + sum(len(js) for js in tables.neighbours)
        assert table_cells(buffers) == (layout.sections, built)


@pytest.mark.parametrize("seed", range(3))
def test_pieces_are_the_cuts_where_no_buffer_spans_a_section_boundary(seed):
    rng = random.Random(50 + seed)
    for _ in range(30):
        buffers = _random_case(rng)
        layout = sweep(buffers)
        bounds = [0] + [s + 1 for s, n in enumerate(layout.cuts) if n == 0] + [layout.sections]
        expected = [[k for k in range(len(buffers)) if a <= layout.lo[k] < z]
                    for a, z in zip(bounds, bounds[1:])]
        assert pieces(buffers) == expected


def test_a_piece_past_the_limit_is_refused_naming_the_variable(monkeypatch):
    # 4 buffers x 2 sections, plus 8 neighbour entries (the long one meets
    # the three others, the two short ones each other): 16 cells
    monkeypatch.setenv("TILEFOUNDRY_MAX_PACKING_CELLS", "15")
    with pytest.raises(LimitError) as refused:
        pack(FIRST_FIT_FAILS, 6)
    assert str(refused.value) == (
        "the packing search of 4 buffers over 2 sections (one piece of the timeline) needs 16 "
        "table cells (limit 15 cells of one piece's packing-search tables); raise the limit with "
        "TILEFOUNDRY_MAX_PACKING_CELLS=N if this input is meant")
    monkeypatch.setenv("TILEFOUNDRY_MAX_PACKING_CELLS", "16")
    assert pack(FIRST_FIT_FAILS, 6).method == "search"  # at the limit: searched as before


def test_first_fit_settles_before_the_limit_is_asked(monkeypatch):
    # room to spare: no search, so no table is needed however low the limit
    monkeypatch.setenv("TILEFOUNDRY_MAX_PACKING_CELLS", "1")
    assert pack(FIRST_FIT_FAILS, 8).method == "greedy"


def test_the_default_limit_refuses_a_hostile_file_in_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("TILEFOUNDRY_MAX_PACKING_CELLS", raising=False)
    buffers, capacity = _hostile(2100)
    path = tmp_path / "hostile.csv"
    path.write_text("id,lower,upper,size\n" + "".join(
        f"b{k},{b.start},{b.end},{b.size}\n" for k, b in enumerate(buffers)))
    code = main(["pack", str(path), "--capacity", str(capacity)])
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    sections, cells = table_cells(buffers)
    assert captured.err.splitlines() == [
        f"tilefoundry: error: the packing search of 2,104 buffers over {sections:,} sections (one piece "
        f"of the timeline) needs {cells:,} table cells (limit 4,194,304 cells of one piece's "
        "packing-search tables); raise the limit with TILEFOUNDRY_MAX_PACKING_CELLS=N if this "
        "input is meant"]
