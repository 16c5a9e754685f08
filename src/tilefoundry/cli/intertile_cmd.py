"""`tilefoundry intertile verify|run FILE`: inter-tile ops in KTIR text."""
from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "intertile", help="verify or run inter-tile delivery ops (ktdp) in a KTIR file")
    sub = parser.add_subparsers(dest="intertile_command", metavar="ACTION", required=True)
    for name, helptext, func in (
            ("verify", "check rules R1-R12 (+R9b, R13); exit 1 on a violation", _verify),
            ("run", "deliver a default input and show where each producer slice lands", _run)):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("file", metavar="FILE", help="a .mlir file in the syntax of "
                                                    "shared/intertile/syntax.md")
        p.add_argument("--tiles", type=int, default=None,
                       help="workgroup size (default: one past the largest tile id the "
                            "sets name)")
        p.add_argument("--function", default=None, help="only this function (@name)")
        p.set_defaults(func=func)


def _functions(args):
    from tilefoundry.errors import UsageError
    from tilefoundry.intertile.reader import read_file

    if args.tiles is not None and args.tiles <= 0:
        raise UsageError("--tiles must be a positive integer")
    module = read_file(args.file)
    fns = [module.function(args.function)] if args.function else module.functions
    return module, fns


def _verify(args) -> int:
    from tilefoundry.intertile.program import check_function

    _, fns = _functions(args)
    bad = 0
    for fn in fns:
        diags = check_function(fn, args.tiles)
        if diags:
            bad += 1
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
