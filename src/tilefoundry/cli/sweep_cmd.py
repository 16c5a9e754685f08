"""`tilefoundry sweep`: run a design space (SPACE.toml) into a table, on local
worker processes or a Dask cluster, and report on a table (docs/views.md,
"Sweeps"). Thin over tilefoundry.sweep."""
from __future__ import annotations

import argparse
import os
import sys

from tilefoundry.errors import UsageError


def _jobs(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a positive whole number, got '{text}'")
    return int(text)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a design space (selections x dims x targets x levels) into a table",
        description="Run every point of SPACE.toml (selections, dims, targets, topology levels, "
                    "families: docs/views.md, Sweeps) into a table, one row per point with its "
                    "key, every summary figure and its status; a refused point is a row. The table "
                    "is rewritten as points finish; --resume runs only the points it lacks. Then "
                    "print the best point per selection and the Pareto fronts (--report TABLE "
                    "prints them for a table alone).",
        epilog="examples (from the repository root):\n"
               "  tilefoundry sweep --dry-run examples/sweep_zoo.toml\n"
               "  tilefoundry sweep --dry-run --jobs 8 -o zoo.parquet examples/sweep_zoo.toml\n\n"
               "then, to run it (each writes the table) and read the table:\n"
               "    tilefoundry sweep examples/sweep_zoo.toml -o zoo.parquet --jobs 8\n"
               "    tilefoundry sweep examples/sweep_zoo.toml -o zoo.parquet --resume\n"
               "    tilefoundry sweep examples/sweep_zoo.toml -o zoo.parquet --scheduler tcp://HOST:8786\n"
               "    tilefoundry sweep --report zoo.parquet --plots charts/",
    )
    parser.add_argument("space", nargs="?", metavar="SPACE.toml", help="the space to run")
    parser.add_argument("--output", "-o", metavar="TABLE",
                        help="the table, FILE.csv or FILE.parquet (default: the space's `table`, "
                             "else SPACE with .csv)")
    parser.add_argument("--jobs", "-j", type=_jobs, metavar="N",
                        help="local worker processes (default: this machine's cores)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786; "
                             "pip install 'tilefoundry[cluster]')")
    parser.add_argument("--resume", action="store_true",
                        help="the table exists: run only the points it lacks")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the number of points and an estimate of the time; run nothing")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    parser.add_argument("--report", metavar="TABLE",
                        help="report on TABLE (best point per selection, Pareto fronts) and run nothing")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON (the sweep-report document)")
    parser.add_argument("--plots", metavar="DIR",
                        help="write SVG charts of --figure against each dim, one per target, into DIR "
                             "(needs matplotlib)")
    parser.add_argument("--figure", metavar="NAME", default="predicted-ns",
                        help="the table column --plots draws (default: predicted-ns)")
    parser.set_defaults(func=run)


def _check(args) -> None:
    if args.report is not None:
        if args.space:
            raise UsageError("give SPACE.toml to run it, or --report TABLE to report on a table, not both")
        given = [flag for flag, on in (("--output", args.output), ("--jobs", args.jobs),
                                       ("--scheduler", args.scheduler), ("--resume", args.resume),
                                       ("--dry-run", args.dry_run)) if on]
        if given:
            raise UsageError(f"{given[0]} runs a space; --report TABLE only reads a table: drop one")
        return
    if not args.space:
        raise UsageError("sweep: SPACE.toml is required (or --report TABLE)")
    if args.jobs is not None and args.scheduler is not None:
        raise UsageError("--jobs sizes the local pool, --scheduler runs on a Dask cluster instead: give one")
    if args.dry_run and (args.json or args.plots):
        shown = "--json" if args.json else "--plots"
        raise UsageError(f"--dry-run runs nothing, so there is nothing for {shown} to show: drop one")
    if args.output is not None:
        _table_extension(args.output, "--output")


def _table_extension(path: str, flag: str) -> None:
    if not path.lower().endswith((".csv", ".parquet")):
        raise UsageError(f"{flag} {path}: a sweep table is FILE.csv or FILE.parquet (its extension "
                         "says which)")


def _plots_folder(path: str) -> None:
    from tilefoundry.cli.files import InputFileError
    from tilefoundry.render.views.plots import PLOTS_HINT, have_matplotlib

    if not have_matplotlib():
        raise InputFileError(f"--plots: {PLOTS_HINT}")
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputFileError(f"--plots {path} is not a folder; give a folder for the charts")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputFileError(f"--plots {path}: its folder {parent} does not exist; create it first")


