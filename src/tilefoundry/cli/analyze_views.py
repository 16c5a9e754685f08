"""The views of `tilefoundry analyze` (docs/views.md): rows of headline figures
(a --dim sweep, several --target), the costliest statements (--top), and the
files --trace, --html and --plot write. Thin over render/: this module only
decides which view a command line asks for and which families it needs.
"""
from __future__ import annotations

import sys

from tilefoundry.errors import UsageError

# every family a view reads figures off (the collectives family, if any, is no view's)
VIEW_FAMILIES = ("compute-cost", "memory", "roofline", "performance")


def _positive(text: str) -> int:
    import argparse

    from tilefoundry.text_input import IntegerTextError, read_integer, shown_text

    try:
        value = read_integer(text, signed=False)
    except IntegerTextError as exc:
        if exc.too_long:
            raise argparse.ArgumentTypeError(f"the value {exc}") from None
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--top takes a positive whole number, got {shown_text(text)}")
    return value


def add_view_flags(parser) -> None:
    group = parser.add_argument_group("views")
    group.add_argument("--target", action="append", default=[], metavar="NAME",
                       help="analyse for target NAME (`tilefoundry target list`); once: the "
                            "report for it; repeated: one row per target")
    group.add_argument("--top", type=_positive, metavar="N",
                       help="print the N costliest statements instead of the report")
    group.add_argument("--sort", choices=("time", "flops", "bytes", "estimate"),
                       help="what --top ranks by (default: time, the performance timeline; "
                            "estimate: the estimate's time)")
    group.add_argument("--breakdown", action="store_true",
                       help="print the figures of each call the function makes (each layer of a "
                            "decode step) instead of the report")
    group.add_argument("--summary", action="store_true",
                       help="print the summary lines only (the header, each family's figures of the "
                            "whole function, --all's refusals), not the annotated program")
    group.add_argument("--csv", action="store_true", help="print rows (a sweep, several targets) as CSV")
    group.add_argument("--trace", metavar="FILE",
                       help="write the timeline as a Chrome trace (Perfetto, chrome://tracing)")
    group.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    group.add_argument("--plot", metavar="FILE",
                       help="write the roofline chart as FILE.svg, FILE.png or FILE.pdf, the "
                            "format its extension names (needs matplotlib)")


def compares(args, grid) -> bool:
    """Rows mode: several targets, or a dimension given several extents."""
    return len(args.target) > 1 or any(len(v) > 1 for v in (grid or {}).values())


def _files(args) -> list[str]:
    return [flag for flag in ("trace", "html", "plot") if getattr(args, flag)]


def sweep_points(targets, grid) -> int:
    """How many analyses a command line asks for, counted before any is built."""
    count = max(len(targets or ()), 1)
    for values in (grid or {}).values():
        count *= len(values)
    return count


def check_flags(args, grid) -> None:
    """Combinations that name no one answer (exit 2); a sweep past its stated
    bound (exit 1), counted before a point is built."""
    from tilefoundry.limits import check

    count = sweep_points(args.target, grid)
    check("SWEEP_POINTS", count, f"this command line asks for {count:,} analyses "
          f"({' x '.join(str(len(v)) for v in (grid or {}).values()) or 1} --dim values"
          f"{f' x {len(args.target)} targets' if len(args.target or ()) > 1 else ''})")
    repeated = next((t for i, t in enumerate(args.target) if t in args.target[:i]), None)
    if repeated:
        raise UsageError(f"--target {repeated} was given twice; name each target once")
    if compares(args, grid):
        single = ([f"--{f}" for f in _files(args)] + (["--top"] if args.top else [])
                  + (["--breakdown"] if args.breakdown else []))
        if single:
            raise UsageError(f"{single[0]} shows one analysis, but this command line asks for "
                             "rows (several --target, or a --dim with several values): drop one")
        if args.csv and args.json:
            raise UsageError("give either --json or --csv, not both")
    elif args.csv:
        raise UsageError("--csv prints rows: give several --target or a --dim NAME=V1,V2")
    if args.summary:
        _check_summary(args, grid)
    if args.sort and not args.top:
        raise UsageError("--sort orders --top: add --top N")
    if args.breakdown and args.top:
        raise UsageError("--top and --breakdown each replace the report: give one")
    if args.plot:
        from tilefoundry.render.views.plots import plot_format

        plot_format(args.plot)  # a format it cannot write is refused before any work


