"""SVG charts of one analysis (docs/views.md), made with matplotlib, the
optional ``plots`` extra (``pip install 'tilefoundry[plots]'``).

- ``roofline_svg``: every statement a point (arithmetic intensity against
  attained FLOP/s, from the report's flops, bandwidth-level bytes and roofline
  ideal-ns) under the target's compute ceilings (one per published dtype peak)
  and its bandwidth slope.
- ``timeline_svg``: the trace's occurrences as bars, one row per track.

The figures are the JSON report's; only the ceilings are read off the target
(ThroughputFacts). Charts are deterministic: no date, fixed element ids.
"""
from __future__ import annotations

import io

from tilefoundry.analysis.roofline import NS_PER_SECOND
from tilefoundry.errors import AnalysisError

__all__ = ["PLOTS_HINT", "have_matplotlib", "roofline_points", "roofline_svg",
           "roofline_svg_of", "timeline_svg"]

PLOTS_HINT = "charts need matplotlib: pip install 'tilefoundry[plots]'"


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(width: float, height: float):
    # a bare Figure, never pyplot: no window, no global figure state
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(figure, salt: str) -> str:
    import matplotlib

    out = io.StringIO()
    # text stays text (small, selectable); ids are fixed by the salt so the
    # same analysis gives the same file and two charts on one page never clash
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        figure.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def roofline_points(report: dict, bandwidth_level: str) -> list[dict]:
    """(label, flops, bytes, ideal_ns) of every call that did arithmetic and
    was bounded; bytes are the bandwidth level's only, as the bound divides."""
    points = []
    for entry in report["calls"]:
        flops = sum(entry.get("compute-cost", {}).get("flops", {}).values())
        moved = entry.get("traffic", {}).get("whole", {}).get(bandwidth_level, {})
        ideal = entry.get("roofline", {}).get("ideal_ns", 0)
        if flops and ideal:
            points.append({"label": entry["value"], "flops": flops,
                           "bytes": moved.get("read", 0) + moved.get("write", 0),
                           "ideal_ns": ideal, "bound_by": entry["roofline"]["bound_by"]})
    return points


def _ceilings(throughput):
    peaks = [(dtype, rate) for dtype, rate in throughput.peak_flops_per_second if rate]
    return peaks, throughput.memory_bandwidth_bytes_per_second


def roofline_svg(report: dict, throughput) -> str:
    """The roofline chart of one report at ``throughput``'s ceilings."""
    points = roofline_points(report, throughput.bandwidth_level)
    peaks, bandwidth = _ceilings(throughput)
    finite = [p["flops"] / p["bytes"] for p in points if p["bytes"]]
    low = min(finite + [1.0]) / 10
    high = max(finite + [max((r for _, r in peaks), default=1) / (bandwidth or 1)]) * 10
    figure = _figure(7.5, 4.8)
    axes = figure.subplots()
    axes.set_xscale("log")
    axes.set_yscale("log")
    for dtype, rate in peaks:
        knee = rate / bandwidth if bandwidth else low
        axes.plot([knee, high], [rate, rate], linewidth=1, label=f"{dtype} peak")
    if bandwidth:
        top = max((r for _, r in peaks), default=bandwidth * high)
        axes.plot([low, top / bandwidth], [bandwidth * low, top], color="black", linewidth=1.5,
                  label=f"{throughput.bandwidth_level} bandwidth")
    for bound, marker in (("memory", "o"), ("compute", "s"), ("balanced", "D"), ("unrated", "x")):
        chosen = [p for p in points if p["bound_by"] == bound]
        if chosen:
            xs = [p["flops"] / p["bytes"] if p["bytes"] else high / 2 for p in chosen]
            ys = [p["flops"] * NS_PER_SECOND / p["ideal_ns"] for p in chosen]
            axes.scatter(xs, ys, marker=marker, s=22, label=f"{bound}-bound statement", zorder=3)
    axes.set_xlim(low, high)
    axes.set_xlabel(f"arithmetic intensity (FLOP per {throughput.bandwidth_level} byte; "
                    f"none moved: right edge)")
    axes.set_ylabel("attained FLOP/s (flops / ideal-ns)")
    axes.set_title(f"roofline of {report['module']}::{report['function']} on {report['target']}")
    axes.grid(True, which="major", linewidth=0.3)
    axes.legend(fontsize=7, loc="lower right")
    return _svg(figure, "roofline")


def roofline_svg_of(result, rendering) -> str:
    """`--plot FILE`: the roofline chart of one analysed result."""
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.target.facts import ThroughputFacts

    if not have_matplotlib():
        raise AnalysisError(f"--plot: {PLOTS_HINT}")
    try:
        throughput = result.module.resolve_target().get_facts(ThroughputFacts)
    except TileFoundryError as exc:
        raise AnalysisError(f"--plot: {exc}") from None
    return roofline_svg(rendering.report, throughput)


MAX_DRAWN_TRIPS = 512  # beyond this a loop's later trips are its shaded slice only


def _bars(trace: dict) -> tuple[dict, dict]:
    """(track -> occurrence bars, track -> loop spans), in µs. A body
    occurrence is drawn at every trip, ``ts + t * stride``."""
    bars: dict = {}
    spans: dict = {}
    for event in trace["traceEvents"]:
        if event["ph"] != "X" or event["pid"] == 1:
            continue
        key = (event["pid"], event["tid"])
        if event["name"].startswith("loop "):
            spans.setdefault(key, []).append((event["ts"], event["dur"]))
            continue
        trips = event["args"]["trips"]
        stride = event["args"]["stride_ns"] / 1000
        drawn = trips if trips <= MAX_DRAWN_TRIPS else 1
        bars.setdefault(key, []).extend((event["ts"] + t * stride, event["dur"]) for t in range(drawn))
    return bars, spans


def timeline_svg(trace: dict) -> str:
    """The trace's occurrences as bars (µs), one row per process/thread
    track; a loop's span is shaded behind its body."""
    names: dict = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "M":
            names[(event["pid"], event["tid"] if event["name"] == "thread_name" else None)] = \
                event["args"]["name"]
    bars, spans = _bars(trace)
    keys = sorted(set(bars) | set(spans))
    figure = _figure(7.5, 1.2 + 0.45 * max(len(keys), 1))
    axes = figure.subplots()
    for index, key in enumerate(keys):
        if key in spans:
            axes.broken_barh(spans[key], (index - 0.45, 0.9), facecolor="#dddddd", zorder=1)
        axes.broken_barh(bars.get(key, []), (index - 0.35, 0.7), edgecolor="white", linewidth=0.2,
                         zorder=2)
    axes.set_yticks(range(len(keys)),
                    [f"{names.get((k[0], None), k[0])} / {names.get(k, k[1])}" for k in keys])
    axes.invert_yaxis()
    axes.set_xlabel("time (µs, CTA-local wave 0; grey: a loop's span)")
    axes.set_title("timeline")
    axes.grid(True, axis="x", linewidth=0.3)
    return _svg(figure, "timeline")
