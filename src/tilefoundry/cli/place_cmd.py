"""`tilefoundry place`: search a placement of a logical kernel, check it against
the kernel, price it, and print (or write) the placed program (docs/place.md).
Thin over tilefoundry.placer."""
from __future__ import annotations

import argparse
import sys

from tilefoundry.errors import UsageError


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"--time-limit takes a number of seconds > 0, got '{text}'")
    return value


def _count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"takes a whole number >= 1, got '{text}'")
    return int(text)


def _seed(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"--seed takes a whole number >= 0, got '{text}'")
    return int(text)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "place",
        help="search a placement of a logical kernel: the placed program, checked and priced",
        description="Search the placements of a logical (unplaced) kernel over a topology level "
                    "(a GEMM/GEMV: CTA grid, split-K and K tile; a chain of them such as an MLP: "
                    "one kernel per stage meeting in gmem, a K tile each; decode attention: KV "
                    "heads x sequence splits and the KV block, as flash decoding; a rows kernel "
                    "such as RMSNorm: rows over CTAs and the staging level), price each by the "
                    "estimate family "
                    "(performance where the target states none), check the best against the "
                    "logical kernel on random inputs, and print the placed program. The last line "
                    "says whether the answer is proven best within the space or the search "
                    "stopped at --time-limit.",
        epilog="examples (from the repository root):\n"
               "  tilefoundry place tests/place/data/gemv_small.py --top 3 --time-limit 5\n"
               "  tilefoundry place tests/place/data/rows_small.py:SmallRms.rms --json\n\n"
               "--output FILE.py writes the best placed program, which `tilefoundry analyze` and "
               "`tilefoundry check --against` read as they read any program.",
    )
    parser.add_argument("source", metavar="SOURCE", help="file.py[:Module[.child...][.function]]")
    parser.add_argument("--target", metavar="T", help="a target identity (tilefoundry target list)")
    parser.add_argument("--level", default="cta", metavar="LEVEL",
                        help="the topology level placed over (default: cta)")
    parser.add_argument("--time-limit", type=_seconds, default=10.0, metavar="S",
                        help="seconds the search may spend pricing points (default: 10)")
    parser.add_argument("--top", type=_count, default=1, metavar="N",
                        help="list the best N placements with their figures (default: 1)")
    parser.add_argument("--output", "-o", metavar="FILE.py", help="write the best placed program to FILE.py")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--seed", type=_seed, default=0, metavar="N",
                        help="the seed of the solver and of the check's random inputs (default: 0)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=EXTENT",
                        help="bind a DimVar (one extent each)")
    parser.set_defaults(func=run)


def _dims(items: list) -> dict | None:
    from tilefoundry.cli.analyze_cmd import parse_dims

    grid = parse_dims(items)
    if not grid:
        return None
    several = [name for name, values in grid.items() if len(values) > 1]
    if several:
        raise UsageError(f"place: --dim {several[0]} takes one extent (a placement is searched for one "
                         "binding); run place once per extent")
    return {name: values[0] for name, values in grid.items()}


def _figures(figures: dict, objective: str) -> str:
    peaks = ", ".join(f"{level} {count:,} B" for level, count in sorted(figures["peak_bytes"].items()))
    shown = [f"{objective} {figures[objective]:,.0f}"]
    if objective != "predicted_ns" and figures.get("predicted_ns") is not None:
        shown.append(f"predicted_ns {figures['predicted_ns']:,}")
    if figures.get("ideal_ns") is not None:
        shown.append(f"ideal_ns {figures['ideal_ns']:,}")
    return "; ".join(shown) + f"; peak {peaks}"


def _text(result, top: int) -> str:
    lines = []
    for placement in result.placements:
        lines.append(f"# {placement.rank}. {placement.description}: "
                     f"{_figures(placement.figures, result.objective)}")
    if result.best is not None:
        lines.append("")
        lines.append(result.best.text.rstrip("\n"))
        lines.append("")
    if result.proven:
        verdict = "proven best within the space: every point priced"
    elif result.priced >= result.space_size:  # a sequence: docs/place.md, "What is proven"
        verdict = "every point priced, no proof: a sequence's kernels are each priced alone"
    else:
        verdict = f"stopped at the time limit: {result.priced:,} of {result.space_size:,} points priced"
    at = "" if result.checked_at == "full extents" else f" at {result.checked_at}"
    lines.append(f"# place {result.kernel} ({result.kind}): {verdict}, {result.seconds:.1f} s; "
                 f"objective {result.objective}; every answer checked against the logical kernel{at} "
                 f"({result.check_seconds:.1f} s)")
    return "\n".join(lines) + "\n"


def run(args) -> int:
    from tilefoundry.cli.analyze_cmd import _check_python_source
    from tilefoundry.cli.files import write_file
    from tilefoundry.placer import place

    _check_python_source(args.source)
    result = place(args.source, target=args.target, level=args.level, time_limit=args.time_limit,
                   top=args.top, seed=args.seed, dims=_dims(args.dim))
    for choice, why in result.bugs:
        print(f"tilefoundry: place bug: {choice}: {why}; it is not shown", file=sys.stderr)
    if result.best is None:
        from tilefoundry.errors import AnalysisError

        reasons = "; ".join(f"{reason} ({count} points)" for reason, count in result.refused.items())
        if result.priced == result.space_size and not result.bugs:
            head = f"place: every one of the {result.space_size} placements of '{result.kernel}' was refused"
        else:
            head = (f"place: no placement of '{result.kernel}' was priced and checked within "
                    f"{args.time_limit:g} s ({result.priced} of {result.space_size} points priced)")
        raise AnalysisError((f"{result.where}: " if result.where else "") + head
                            + (f": {reasons}" if reasons else ""))
    if args.output:
        write_file(result.best.text, args.output, "--output")
    if args.json:
        from tilefoundry.render.json_contract import dumps, stamp

        print(dumps(stamp(result.as_dict(), "place")), end="")
    else:
        print(_text(result, args.top), end="")
    return 0
