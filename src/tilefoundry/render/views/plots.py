"""SVG charts of one analysis (docs/views.md), made with matplotlib, the
optional ``plots`` extra (``pip install 'tilefoundry[plots]'``).

- ``roofline_svg``: every statement a point (arithmetic intensity against
  attained FLOP/s, from the report's flops, bandwidth-level bytes and roofline
  ideal-ns), the whole kernel a star, a statement moving no bandwidth-level
  byte counted in the legend (its intensity is not finite), under the target's
  compute ceilings (one per published peak rate:
  dtypes sharing a rate share one line, labelled with all of them) and its
  bandwidth slope; statements that fall on one spot (within 3% on both axes)
  carry their count beside the marker (``x3``).
- ``timeline_svg``: the trace's occurrences as bars, one row per track, wave 0
  repeated for every wave (the first MAX_DRAWN_WAVES, the axis saying which);
  each loop's span shaded and labelled with the trace's own name (``loop kk x16``).

The figures are the JSON report's; only the ceilings are read off the target
(ThroughputFacts). Charts are deterministic: no date, fixed element ids.
"""
from __future__ import annotations

import io

from tilefoundry.analysis.roofline import NS_PER_SECOND
from tilefoundry.errors import AnalysisError, UsageError

__all__ = ["PLOTS_HINT", "PLOT_FORMATS", "ceilings", "coinciding", "have_matplotlib", "kernel_point", "line_chart_svg",
           "plot_format", "roofline_chart_of", "roofline_points", "roofline_svg", "timeline_caption",
           "timeline_svg", "waves_drawn"]

PLOTS_HINT = "charts need matplotlib: pip install 'tilefoundry[plots]'"
#: what ``--plot FILE`` writes, named by FILE's extension
PLOT_FORMATS = ("svg", "png", "pdf")


def plot_format(path: str) -> str:
    """The format ``--plot path`` names by its extension (any case), or one
    line refusing it (exit 2, before any analysis runs)."""
    import os

    extension = os.path.splitext(path)[1]
    if extension[1:].lower() in PLOT_FORMATS:
        return extension[1:].lower()
    named = f"its extension {extension} names no chart format" if extension else \
        "it has no extension to name the chart format"
    raise UsageError(f"--plot {path}: {named}; --plot writes FILE.svg, FILE.png or FILE.pdf "
                     "(matplotlib), so name FILE with one of those")


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


def _binary(figure, fmt: str) -> bytes:
    """A PNG or PDF of ``figure``, dated nowhere (the same analysis, the same bytes)."""
    out = io.BytesIO()
    metadata = {"CreationDate": None} if fmt == "pdf" else {}
    figure.savefig(out, format=fmt, metadata=metadata, dpi=150)
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


def kernel_point(report: dict, bandwidth_level: str) -> dict | None:
    """The whole kernel as one point: the function's flops over its
    bandwidth-level bytes, at flops / its roofline ideal-ns (None without
    arithmetic, bytes or a bound)."""
    totals = report.get("totals") or {}
    flops = sum(totals.get("flops", {}).values())
    moved = totals.get("traffic", {}).get(bandwidth_level, {})
    moved = moved.get("read", 0) + moved.get("write", 0)
    ideal = (report["function_records"].get("roofline") or {}).get("ideal_ns", 0)
    if not (flops and moved and ideal):
        return None
    return {"label": f"{report['module']}::{report['function']}", "flops": flops, "bytes": moved,
            "ideal_ns": ideal, "bound_by": report["function_records"]["roofline"]["bound_by"]}


def ceilings(throughput):
    """([(label, rate)] one per distinct published peak rate, fastest first,
    the label naming every dtype at that rate; the bandwidth). Two dtypes at
    one rate (bf16 and f16 on a Hopper) would draw one line over the other."""
    by_rate: dict = {}
    for dtype, rate in throughput.peak_flops_per_second:
        if rate:
            by_rate.setdefault(rate, []).append(dtype)
    peaks = [(" = ".join(dtypes), rate) for rate, dtypes in sorted(by_rate.items(), reverse=True)]
    return peaks, throughput.memory_bandwidth_bytes_per_second


SAME_SPOT = 1.03  # points within 3% on both (log) axes draw one over the other


def coinciding(points: list, xs: list, ys: list) -> list[tuple[float, float, list]]:
    """(x, y, labels) of every spot two or more points fall on: each point
    joins the first spot, in report order, within SAME_SPOT of it on both axes."""
    spots: list = []  # [x, y, labels]
    for point, x, y in zip(points, xs, ys):
        spot = next((s for s in spots if max(s[0], x) <= SAME_SPOT * min(s[0], x)
                     and max(s[1], y) <= SAME_SPOT * min(s[1], y)), None)
        if spot is None:
            spots.append([x, y, [point["label"]]])
        else:
            spot[2].append(point["label"])
    return [(x, y, labels) for x, y, labels in spots if len(labels) > 1]


