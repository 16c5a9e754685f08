"""Issue 42, the sequence kind's space (docs/place.md, "sequence"): each piece
runs over its own count of CTAs (the placed Module declares the largest, a
piece of fewer runs on a slice of the level), and a GEMV piece may split its K
(split-K: a Partial over the split axis that a reshard completes), so a GEMV of
few output columns still fills the units. Small shapes: tests/place/data/
sequence_split.py (an 8192-column GEMV, and one of 16 x 661 columns read from it,
which splits over 16 CTAs at most)."""
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.placer import place
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.placed_program import fits_level, on_level
from tilefoundry.placer.sequence import piece_text, sequence_text
from tilefoundry.placer.spaces import budget_of, gemv_piece_points

SELECTION = f"{Path(__file__).parent / 'data' / 'sequence_split.py'}:SplitLayer.project"
NARROW = 16 * 661  # the narrow GEMV's columns (tests/place/data/sequence_split.py)


@pytest.fixture(scope="module")
def kernel():
    module, function = api.load(SELECTION)
    return read_kernel(module, function)


@pytest.fixture(scope="module")
def placed():
    return place(SELECTION, time_limit=30, progress=False)


def _priced(kernel, tmp_path, name: str, text: str) -> float:
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    return price(str(path), objective_of(kernel.target)).objective_ns


def _fitting(kernel, tmp_path, name: str, text: str) -> float:
    """The price of a point, or infinity where a value is past a level's capacity."""
    from tilefoundry.errors import AnalysisError

    try:
        return _priced(kernel, tmp_path, name, text)
    except AnalysisError as exc:
        assert "more than the" in str(exc), exc
        return float("inf")


def _gemvs(kernel) -> list:
    return [i for i, piece in enumerate(kernel.pieces) if piece.kind == "gemv"]


def test_gemvs_that_want_different_cta_counts_get_them(kernel, placed, tmp_path):
    """The narrow GEMV's 16 columns no longer hold the wide one to 16 CTAs: each
    GEMV runs over the count it was priced best at, the smaller on a slice of
    the level, checked; and the whole prices below the same sequence with the
    wide GEMV held to the narrow one's count (one count for every kernel)."""
    wide, narrow = _gemvs(kernel)
    choice = placed.best.choice
    assert placed.best.checked and not placed.bugs
    assert choice.count_of(wide) != choice.count_of(narrow)
    assert choice.ctas == max(choice.count_of(i) for i in range(len(kernel.pieces)) if i not in choice.fused)
    assert max(choice.count_of(wide), choice.count_of(narrow)) > 16
    assert ")[0:" in placed.best.text  # the smaller kernel on the level's first CTAs
    # the wide GEMV held to the narrow one's count, K tile 64, no split-K
    held = choice.count_of(narrow)
    counts = tuple(held if i == wide else choice.count_of(i) for i in range(len(kernel.pieces)))
    tiles = ((1, 64),) + choice.tiles[1:]
    one_count = type(choice)(choice.ctas, tiles, choice.seeds, choice.cores, choice.fused, choice.kinds, counts)
    alone = _priced(kernel, tmp_path, "held", sequence_text(kernel, one_count))
    assert placed.best.figures[placed.objective] < alone


def test_a_split_k_gemv_piece_is_priced_below_the_unsplit_one_where_columns_are_few(kernel, tmp_path):
    """A GEMV of 16 x 661 columns unsplit runs on at most 16 of the device's 132 SMs; split
    over K as well it runs on more, each summing its own partial, and the
    estimate prices the best split-K point below the best unsplit one."""
    (narrow,) = [i for i in _gemvs(kernel) if kernel.pieces[i].lines[0][2] == NARROW]
    budget = budget_of(kernel.target, "cta")
    points = gemv_piece_points(kernel.pieces[narrow], budget)
    split = [p for p in points if p[1][0] > 1]
    assert split, "the space holds split-K points of the narrow GEMV"
    piece_k = kernel.pieces[narrow].k
    unsplit = [(ctas, (1, tile)) for ctas in (1, 2, 4, 8, 16) for tile in (16, 32, 64, 128) if piece_k % tile == 0]
    best_split = min(_priced(kernel, tmp_path, f"s{n}", piece_text(kernel, narrow, c, s))
                     for n, (c, s) in enumerate(split))
    best_unsplit = min(_fitting(kernel, tmp_path, f"u{n}", piece_text(kernel, narrow, c, s))
                       for n, (c, s) in enumerate(unsplit))
    assert best_split < best_unsplit < float("inf")  # an unsplit point fits: the comparison is real


