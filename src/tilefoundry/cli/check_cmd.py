"""`tilefoundry check`: hold a selection against a twin (a second program or a
Python function) and/or against its own placed run, participant by
participant; exit 0 when every verdict passes, 1 on any mismatch or refusal
(docs/execution.md)."""
from __future__ import annotations

from tilefoundry.cli.files import write_file
from tilefoundry.cli.run_cmd import add_input_flags, check_tensor_files
from tilefoundry.errors import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check",
        help="execute a program and hold it against a twin or its placed run",
        description="Execute SOURCE (the program) and compare. --placed runs every participant of "
                    "every Mesh on its own box of each value and holds the assembled values against "
                    "the logical run at every reshard and output. --against OTHER (the reference: a "
                    "second selection OTHER.py:SELECTOR or a Python function FILE.py:function) runs "
                    "on its own copy of the same inputs; each output is held, element by element, "
                    "to the program's forward error bound plus the reference's (or to --rtol/--atol).",
        epilog="examples (from tests/data/programs):\n"
               "  tilefoundry check --placed p04_split_k_partial.py\n"
               "  tilefoundry check --against p04_split_k_partial.py:SplitKGemm --tolerance dtype "
               "p04_split_k_partial.py\n"
               "  tilefoundry check --placed --dim seq=96,128 p11_seq_variants.py:SeqPool",
    )
    add_input_flags(parser)
    parser.add_argument("--against", metavar="OTHER", help="OTHER.py:SELECTOR or FILE.py:function")
    parser.add_argument("--placed", action="store_true", help="check the placed run against the logical one")
    parser.add_argument("--rtol", action="append", default=[], metavar="[NAME=]X",
                        help="relative bound |program - reference| <= atol + rtol·|reference|, for every "
                             "output or one named output (repeatable)")
    parser.add_argument("--atol", action="append", default=[], metavar="[NAME=]X",
                        help="absolute bound, for every output or one named output (repeatable)")
    parser.add_argument("--tolerance", choices=("dtype",),
                        help="derive each element's bound by forward error analysis beside the run "
                             "(roundings to each dtype, f32 accumulations, special functions; the "
                             "default when no --rtol/--atol is given; the dominant terms are printed)")
    parser.add_argument("--json", action="store_true", help="print the JSON document instead of text")
    parser.add_argument("source", metavar="SOURCE")
    parser.set_defaults(func=run)


def parse_bounds(items: list[str], flag: str):
    """``X`` for every output, or ``NAME=X`` per output: a float, a dict, or None."""
    if not items:
        return None
    bounds: dict = {}
    every = None
    for item in items:
        name, sep, text = item.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"check: {flag} takes X or NAME=X with X a number, got '{item}'") from None
        if not value >= 0:
            raise UsageError(f"check: {flag} {item}: a bound is a non-negative number")
        if sep:
            bounds[name] = value
        else:
            every = value
    if every is not None and not bounds:
        return every
    if every is not None:
        return _Default(bounds, every)
    return bounds


class _Default(dict):
    """Per-output bounds with one value for the outputs not named."""

    def __init__(self, named: dict, default: float):
        super().__init__(named)
        self.default = default

    def get(self, key, fallback=None):
        return super().get(key, self.default)


def run(args) -> int:
    from tilefoundry.cli.analyze_cmd import _check_python_source, parse_dims
    from tilefoundry.execution import check
    from tilefoundry.render.views.run_check import check_json, check_text

    if args.tolerance and (args.rtol or args.atol):
        raise UsageError("check: give --tolerance dtype or --rtol/--atol, not both")
    if not args.against and not args.placed:
        raise UsageError("check: name a twin (--against OTHER) or --placed, or both")
    _check_python_source(args.source)
    check_tensor_files(args)
    grid = parse_dims(args.dim)
    from tilefoundry.cli.progress import stages

    # a placed check of a large kernel runs for minutes: a bar on a terminal says it is alive
    with stages("check --placed" if args.placed else "check") as step:
        step("running")
        results = check(args.source, against=args.against, placed=args.placed, dims=grid,
                        inputs=args.inputs, weights=args.weights, seed=args.seed,
                        rtol=parse_bounds(args.rtol, "--rtol"), atol=parse_bounds(args.atol, "--atol"))
    text = (check_json(args.source, args.against, results) if args.json
            else check_text(args.source, args.against, results, args.seed))
    write_file(text, None, "--json")
    return 0 if all(r.passed for r in results) else 1
