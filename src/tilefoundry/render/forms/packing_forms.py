"""What ``tilefoundry pack`` prints: the summary line, the JSON document
(``pack.schema.json``) and the time x address drawing (matplotlib, optional)."""
from __future__ import annotations

from tilefoundry.errors import TileFoundryError

__all__ = ["summary_line", "pack_document", "plot_packing", "require_matplotlib", "PLOTS_EXTRA"]

PLOTS_EXTRA = "pip install 'tilefoundry[plots]'"


def _height(rows, offsets):
    return max((o + r.buffer.size for r, o in zip(rows, offsets)), default=0) if offsets else None


def summary_line(path, rows, capacity, result, live_peak, seconds) -> str:
    """``# pack ...`` with the status, the packing's peak (one past its highest
    byte; ``-`` when there is none), the live-bytes lower bound and the time."""
    peak = _height(rows, result.offsets)
    return (f"# pack file={path} buffers={len(rows)} capacity={capacity} status={result.status} "
            f"peak={'-' if peak is None else peak} live-peak={live_peak} "
            f"settled-by={result.method} seconds={seconds:.2f}")


def pack_document(path, rows, capacity, result, live_peak, seconds) -> dict:
    from tilefoundry.render.json_contract import stamp

    placed = bool(result.offsets)
    return stamp({
        "file": str(path),
        "capacity": capacity,
        "buffers": len(rows),
        "status": result.status,
        "settled_by": result.method,
        "searched": result.searched,
        "nodes": result.nodes,
        "peak": _height(rows, result.offsets),
        "live_peak": live_peak,
        "seconds": round(seconds, 3),
        "offsets": [{"id": r.id, "lower": r.buffer.start, "upper": r.buffer.end,
                     "size": r.buffer.size, "offset": o}
                    for r, o in zip(rows, result.offsets)] if placed else [],
    }, "pack")


def require_matplotlib():
    """matplotlib's pyplot with a file-only backend, or one line saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise TileFoundryError(f"--plot needs matplotlib, which is not installed; {PLOTS_EXTRA}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_packing(rows, offsets, capacity, out_path, title="") -> None:
    """One rectangle per buffer: lifetime along x, bytes along y; the capacity
    is the dashed line. The rectangles are one collection (a patch each took
    about 60 s for 100,000 buffers); the limit ``PLOT_BUFFERS`` bounds the
    drawing, and a value past floating point's range cannot be drawn."""
    from tilefoundry.limits import check

    check("PLOT_BUFFERS", len(rows), f"pack --plot: {len(rows):,} buffers to draw")
    check_drawable(rows, capacity)
    import numpy as np
    from matplotlib.collections import PolyCollection

    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(10, 6))
    colours = plt.get_cmap("tab20")
    starts = np.array([r.buffer.start for r in rows], dtype=float)
    ends = np.array([r.buffer.end for r in rows], dtype=float)
    lows = np.array(offsets, dtype=float)
    highs = lows + np.array([r.buffer.size for r in rows], dtype=float)
    corners = np.stack([np.stack([starts, lows], 1), np.stack([ends, lows], 1),
                        np.stack([ends, highs], 1), np.stack([starts, highs], 1)], 1)
    # past VECTOR_BUFFERS the rectangles are one image inside the SVG: the SVG
    # writer spends ~60 us of Python per path (100,000 buffers took ~20 s and
    # wrote 20 MB), while Agg draws them all in C; axes, labels and the capacity
    # line stay vector either way
    many = len(rows) > VECTOR_BUFFERS
    ax.add_collection(PolyCollection(corners, facecolors=colours(np.arange(len(rows)) % 20),
                                     edgecolors="face" if many else "black", linewidths=0 if many else 0.3,
                                     rasterized=many))
    ax.set_xlim(float(starts.min()) if len(rows) else 0.0, float(ends.max()) if len(rows) else 1.0)
    ax.set_ylim(0, max(float(capacity), 1.0))
    ax.axhline(float(capacity), color="black", linestyle="--", linewidth=0.8)
    ax.set_xlabel("time")
    ax.set_ylabel("address (bytes)")
    ax.set_title(title.replace("$", r"\$"))  # a file name is text, not mathtext
    fig.savefig(out_path, format="svg", dpi=RASTER_DPI)
    plt.close(fig)


#: buffers drawn as SVG paths; more are drawn as one image at RASTER_DPI (see plot_packing)
VECTOR_BUFFERS = 5_000
RASTER_DPI = 200

_DRAWABLE = 1e300  # past this a coordinate is inf in floating point


def check_drawable(rows, capacity) -> None:
    from tilefoundry.errors import PackingInputError

    values = [capacity] + [v for r in rows for v in (r.buffer.start, r.buffer.end, r.buffer.size)]
    past = next((v for v in values if abs(v) > _DRAWABLE), None)
    if past is not None:
        raise PackingInputError(
            f"pack --plot: the value {str(past)[:20]}... ({len(str(abs(past)))} digits) is past the "
            "range a drawing can place (about 1e300); the packing itself is answered without --plot")
