"""Relayout classifier (seed §7): catalogue, worked example, guards, end to end."""
from __future__ import annotations

import pytest

from tilefoundry.intertile.classify import classify_divisions, classify_tables
from tilefoundry.intertile.realize import realize, reproduces
from tilefoundry.intertile.tables import TableError, from_divisions, parse_tables


def _strided(n: int, cpr: int) -> list[list[int]]:
    return [[k + i * n for i in range(cpr)] for k in range(n)]


def _contiguous(n: int, cpr: int) -> list[list[int]]:
    return [[k * cpr + i for i in range(cpr)] for k in range(n)]


# §7.5: (pattern, files, src, dst, destination cores per region, row, op, dims,
# components, max fanin). Selection (Stcdp_QC_38) is tested separately.
CATALOGUE = [
    ("P01_P02", 3, {"in": 2, "out": 8, "x": 2}, {}, 32, "4", "inter_tile_gather",
     {"gather_dimensions": ["in", "out", "x"]}, 1, 32),
    ("P03", 6, {"mb": 8, "in": 4}, {"mb": 8}, 4, "4", "inter_tile_gather",
     {"gather_dimensions": ["in"]}, 8, 4),
    ("P04", 15, {"mb": 32}, {"mb": 8}, 4, "4", "inter_tile_gather",
     {"gather_dimensions": ["mb"]}, 8, 4),
    ("P06_P14_Exx2", 6, {"mb": 8, "out": 4}, {"mb": 32}, 1, "3", "inter_tile_all_to_all",
     {"split_dimensions": ["mb"], "concat_dimensions": ["out"]}, 8, 4),
    ("P06_P14_Stcdp", 3, {"x": 8, "mb": 4}, {"x": 32}, 1, "3", "inter_tile_all_to_all",
     {"split_dimensions": ["x"], "concat_dimensions": ["mb"]}, 8, 4),
    ("P07", 1, {"mb": 16}, {"mb": 8, "out": 4}, 1, "3", "inter_tile_all_to_all",
     {"split_dimensions": ["out"], "concat_dimensions": ["mb"]}, 8, 2),
    ("P09_P12", 3, {"mb": 16}, {"mb": 8}, 4, "4", "inter_tile_gather",
     {"gather_dimensions": ["mb"]}, 8, 2),
    ("P13", 1, {"in": 32}, {}, 28, "4", "inter_tile_gather",
     {"gather_dimensions": ["in"]}, 1, 32),
    ("scatter_Mul", 12, {"y": 16}, {"y": 32}, 1, "2", "inter_tile_scatter",
     {"scatter_dimensions": ["y"]}, 16, 1),
]
FILES = [pytest.param(entry, k, id=f"{entry[0]}-file{k}")
         for entry in CATALOGUE for k in range(entry[1])]


def _tables(entry, k):
    _, _, src, dst, cpr, *_ = entry
    n_dst = 1
    for v in dst.values():
        n_dst *= v
    holders = (_strided if k % 2 else _contiguous)(n_dst, cpr)
    return from_divisions(src, dst, 32, dst_holders=holders)


def test_relayout_7_5_catalogue_has_51_files():
    assert len(FILES) + 1 == 51  # + the one selection file


@pytest.mark.parametrize("entry,k", FILES)
def test_relayout_7_5_catalogue_row_op_and_dims(entry, k):
    name, _, src, dst, cpr, row, op, dims, comps, fanin = entry
    cls = classify_tables(_tables(entry, k))
    assert (cls.verdict, cls.row, cls.op, cls.dims) == ("op", row, op, dims)
    assert cls.components == comps
    assert cls.as_json()["max_fanin"] == fanin
    assert classify_divisions(src, dst, 32).row == row


@pytest.mark.parametrize("entry,k", FILES)
def test_relayout_7_5_catalogue_op_verifies_and_reproduces_destination(entry, k):
    tables = _tables(entry, k)
    cls = classify_tables(tables)
    assert realize(tables, cls).diagnostics == []
    assert all(reproduces(tables, cls).values())


def test_relayout_7_4_worked_example_8_groups():
    tables = from_divisions({"mb": 8, "out": 4}, {"mb": 32}, 32)
    cls = classify_tables(tables).as_json()
    assert (cls["row"], cls["op"], cls["M"], cls["K"]) == ("3", "inter_tile_all_to_all", 4, 4)
    assert cls["split_dimensions"] == ["mb"] and cls["concat_dimensions"] == ["out"]
    assert len(cls["groups"]) == 8
    assert cls["groups"][1] == {"producers": [4, 5, 6, 7], "consumers": [4, 5, 6, 7]}
    rows = {r["axis"]: r for r in cls["axes"]}
    assert rows["mb"] == {"axis": "mb", "Ns": 8, "Nd": 32, "relation": "refined", "fanin": 1,
                          "fanout": 4, "uniform": True, "gcd": 8}
    assert rows["out"]["relation"] == "coarsened" and rows["out"]["fanin"] == 4


def test_relayout_7_2_p07_m4_k2_sides_not_swapped():
    cls = classify_tables(from_divisions({"mb": 16}, {"mb": 8, "out": 4}, 32))
    assert (cls.M, cls.K) == (4, 2)
    assert all(len(g["producers"]) == 2 and len(g["consumers"]) == 4 for g in cls.groups)


def test_relayout_7_4_global_test_row_4_for_different_axes():
    """{Lk:32} -> {H:8}: both sets non-empty but prod(Nd) = 8 != 32 -> gather."""
    tables = from_divisions({"Lk": 32}, {"H": 8}, 32)
    cls = classify_tables(tables)
    assert (cls.row, cls.op, cls.local_select) == ("4", "inter_tile_gather", ["H"])
    assert all(reproduces(tables, cls).values())