def _check_summary(args, grid) -> None:
    """--summary trims the text report of one analysis: what has no such text
    (rows, --json, a view that replaces the report) is named (exit 2)."""
    other = ("--json" if args.json else "--top" if args.top else "--breakdown" if args.breakdown
             else "rows (several --target, or a --dim with several values)" if compares(args, grid)
             else None)
    if other is not None:
        raise UsageError(f"--summary prints the summary lines of one text report; {other} prints "
                         "something else: drop one")


def one_binding(grid) -> dict[str, int] | None:
    return {name: values[0] for name, values in grid.items()} if grid else None


def wants_views(args) -> bool:
    return bool(args.top or args.breakdown or _files(args))


def families_for(requested: list[str], target=None) -> tuple:
    """The families a one-analysis view runs: the four it reads, the estimate
    beside them where the target states its facts (a GPU), plus any other the
    caller asked for."""
    viewed = tuple(VIEW_FAMILIES) + (("estimate",) if _states_estimate(target) else ())
    return viewed + tuple(f for f in requested if f not in viewed)


def _states_estimate(target) -> bool:
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.target.facts import EstimateFacts

    if target is None or "estimate" not in target.analyzer_selectors():
        return False
    try:
        target.get_facts(EstimateFacts)
    except TileFoundryError:
        return False
    return True


def rows(module, function, requested, args, grid) -> str:
    """A sweep or targets side by side: one analyze per point, one row each.
    With ``--all`` each point runs what its own target serves, and the JSON
    ``requested`` lists every family some point ran."""
    from tilefoundry.api import ALL, FAMILIES, retarget
    from tilefoundry.render.views import sweep

    served = requested == ALL
    families = FAMILIES if served else tuple(requested) or VIEW_FAMILIES
    # every target resolved before the first point runs: a misspelt one costs nothing
    modules = {target: retarget(module, target) for target in args.target or [None]}
    points = sweep.points_of(args.target, grid)
    ran = [sweep.run_point(modules[point.target], function, point, families, args.topology,
                           served=served)
           for point in _progress(points)]
    found = [row for row, _ in ran]
    if served:
        families = tuple(f for f in FAMILIES if any(f in analyses for _, analyses in ran))
    if args.json:
        return sweep.rows_json(module, function, families, args.topology, found)
    return sweep.rows_csv(found) if args.csv else sweep.rows_text(found)


def _progress(points: list):
    """A progress bar on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return points
    from tqdm import tqdm

    return tqdm(points, file=sys.stderr, unit="point", leave=False)


def views(result, rendering, args) -> str | None:
    """Write the file views; return --top's or --breakdown's text (it replaces the
    report), else None."""
    from tilefoundry.cli.files import write_file

    if args.trace:
        from tilefoundry.render.views.trace import trace_json

        write_file(trace_json(result, rendering), args.trace, "--trace")
    if args.html:
        from tilefoundry.render.views.html_report import html_page

        write_file(html_page(result, rendering), args.html, "--html")
    if args.plot:
        from tilefoundry.render.views.plots import plot_format, roofline_chart_of

        write_file(roofline_chart_of(result, rendering, plot_format(args.plot)), args.plot, "--plot")
    if args.breakdown:
        from tilefoundry.render.views import breakdown

        if args.json:
            return breakdown.breakdown_json(result, rendering)
        return breakdown.breakdown_text(result, rendering)
    if not args.top:
        return None
    from tilefoundry.render.views import top

    sort = args.sort or "time"
    executions = top.executions_of(result, rendering)
    if args.json:
        return top.top_json(rendering.report, executions, args.top, sort)
    return top.top_text(rendering.report, executions, args.top, sort)