def roofline_svg(report: dict, throughput) -> str:
    """The roofline chart of one report at ``throughput``'s ceilings."""
    return _svg(_roofline_figure(report, throughput), "roofline")


def _roofline_figure(report: dict, throughput):
    """Statements that move no bandwidth-level bytes have no finite intensity:
    they are counted in the legend, not pinned to an edge (issue 40 item 4);
    the whole kernel is one more point, a star."""
    level = throughput.bandwidth_level
    every = roofline_points(report, level)
    points = [p for p in every if p["bytes"]]
    unplaced = len(every) - len(points)
    kernel = kernel_point(report, level)
    peaks, bandwidth = ceilings(throughput)
    finite = [p["flops"] / p["bytes"] for p in points + ([kernel] if kernel else [])]
    low = min(finite + [1.0]) / 10
    high = max(finite + [max((r for _, r in peaks), default=1) / (bandwidth or 1)]) * 10
    figure = _figure(7.5, 4.8)
    axes = figure.subplots()
    axes.set_xscale("log")
    axes.set_yscale("log")
    for dtypes, rate in peaks:
        knee = rate / bandwidth if bandwidth else low
        axes.plot([knee, high], [rate, rate], linewidth=1, label=f"{dtypes} peak")
        axes.annotate(dtypes, (high, rate), xytext=(-2, 2), textcoords="offset points",
                      ha="right", va="bottom", fontsize=6)
    if bandwidth:
        top = max((r for _, r in peaks), default=bandwidth * high)
        axes.plot([low, top / bandwidth], [bandwidth * low, top], color="black", linewidth=1.5,
                  label=f"{level} bandwidth")
    xs = [p["flops"] / p["bytes"] for p in points]
    ys = [p["flops"] * NS_PER_SECOND / p["ideal_ns"] for p in points]
    for bound, marker in (("memory", "o"), ("compute", "s"), ("balanced", "D"), ("unrated", "x")):
        chosen = [i for i, p in enumerate(points) if p["bound_by"] == bound]
        if chosen:
            axes.scatter([xs[i] for i in chosen], [ys[i] for i in chosen], marker=marker, s=22,
                         label=f"{bound}-bound statement", zorder=3)
    for x, y, labels in coinciding(points, xs, ys):  # one marker stands for several
        axes.annotate(f"x{len(labels)}", (x, y), xytext=(4, 4), textcoords="offset points",
                      fontsize=7, zorder=4)
    if kernel is not None:
        axes.scatter([kernel["flops"] / kernel["bytes"]],
                     [kernel["flops"] * NS_PER_SECOND / kernel["ideal_ns"]], marker="*", s=120,
                     color="black", label=f"whole kernel ({kernel['bound_by']}-bound)", zorder=5)
    if unplaced:
        # an empty handle: the legend states the count of statements with no intensity
        axes.scatter([], [], marker="", label=f"{unplaced} statement{'s' * (unplaced > 1)} moving no "
                                              f"{level} bytes (no intensity, not placed)")
    axes.set_xlim(low, high)
    axes.set_xlabel(f"arithmetic intensity (FLOP per {level} byte)")
    axes.set_ylabel("attained FLOP/s (flops / ideal-ns)")
    axes.set_title(f"roofline of {report['module']}::{report['function']} on {report['target']}")
    axes.grid(True, which="major", linewidth=0.3)
    axes.legend(fontsize=7, loc="lower right")
    return figure


#: series a line chart's legend names one by one (past it, the legend says how many)
LEGEND_MOST = 48


def line_chart_svg(title: str, xlabel: str, ylabel: str, series: list, salt: str) -> str:
    """One line per ``(label, xs, ys)`` of ``series`` (a sweep's figure
    against a dim, `tilefoundry sweep --plots`); an axis whose values span
    more than a hundredfold is logarithmic. The legend sits beside the chart
    when it names more than a few series. ``salt`` fixes the SVG's ids."""
    named = min(len(series), LEGEND_MOST)
    beside = named > 6
    figure = _figure(7.5 + (4.5 if beside else 0), max(4.8, 0.16 * named + 1) if beside else 4.8)
    axes = figure.subplots()
    xs = [x for _, values, _ in series for x in values]
    ys = [y for _, _, values in series for y in values]
    if xs and min(xs) > 0 and max(xs) > 100 * min(xs):
        axes.set_xscale("log", base=2)
    if ys and min(ys) > 0 and max(ys) > 100 * min(ys):
        axes.set_yscale("log")
    markers = "os^Dv<>px*"
    for index, (label, x_values, y_values) in enumerate(series):
        # colours repeat every ten series: the marker tells repeats apart
        axes.plot(x_values, y_values, marker=markers[(index // 10) % len(markers)], markersize=3,
                  linewidth=1, label=label if index < LEGEND_MOST else None)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=9)
    axes.grid(True, which="major", linewidth=0.3)
    if series:
        title = None if len(series) <= LEGEND_MOST else f"{LEGEND_MOST} of {len(series)} series"
        if beside:
            axes.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=title,
                        title_fontsize=6)
        else:
            axes.legend(fontsize=6, loc="best")
    return _svg(figure, salt)


