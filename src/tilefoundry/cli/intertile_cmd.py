"""`tilefoundry intertile verify|run FILE`: inter-tile ops in KTIR text."""
from __future__ import annotations


KTIR_SYNTAX = "docs/ktir-syntax.md"
KTIR_FILE = "a .mlir file in KTIR syntax"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "intertile", help="verify or run inter-tile delivery ops (ktdp) in a KTIR file",
        description="Check or run the inter-tile delivery ops (ktdp) of a KTIR (.mlir) "
                    f"file. The KTIR syntax is documented in {KTIR_SYNTAX}.",
        epilog="examples (from tests/data/intertile):\n"
               "  tilefoundry intertile verify examples/e01_shared_sources_identical.mlir\n"
               "  tilefoundry intertile run --tiles 8 examples/e01_shared_sources_identical.mlir")
    sub = parser.add_subparsers(dest="intertile_command", metavar="ACTION", required=True)
    for name, helptext, description, func in (
            ("verify", "check rules R1-R12 (+R9b, R13); exit 1 on a violation",
             "Check every function of FILE (or --function) against rules R1-R12, R9b "
             "and R13; print each violation, or `ok` per function.", _verify),
            ("run", "deliver a default input and show where each producer slice lands",
             "Check, then deliver a default input through each exchange of FILE and "
             "show where every producer slice lands.", _run)):
        p = sub.add_parser(
            name, help=helptext, description=f"{description} KTIR syntax: {KTIR_SYNTAX}.",
            epilog=f"example (from tests/data/intertile):\n"
                   f"  tilefoundry intertile {name} examples/e01_shared_sources_identical.mlir")
        p.add_argument("file", metavar="FILE", help=f"{KTIR_FILE} (see {KTIR_SYNTAX})")
        p.add_argument("--tiles", type=tile_count, default=None,
                       help="workgroup size (default: one past the largest tile id the "
                            "sets name)")
        p.add_argument("--function", default=None, help="only this function (@name)")
        if name == "verify":
            p.add_argument("--json", action="store_true",
                           help="print the verdicts as JSON (docs/json.md)")
        p.set_defaults(func=func)


def tile_count(text: str) -> int:
    """``--tiles``: plain ASCII digits (int() would also take '1_0', '+8', '٣'),
    the one integer rule of every input (text_input.read_integer)."""
    import argparse

    from tilefoundry.text_input import IntegerTextError, read_integer, shown_text

    try:
        return read_integer(text, signed=False)
    except IntegerTextError as exc:
        if exc.too_long:
            raise argparse.ArgumentTypeError(f"the tile count {exc}") from None
        raise argparse.ArgumentTypeError(f"invalid tile count {shown_text(text)}: write a positive "
                                         "integer in plain digits, e.g. --tiles 8") from None


def _functions(args):
    from tilefoundry.errors import UsageError
    from tilefoundry.intertile.reader import read_file

    if args.tiles is not None and args.tiles <= 0:
        raise UsageError(f"--tiles must be a positive integer, got {args.tiles}")
    from tilefoundry.cli.files import input_file

    module = read_file(input_file(args.file, KTIR_FILE))
    fns = [module.function(args.function)] if args.function else module.functions
    return module, fns


def _verify(args) -> int:
    from tilefoundry.intertile.program import check_function

    _, fns = _functions(args)
    results = [(fn, check_function(fn, args.tiles)) for fn in fns]
    bad = sum(1 for _, diags in results if diags)
    if args.json:
        from tilefoundry.render.json_contract import dumps, verify_document

        print(dumps(verify_document(args.file, args.tiles, results)), end="")
        return 1 if bad else 0
    for fn, diags in results:
        if diags:
            for d in diags:
                print(d)
        else:
            print(f"{fn.loc}: {fn.name}: ok")
    return 1 if bad else 0


def _run(args) -> int:
    from tilefoundry.intertile.program import check_function, exchanges
    from tilefoundry.intertile.show import show_exchange

    _, fns = _functions(args)
    status = 0
    for fn in fns:
        diags = check_function(fn, args.tiles)
        if diags:
            for d in diags:
                print(d)
            print(f"{fn.name}: not run (fix the violations above)")
            status = 1
            continue
        for produce, uses in exchanges(fn):
            for use in uses:
                print(show_exchange(fn.name, produce.model, use.model, args.tiles))
    return status