def test_a_split_k_gemv_piece_is_checked_and_a_wrong_split_is_caught(kernel, placed, tmp_path):
    """The split-K piece sums its split axis before the cast (a Partial over
    `ks` that the reshard completes) and the answer agrees with the logical
    kernel; the same program with each split reading the wrong rows of its
    window (the weight window's axes taken in the other order) is refused."""
    import re

    from tilefoundry.placer.driver import _checked

    (narrow,) = [i for i in _gemvs(kernel) if kernel.pieces[i].lines[0][2] == NARROW]
    split_k, tile = placed.best.choice.tiles[_gemvs(kernel).index(narrow)]
    assert split_k > 1 and placed.best.checked and not placed.bugs
    text = placed.best.text
    assert f"tf.reduce(acc{narrow}_0, (0,), False, ReduceKind.SUM)" in text
    window = f"tf.reshape(w_narrow[kk, :], ({split_k}, {tile}, {NARROW}))"
    assert window in text
    wrong = text.replace(window, f"tf.transpose(tf.reshape(w_narrow[kk, :], ({tile}, {split_k}, {NARROW})), (1, 0, 2))")
    path = tmp_path / "wrong.py"
    path.write_text(wrong, encoding="utf-8")
    why = _checked(api.load(SELECTION), kernel, str(path), seed=0)
    assert why is not None and re.search(r"output '\S+' differs", why)


def test_a_piece_on_a_slice_of_the_level_is_priced_as_alone(kernel, tmp_path):
    """A piece of fewer CTAs than the level runs on its first CTAs
    (``Mesh(...)[0:a]``): the estimate prices that kernel over the slice's CTAs,
    as the piece alone over a level of its own size, so pricing each piece alone
    chooses what the whole runs."""
    wide = _gemvs(kernel)[0]
    setting = (2, 128)
    own = piece_text(kernel, wide, 64, setting)
    level = own.replace('Topology("cta", 64)', 'Topology("cta", 256)')
    lines = level.splitlines()
    at = next(i for i, line in enumerate(lines) if "with Mesh(" in line)
    lines[at] = on_level(lines[at], 256)
    assert lines[at].strip() == 'with Mesh(("cta",), (128, 2), ("n", "ks"))[0:32] as g:'
    sliced = "\n".join(lines) + "\n"
    assert _priced(kernel, tmp_path, "own", own) == _priced(kernel, tmp_path, "sliced", sliced)


def test_a_mesh_whose_trailing_axes_do_not_divide_the_level_is_no_slice_of_it():
    """A slice cuts the leading axis of ``(level / rest, *rest)``: the trailing
    axes' product must divide the level (the search keeps such pieces off it)."""
    assert fits_level((16, 8), 128) and fits_level((80,), 128)
    assert not fits_level((4, 3), 128) and not fits_level((256,), 128)
    with pytest.raises(ValueError, match="no slice"):
        on_level('with Mesh(("cta",), (4, 3), ("a", "b")) as g:', 128)
    unchanged = 'with Mesh(("cta",), (16, 8), ("n", "ks")) as g:'
    assert on_level(unchanged, 128) == unchanged


def test_the_level_holds_every_piece_on_a_slice_of_it():
    """The level a sequence declares is one every chosen piece is a slice of: a
    flash decoding over (8, 32) CTAs is no slice of a level of 392 (32 does not
    divide it), so a GEMV's best over 392 CTAs gives way to its point over 256,
    and where no count holds a point of every piece there is no level at all."""
    from types import SimpleNamespace

    from tilefoundry.placer.sequence_search import _ranked

    kernel = SimpleNamespace(pieces=(SimpleNamespace(kind="gemv"), SimpleNamespace(kind="attention")))
    gemv = [(5.0, 0, 392, (1, 64)), (6.0, 1, 256, (1, 64))]
    flash = [(3.0, 0, 256, (8, 64))]
    level, ranked = _ranked(kernel, [gemv, flash])
    assert level == 256 and ranked == [[(6.0, 256, (1, 64))], [(3.0, 256, (8, 64))]]
    assert _ranked(kernel, [gemv[:1], flash]) == (None, None)


def test_a_gemv_piece_may_take_its_whole_k_in_one_tile_with_no_loop(kernel, tmp_path):
    """A CTA's whole share of K in one tile where it fits smem (a router's 2048
    rows of one column per CTA): the point is in the space, written with no K
    loop, and it loads and prices below the same piece walked in two trips."""
    wide = _gemvs(kernel)[0]
    piece = kernel.pieces[wide]
    points = gemv_piece_points(piece, budget_of(kernel.target, "cta"))
    whole = [(ctas, setting) for ctas, setting in points if setting == (1, piece.k)]
    assert whole, "the whole-K tile is in the space"
    ctas, setting = whole[0]
    text = piece_text(kernel, wide, ctas, setting)
    assert "for kk in tile(" not in text
    two_trips = piece_text(kernel, wide, ctas, (1, piece.k // 2))
    assert "for kk in tile(" in two_trips
    assert _priced(kernel, tmp_path, "whole", text) < _priced(kernel, tmp_path, "two", two_trips)