def roofline_chart_of(result, rendering, fmt: str = "svg") -> str | bytes:
    """`--plot FILE`: the roofline chart of one analysed result, as SVG text
    or PNG / PDF bytes (``fmt``, from ``plot_format``)."""
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.target.facts import ThroughputFacts

    if not have_matplotlib():
        raise AnalysisError(f"--plot: {PLOTS_HINT}")
    try:
        throughput = result.module.resolve_target().get_facts(ThroughputFacts)
    except TileFoundryError as exc:
        raise AnalysisError(f"--plot: {exc}") from None
    figure = _roofline_figure(rendering.report, throughput)
    return _svg(figure, "roofline") if fmt == "svg" else _binary(figure, fmt)


MAX_DRAWN_TRIPS = 512  # beyond this a loop's later trips are its shaded slice only
MAX_DRAWN_WAVES = 16  # beyond this the chart draws the first waves and says how many it shows


def waves_drawn(trace: dict) -> tuple[int, int, float]:
    """(waves, waves drawn, one wave's makespan in µs) of a trace: every wave
    repeats wave 0 (the CTA-local plan), so the chart draws it once per wave,
    up to MAX_DRAWN_WAVES."""
    for event in trace["traceEvents"]:
        if event["ph"] == "X" and event["pid"] == 1 and event["name"] == "wave 0":
            waves = event["args"]["waves"]
            return waves, min(waves, MAX_DRAWN_WAVES), event["dur"]
    return 1, 1, 0.0


def _bars(trace: dict) -> tuple[dict, dict]:
    """(track -> occurrence bars, track -> loop spans (ts, dur, name)), in µs.
    A body occurrence is drawn at every trip, ``ts + t * stride``, and every
    wave drawn repeats wave 0 one makespan later."""
    bars: dict = {}
    spans: dict = {}
    _, drawn, makespan = waves_drawn(trace)
    for event in trace["traceEvents"]:
        if event["ph"] != "X" or event["pid"] == 1:
            continue
        key = (event["pid"], event["tid"])
        for wave in range(drawn):
            shift = wave * makespan
            if event["name"].startswith("loop "):
                spans.setdefault(key, []).append((event["ts"] + shift, event["dur"], event["name"]))
                continue
            trips = event["args"]["trips"]
            stride = event["args"]["stride_ns"] / 1000
            repeats = trips if trips <= MAX_DRAWN_TRIPS else 1
            bars.setdefault(key, []).extend((event["ts"] + shift + t * stride, event["dur"])
                                            for t in range(repeats))
    return bars, spans


def timeline_caption(trace: dict) -> str:
    """What the timeline chart shows of the waves: all of them, or the first few."""
    waves, drawn, makespan = waves_drawn(trace)
    if waves == 1:
        return "one wave"
    shown = f"all {waves} waves" if drawn == waves else f"the first {drawn} of {waves} waves"
    return f"{shown}, each {makespan:g} µs repeating wave 0"


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
        # outer loops first; a loop nested in one (or starting with it) is
        # labelled one line lower, so labels that start together never overlap
        for depth, (start, length, name) in enumerate(sorted(spans.get(key, []),
                                                             key=lambda s: (-s[1], s[0]))):
            axes.broken_barh([(start, length)], (index - 0.45, 0.9), facecolor="#dddddd",
                             edgecolor="#bbbbbb", linewidth=0.3, zorder=1)
            axes.text(start, index - 0.44 + 0.22 * depth, f" {name}", fontsize=6, va="top",
                      ha="left", color="#333333", zorder=3, clip_on=True,
                      bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 0.6})
        axes.broken_barh(bars.get(key, []), (index - 0.35, 0.7), edgecolor="white", linewidth=0.2,
                         zorder=2)
    axes.set_yticks(range(len(keys)),
                    [f"{names.get((k[0], None), k[0])} / {names.get(k, k[1])}" for k in keys])
    axes.invert_yaxis()
    axes.set_xlabel(f"time (µs; {timeline_caption(trace)}; grey: a loop's span, named as in the "
                    "trace)")
    axes.set_title("timeline")
    axes.grid(True, axis="x", linewidth=0.3)
    return _svg(figure, "timeline")