def _needs(path: str, scheduler: str | None) -> None:
    """The optional extras a command line needs, before any work."""
    from tilefoundry.sweep.backends import CLUSTER_HINT, SweepError

    if path.lower().endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise SweepError(f"a .parquet table needs pyarrow: {CLUSTER_HINT}, or name the table "
                             "FILE.csv") from None
    if scheduler is not None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise SweepError(f"--scheduler needs dask.distributed: {CLUSTER_HINT}") from None


def run(args) -> int:
    _check(args)
    if args.plots:
        _plots_folder(args.plots)
    if args.report is not None:
        from tilefoundry.cli.files import input_file

        _table_extension(args.report, "--report")
        _needs(args.report, None)
        input_file(args.report, "a sweep table (FILE.csv or FILE.parquet)")
        from tilefoundry.sweep.table import read_table

        _report(read_table(args.report), args.report, args)
        return 0
    from tilefoundry.cli.files import input_file, output_file
    from tilefoundry.sweep.space import load_space

    input_file(args.space, "a sweep space (SPACE.toml)")
    space = load_space(args.space)
    table = args.output or space.table or os.path.splitext(args.space)[0] + ".csv"
    _table_extension(table, "the table")
    output_file(table, "--output" if args.output else "the table")
    _needs(table, args.scheduler)
    if args.dry_run:
        print(_dry_run(space, table, args), end="")
        return 0
    from tilefoundry.sweep.engine import Interrupted, run_sweep

    try:
        outcome = run_sweep(space, table, jobs=args.jobs, scheduler=args.scheduler, resume=args.resume,
                            progress=not args.quiet)
    except Interrupted as stop:
        print(f"tilefoundry: {stop}", file=sys.stderr)
        return 130
    rate = f", {outcome.ran / outcome.seconds:.1f} points/s" if outcome.ran and outcome.seconds else ""
    line = (f"# sweep {args.space}: {table} holds {outcome.points:,} points; ran {outcome.ran:,} "
            f"({outcome.already:,} were in the table) in {outcome.seconds:.1f} s on {outcome.backend}{rate}")
    if args.json:
        print(line, file=sys.stderr)
    else:
        print(line)
    _report(outcome.table, table, args)
    return 0


def _report(table, path: str, args) -> None:
    from tilefoundry.sweep.summary import report_document, report_json, report_text, write_plots

    document = report_document(table, path)
    print(report_json(document) if args.json else report_text(document), end="")
    if args.plots:
        os.makedirs(args.plots, exist_ok=True)
        written = write_plots(table, args.plots, args.figure)
        note = (f"# wrote {len(written)} chart{'s' if len(written) != 1 else ''} of {args.figure} to "
                f"{args.plots}" if written else
                f"# no chart to draw: no dim takes two values in an ok row stating {args.figure}")
        print(note, file=sys.stderr if args.json else sys.stdout)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _dry_run(space, table: str, args) -> str:
    from tilefoundry.sweep.engine import estimate, pending
    from tilefoundry.sweep.space import extent_count

    total = space.count()
    todo = pending(space, table, args.resume)
    lines = [f"# sweep {args.space}: {total:,} points ({space.breakdown()})"]
    zoo = len({s.zoo for s in space.selections if s.zoo})
    files = len({s.path for s in space.selections if not s.zoo})
    lines.append(f"selections  {len(space.selections)} ({zoo} zoo models, {files} files)")
    for name, values in space.dims.items():
        bound = sum(1 for names in space.binds.values() if name in names)
        lines.append(f"dim         {name}: {extent_count(values)} values {values[0]}..{values[-1]} "
                     f"(binds {bound} selection{'s' if bound != 1 else ''})")
    lines.append("targets     " + (", ".join(space.targets) if space.targets != (None,) else
                                   "each module's own"))
    lines.append("topologies  " + (", ".join(space.topologies) if space.topologies != (None,) else
                                   "each module's first"))
    lines.append("families    " + (space.families if isinstance(space.families, str) else
                                   ", ".join(space.families)))
    state = "new" if not os.path.exists(table) else \
        f"{total - len(todo):,} points done, {len(todo):,} to run (--resume)" if args.resume else \
        "exists: the run refuses it without --resume"
    lines.append(f"table       {table} ({state})")
    if todo:
        per_point, timed = estimate(space, todo)
        work = per_point * len(todo)
        if args.scheduler:
            where = f"~{_duration(work)} of worker time on the cluster (divide by its workers)"
        else:
            from tilefoundry.sweep.backends import default_jobs

            jobs = args.jobs or default_jobs()
            where = f"~{_duration(work / jobs)} on {jobs} local worker{'s' if jobs != 1 else ''}"
        lines.append(f"estimate    ~{per_point * 1000:.0f} ms a point ({timed} points timed here), {where}")
    return "\n".join(lines) + "\n"
