"""Analysis §1.2.2: a boundary's bytes are the number of distinct elements its
access image reaches. The box shortcut (`point_counts.box_count`) must give
isl's own count on every set it accepts, and decline every set it cannot count
exactly (strides, triangles, unions with holes, free parameters)."""
import islpy as isl
import pytest

from tilefoundry.analysis.memory.point_counts import box_count, point_count

BOXES = [
    "{ [i, j] : 0 <= i < 4 and 0 <= j < 8 }",
    "{ [i] : 5 <= i <= 5 }",
    "[n] -> { [i, j] : n <= i < n + 4 and 0 <= j < 3 and n = 7 }",
    "{ [i, j] : 0 <= i < 3 and 0 <= j < 2 or 3 <= i < 5 and 0 <= j < 2 }",  # a box split in two
]
NOT_BOXES = [
    "{ [i] : 0 <= i < 8 and exists e : i = 2e }",
    "{ [i, j] : 0 <= i < 8 and 0 <= j <= i }",
    "{ [i] : 0 <= i < 3 or 5 <= i < 8 }",
    "[n] -> { [i] : n <= i < n + 4 and 0 <= n <= 3 }",  # n free: the span over n is 7, not 4
]


@pytest.mark.parametrize("text", BOXES)
def test_box_count_equals_isl_count(text):
    image = isl.Set(text)
    assert box_count(image) == image.count_val().to_python()


@pytest.mark.parametrize("text", NOT_BOXES)
def test_box_count_declines_what_is_not_a_fixed_box(text):
    assert box_count(isl.Set(text)) is None


@pytest.mark.parametrize("text", BOXES + NOT_BOXES[:3])
def test_count_is_isls_count_either_way(text):
    image = isl.Set(text)
    assert point_count(image) == image.count_val().to_python()


@pytest.mark.parametrize("text", ["{ [i] : 1 = 0 }", "{ [] : 1 = 0 }", "{ [i] : 0 <= i < 4 and i > 5 }"])
def test_an_empty_image_counts_zero(text):
    assert point_count(isl.Set(text)) == 0


def test_an_unbounded_image_is_refused_not_counted():
    from tilefoundry.errors import AnalysisError

    with pytest.raises(AnalysisError, match="not bounded"):
        point_count(isl.Set("{ [i] : i >= 0 }"))


@pytest.mark.parametrize("text", [
    "{ [i, j] : 2 <= 2i < 9 and -3 <= j <= 3 }",       # coefficients other than 1
    "[n, m] -> { [i] : n <= i < n + m and n = 2 and m = 5 }",
    "{ [i, j] : i = 3 and 0 <= j < 7 }",
])
def test_box_count_reads_bounds_exactly(text):
    image = isl.Set(text)
    assert box_count(image) == image.count_val().to_python()


def test_contradicting_parameters_count_zero():
    # isl states the empty set with no piece: the shortcut declines, the count is 0
    assert point_count(isl.Set("[n] -> { [i] : 0 <= i < 4 and n = 3 and n > 4 }")) == 0


def test_counts_are_kept_by_the_whole_printed_set(monkeypatch):
    """`point_count` answers once per printed set: sets that print alike are one set,
    and two sets that differ only in a bound or a parameter are two answers."""
    from tilefoundry.analysis.memory import point_counts

    monkeypatch.setattr(point_counts, "BY_TEXT", {})
    asked = []
    real = point_counts.count_uncached
    monkeypatch.setattr(point_counts, "count_uncached", lambda s: asked.append(s) or real(s))
    first = isl.Set("{ [i, j] : 0 <= i < 4 and 0 <= j < 8 }")
    same = isl.Set("{ [i, j] : 0 <= j <= 7 and i >= 0 and i <= 3 }")
    wider = isl.Set("{ [i, j] : 0 <= i < 5 and 0 <= j < 8 }")
    fixed = isl.Set("[n] -> { [i] : 0 <= i < n and n = 3 }")
    other = isl.Set("[n] -> { [i] : 0 <= i < n and n = 4 }")
    assert [point_count(s) for s in (first, same, wider, fixed, other)] == [32, 32, 40, 3, 4]
    assert len(asked) == 4  # `same` prints as `first` does


def test_the_count_memo_is_bounded(monkeypatch):
    from tilefoundry.analysis.memory import point_counts

    monkeypatch.setattr(point_counts, "BY_TEXT", {})
    monkeypatch.setattr(point_counts, "BY_TEXT_LIMIT", 3)
    for n in range(1, 8):
        assert point_count(isl.Set(f"{{ [i] : 0 <= i < {n} }}")) == n
        assert len(point_counts.BY_TEXT) <= 3