def test_relayout_7_3_row_1_broadcast_p10_p11():
    tables = from_divisions({"h": 8}, {"h": 8}, 32)
    cls = classify_tables(tables)
    assert (cls.row, cls.op) == ("1", "inter_tile_consume")
    assert cls.groups[2] == {"producers": [2], "consumers": [8, 9, 10, 11]}
    assert all(reproduces(tables, cls).values())


def test_relayout_7_3_row_1_no_op_when_every_region_is_own():
    cls = classify_tables(from_divisions({"h": 8, "w": 4}, {"h": 8, "w": 4}, 32))
    assert (cls.verdict, cls.row, cls.op) == ("no-op", "1", None)


def test_relayout_review_note_p08_owner_permutation_is_consume():
    """P08 as the review note reads it: same 4x8 pieces, owners transposed."""
    src = [[8 * j + m] for j in range(4) for m in range(8)]
    dst = [[j + 4 * m] for j in range(4) for m in range(8)]
    tables = from_divisions({"J": 4, "M": 8}, {"J": 4, "M": 8}, 32, src, dst)
    cls = classify_tables(tables)
    assert (cls.row, cls.op, len(cls.groups)) == ("1", "inter_tile_consume", 32)
    assert all(reproduces(tables, cls).values())


def test_relayout_7_3_guard_not_a_work_division_pair_diagonal():
    data = {"cores": 2, "tensor": {"X": 2, "Y": 2},
            "source_regions": [{"box": {"X": [0, 1], "Y": [0, 1]}, "holders": [0]},
                               {"box": {"X": [1, 2], "Y": [1, 2]}, "holders": [1]}],
            "destination": {"0": {"X": 0, "Y": 0}, "1": {"X": 1, "Y": 1}}}
    cls = classify_tables(parse_tables(data))
    assert (cls.verdict, cls.row) == ("not-a-work-division-pair", "guard")


def test_relayout_comment_bbcc830_selection_guard_stcdp_qc_38():
    src = [{"box": {"mb": [64 * m, 64 * m + 64], "out": [8 * o, 8 * o + 8]},
            "holders": [4 * m + o]} for m in range(8) for o in range(4)]
    dst = [{"box": {"mb": [511, 512], "out": [k, k + 1]}, "holders": [k]} for k in range(32)]
    data = {"cores": 32, "tensor": {"mb": 512, "out": 32},
            "source_regions": src, "destination_regions": dst}
    cls = classify_tables(parse_tables(data))
    rows = {r.axis: r for r in cls.axes}
    assert rows["mb"].Nd == 1 and rows["out"].Nd == 32  # distinct slices, not extents
    assert (cls.verdict, cls.row) == ("selection", "guard")
    assert "cover 32 of 16384" in cls.reason


def test_relayout_7_3_guard_ragged_axis():
    cls = classify_tables(from_divisions({"a": 6}, {"a": 4}, 8))
    assert cls.verdict == "insufficient-information" and "ragged" in cls.reason


def test_relayout_7_3_rows_2_to_4_refuse_several_source_holders():
    src = [[k, k + 8] for k in range(8)]
    cls = classify_tables(from_divisions({"y": 8}, {"y": 16}, 16, src_holders=src))
    assert cls.verdict == "insufficient-information" and "several holders" in cls.reason


def test_relayout_1_2_non_monotone_core_order_verifies_but_misdelivers():
    """The kt04 trap through the classifier: a legal op, wrong blocks."""
    dst = [[k] for k in range(4)]
    src = [[1], [0], [2], [3]]  # region 0 on core 1, region 1 on core 0
    tables = from_divisions({"a": 4}, {}, 4, src_holders=src,
                            dst_holders=[[0, 1, 2, 3]])
    cls = classify_tables(tables)
    assert realize(tables, cls).diagnostics == []
    assert not any(reproduces(tables, cls).values())
    del dst


@pytest.mark.parametrize("data,phrase", [
    ({"cores": 4, "source_regions": [{"box": {"a": [0, 2]}, "holders": [0]},
                                     {"box": {"a": [1, 4]}, "holders": [1]}],
      "tensor": {"a": 4}, "destination": {"0": {}}}, "overlap"),
    ({"cores": 4, "tensor": {"a": 4},
      "source_regions": [{"box": {"a": [0, 2]}, "holders": [0]},
                         {"box": {"a": [2, 4]}, "holders": [0]}],
      "destination": {"0": {}}}, "core 0 holds two regions"),
    ({"cores": 4, "tensor": {"a": 4}, "source": {"0": {"a": 9}}, "destination": {"0": {}}},
     "out of range"),
    ({"cores": 4, "source": {"0": {"a": -1}}, "destination": {"0": {}}}, "slice index -1"),
    ({"cores": 4, "source": {"7": {"a": 0}}, "destination": {"0": {}}}, "core 7 is out of range"),
    ({"cores": 4, "destination": {"0": {}}}, "exactly one of 'source'"),
    ({"cores": 4, "source": {"0": {"a": 1}, "1": {}}, "destination": {"0": {}}},
     "overlapping"),
])
def test_relayout_bad_tables_one_line_errors(data, phrase):
    with pytest.raises(TableError) as exc:
        parse_tables(data, "t.json")
    msg = str(exc.value)
    assert phrase in msg and "\n" not in msg and msg.startswith("t.json")
