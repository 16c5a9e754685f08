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
    is the dashed line."""
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(10, 6))
    colours = plt.get_cmap("tab20")
    for k, (row, offset) in enumerate(zip(rows, offsets)):
        b = row.buffer
        ax.add_patch(plt.Rectangle((b.start, offset), b.end - b.start, b.size,
                                   facecolor=colours(k % 20), edgecolor="black", linewidth=0.3))
    lows = [r.buffer.start for r in rows] or [0]
    highs = [r.buffer.end for r in rows] or [1]
    ax.set_xlim(min(lows), max(highs))
    ax.set_ylim(0, max(capacity, 1))
    ax.axhline(capacity, color="black", linestyle="--", linewidth=0.8)
    ax.set_xlabel("time")
    ax.set_ylabel("address (bytes)")
    ax.set_title(title)
    fig.savefig(out_path, format="svg")
    plt.close(fig)
