"""What a ``tile`` loop's windows are (authoring.md §5.5, §5.6), stated once for
the front end (a static extent, refused at the ``for``) and the program check
(an extent a bound dimension fixes, refused at the view's binding).

A window of ``for w in tile(E, step)`` is ``[w, w + step)`` for every trip
``w = 0, step, 2 * step, ...`` below ``E``: the loop tiles ``[0, E)`` only when
``step`` divides ``E``. A last window ending past ``E`` covers elements the
extent does not have, so a count over the trips (``ceil(E / step)`` full
windows) would price work the program cannot do.
"""
from __future__ import annotations

__all__ = ["tile_overhang", "tile_overhang_refusal"]


def tile_overhang(extent: int, step: int) -> tuple[int, int] | None:
    """``(w, w + step)``, the last window of ``tile(extent, step)``, when it ends
    past ``extent``; None when the windows tile ``[0, extent)`` exactly."""
    if extent <= 0 or extent % step == 0:
        return None
    last = (extent - 1) // step * step
    return last, last + step


def tile_overhang_refusal(extent: int, step: int, spelled: str | None = None,
                          bound: str = "") -> str | None:
    """The one-line refusal (without its location) of ``tile(extent, step)``
    whose last window ends past ``extent``, or None. ``spelled`` is the extent
    as authored (a dimension's name) and ``bound`` the binding that fixed it
    (``"depth=1000"``), both stated when the extent was symbolic."""
    window = tile_overhang(extent, step)
    if window is None:
        return None
    start, end = window
    whole = extent - extent % step
    multiples = " or ".join(str(m) for m in (whole, whole + step) if m > 0)
    if whole:
        rest = (f"for k in range(0, {whole}, {step}) reading x[..., k : k + {step}], "
                f"then x[..., {whole}:{extent}] for the rest")
    else:
        rest = f"no loop, x[..., 0:{extent}]"
    head = f"tile({spelled if spelled is not None else extent}, {step})"
    if bound:
        head += f" with {bound}"
    return (f"{head}: the last window [{start}, {end}) ends past the extent {extent}, since a "
            f"window of tile(E, step) is [w, w + step) (authoring §5.6); use an extent "
            f"divisible by {step} ({multiples}), or a range loop with a sized slice ({rest})")
