"""``tilefoundry pack FILE.csv --capacity N``: the buffer packer on its own.

Reads a MiniMalloc CSV (``id,lower,upper,size``, live over [lower, upper)),
settles whether the buffers fit in N bytes and prints one line: status, the
packing's peak, the live-bytes lower bound, what settled it and the time.
``--json`` prints the document of ``schemas/pack.schema.json`` (offsets
included); ``--plot FILE.svg`` draws the packing (needs the ``plots`` extra).
Progress goes to stderr, and only when stderr is a terminal. A status other
than a packing (infeasible, timeout) is an answer, not an error: exit 0.
"""
from __future__ import annotations

import argparse
import sys
import time

BUFFER_FILE = "a MiniMalloc CSV with header id,lower,upper,size"


def _capacity(text: str) -> int:
    """A byte count: the one integer rule of every input (text_input.read_integer),
    as the buffer file's own sizes."""
    from tilefoundry.text_input import IntegerTextError, read_integer, shown_text

    try:
        value = read_integer(text)
    except IntegerTextError as exc:
        if exc.too_long:
            raise argparse.ArgumentTypeError(f"the capacity {exc}") from None
        raise argparse.ArgumentTypeError(f"{shown_text(text)} is not an integer byte count "
                                         "(ASCII digits 0-9)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; give a byte count >= 0")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not 0 < value < float("inf"):  # nan and inf included: a limit is a finite time
        raise argparse.ArgumentTypeError(f"{text} is not a positive, finite number of seconds")
    return value


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pack", help="pack buffers (a MiniMalloc CSV) into a capacity",
        description="Place every buffer of a MiniMalloc CSV (id,lower,upper,size; live over "
                    "[lower, upper)) at an offset below the capacity so that no two buffers "
                    "live at once share a byte, or say that none exists. A first-fit pass "
                    "settles an input with room to spare; the search is "
                    "MiniMalloc's canonical branch and bound; CP-SAT proves what it cannot "
                    "finish; every packing is checked independently before it is printed.",
        epilog="examples (from bench/data/minimalloc):\n  tilefoundry pack input.12.csv --capacity 12\n"
               "  tilefoundry pack input.12.csv --capacity 11 --json")
    parser.add_argument("file", metavar="FILE.csv", help=BUFFER_FILE)
    parser.add_argument("--capacity", type=_capacity, required=True, metavar="N",
                        help="bytes available (offsets lie in [0, N))")
    parser.add_argument("--time-limit", type=_seconds, default=10.0, metavar="S",
                        help="seconds for search and proof together (default 10)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (schemas/pack.schema.json)")
    parser.add_argument("--plot", metavar="FILE.svg",
                        help="draw the packing, time x address, as SVG (needs matplotlib: "
                             "pip install 'tilefoundry[plots]')")
    parser.set_defaults(func=run)


def _progress_printer():
    """A progress callback writing to stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None

    shown = [-1.0]

    def report(nodes: int, seconds: float) -> None:
        if seconds - shown[0] >= 0.2:  # a few times a second is enough to watch
            shown[0] = seconds
            print(f"\rpack: {nodes} nodes, {seconds:.1f} s", end="", file=sys.stderr, flush=True)
    return report


def run(args: argparse.Namespace) -> int:
    from tilefoundry.packing import pack, peak_live
    from tilefoundry.packing.csv_format import read_buffers_csv
    from tilefoundry.cli.files import input_file
    from tilefoundry.render.forms import packing_forms

    if args.plot:
        packing_forms.require_matplotlib()  # say so before spending the search
    rows = read_buffers_csv(input_file(args.file, BUFFER_FILE))
    buffers = [row.buffer for row in rows]
    if args.plot:  # the drawing's bounds, before the search they would waste
        from tilefoundry.limits import check

        check("PLOT_BUFFERS", len(rows), f"pack --plot: {len(rows):,} buffers to draw")
        packing_forms.check_drawable(rows, args.capacity)
    progress = _progress_printer()
    started = time.perf_counter()
    result = pack(buffers, args.capacity, time_limit_s=args.time_limit, progress=progress)
    seconds = time.perf_counter() - started
    if progress is not None:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    live = peak_live(buffers)
    if args.plot and result.offsets:
        packing_forms.plot_packing(rows, result.offsets, args.capacity, args.plot,
                                   title=f"{args.file}: {result.status}")
    if args.json:
        from tilefoundry.render.json_contract import dumps

        sys.stdout.write(dumps(packing_forms.pack_document(
            args.file, rows, args.capacity, result, live, seconds)))
    else:
        print(packing_forms.summary_line(args.file, rows, args.capacity, result, live, seconds))
    return 0
