"""The number of points of an access image (analysis §1.2.2; companions §4.3):
a box's is read off its bounds, any other set's is isl's count. Answers are kept
per printed set for the whole process (docs/architecture.md): each is a pure
function of the text, and a program's thousands of images are a few tens of sets."""
from __future__ import annotations

from tilefoundry.errors import AnalysisError

__all__ = ["point_count", "count_uncached", "box_count", "leaf_indices", "by_text"]


# Counts by the image's printed text: a program's thousands of access images
# are a few tens of distinct sets (a window repeats across calls, levels and
# sweep points), and isl prints a set in a fraction of the time it takes to
# read its bounds. The text names the whole set, so the count is its own.
BY_TEXT: dict = {}
BY_TEXT_LIMIT = 8192


def by_text(image, question, answer):
    """``answer(image)``, asked once per (printed set, question)."""
    key = (image.to_str(), question)
    found = BY_TEXT.get(key)
    if found is None:
        found = answer(image)
        if len(BY_TEXT) >= BY_TEXT_LIMIT:
            BY_TEXT.clear()  # bounded: a hostile program cannot grow it without end
        BY_TEXT[key] = found
    return found


def point_count(image) -> int:
    """The number of points of ``image``, asked of isl once per printed set."""
    return by_text(image, "count", count_uncached)


def count_uncached(image) -> int:
    in_box = box_count(image)  # before the general checks: a box answers them too
    if in_box is not None:
        return in_box
    if image.is_empty():
        return 0
    if not image.is_bounded():
        raise AnalysisError("an access image is not bounded, so it cannot be counted")
    return int(image.count_val().to_python())


def box_count(image) -> int | None:
    """The number of points of a parameter-fixed box, read off its
    constraints as a product of extents; None when ``image`` is not one
    basic set of single-dimension bounds. Nearly every access image is a box
    (a tile's window), and isl's general counting costs ~50x the extents'
    product, which dominated the memory family on the model zoo."""
    import islpy as isl

    fixed = []
    for k in range(image.dim(isl.dim_type.param)):
        value = image.plain_get_val_if_fixed(isl.dim_type.param, k)
        if not value.is_int():
            return None  # a free parameter: the bounds are not numbers
        fixed.append(value.to_python())
    pieces = image.get_basic_sets()
    if len(pieces) > 1:
        pieces = image.coalesce().get_basic_sets()  # a box stated as adjacent pieces
    if len(pieces) != 1 or pieces[0].dim(isl.dim_type.div):
        return None
    rank = pieces[0].dim(isl.dim_type.set)
    low, high = [None] * rank, [None] * rank
    for constraint in pieces[0].get_constraints():
        bound = _single_dim_bound(constraint, fixed, rank)
        if bound is None:
            return None
        dim, coeff, rest, equal = bound
        if dim is None:  # parameters only: true or false for the fixed values
            if (rest != 0) if equal else (rest < 0):
                return 0
            continue
        if equal:
            if rest % coeff:
                return 0
            low[dim] = _tighter(low[dim], -rest // coeff, max)
            high[dim] = _tighter(high[dim], -rest // coeff, min)
        elif coeff > 0:  # coeff * o + rest >= 0: o >= ceil(-rest / coeff)
            low[dim] = _tighter(low[dim], -(rest // coeff), max)
        else:  # o <= floor(rest / -coeff)
            high[dim] = _tighter(high[dim], rest // -coeff, min)
    points = 1
    for lo, hi in zip(low, high):
        if lo is None or hi is None:
            return None
        points *= max(0, hi - lo + 1)
    return points


def _single_dim_bound(constraint, fixed: list, rank: int):
    """(dim or None, coefficient, the rest with parameters fixed, equality) of
    a constraint on at most one set dimension; None when it ties two."""
    import islpy as isl

    rest = constraint.get_constant_val().to_python()
    for k, value in enumerate(fixed):
        rest += constraint.get_coefficient_val(isl.dim_type.param, k).to_python() * value
    dim = coeff = None
    for k in range(rank):
        a = constraint.get_coefficient_val(isl.dim_type.set, k).to_python()
        if a:
            if dim is not None:
                return None
            dim, coeff = k, a
    return dim, coeff, rest, constraint.is_equality()


def _tighter(current, candidate, pick):
    return candidate if current is None else pick(current, candidate)


def leaf_indices(image, n: int) -> tuple:
    """The leaf positions (first coordinate) an image of a tuple reaches."""
    return by_text(image, ("leaves", n), lambda found: _reached_leaves(found, n))


def _reached_leaves(image, n: int) -> tuple:
    import islpy as isl

    if image.is_empty():
        return ()
    dims = image.dim(isl.dim_type.set)
    first = image.project_out(isl.dim_type.set, 1, dims - 1) if dims > 1 else image
    return tuple(k for k in range(n) if not first.intersect(isl.Set(f"{{ [{k}] }}")).is_empty())
