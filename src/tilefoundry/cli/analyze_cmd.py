"""`tilefoundry analyze`: the typed program, or the requested analysis families
(companions §8)."""
from __future__ import annotations

import os

from tilefoundry.api import ALL, FAMILIES
from tilefoundry.cli import analyze_views
from tilefoundry.cli.files import write_file
from tilefoundry.errors import AnalysisError, DimBindingError, UsageError
EXAMPLE_SOURCE = "rmsnorm_tiles.py:RmsNormTiles"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="type-check a program and report analysis families",
        description="Analyse SOURCE = file.py[:Module[.child...][.function]], a Python "
        "program written with tilefoundry. With no family flag, print the typed (inlined) "
        "program. KTIR (.mlir) files are read by `tilefoundry intertile`.",
        epilog="examples (from tests/data/programs):\n"
               "  tilefoundry analyze p06_module_tree.py:MiniStack\n"
               "  tilefoundry analyze --compute-cost --memory --dim seq=96 p11_seq_variants.py:SeqPool\n"
               "  tilefoundry analyze --example --performance\n"
               "  tilefoundry analyze --all p04_split_k_partial.py\n"
               "  tilefoundry analyze --top 5 --sort flops p03_tiled_gemm.py\n"
               "  tilefoundry analyze --dim seq=96,128,1024 --csv p11_seq_variants.py:SeqPool",
    )
    for family in FAMILIES:
        parser.add_argument(f"--{family}", action="store_true", help=f"report {family}")
    parser.add_argument("--all", action="store_true",
                        help="report every family the target serves (collectives where it states "
                             "them; the selection line says which ran); not with a family flag")
    parser.add_argument("--launch", choices=("graph", "stream"), default="graph",
                        help="how --estimate launches the kernels: replayed from a CUDA graph "
                             "(default, as serving engines run decode) or one by one from the host")
    parser.add_argument("--topology", metavar="LEVEL", help="per-unit level (default: the first effective topology)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=EXTENT",
                        help="bind a dimension (repeatable); NAME=V1,V2,... sweeps, one row each")
    parser.add_argument("--operands", action="store_true", help="show per-operand traffic (text only)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of text")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--example", action="store_true",
                        help="analyse the built-in example program (no SOURCE needed)")
    parser.add_argument("source", nargs="?", metavar="SOURCE")
    analyze_views.add_view_flags(parser)
    parser.set_defaults(func=run)


def parse_dims(items: list[str]) -> dict[str, tuple[int, ...]] | None:
    """``--dim`` values: name -> its extents in the order given; several
    extents (``NAME=V1,V2``) make a sweep, one row per binding (companions
    §8.3: every --dim error exits 1, the spec's rule over the general
    'malformed command line exits 2' one, since a binding is the program's
    input). Whether the program has that dimension, and whether an extent lies
    in its range, the analysis decides."""
    if not items:
        return None
    dims: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise DimBindingError(f"--dim takes NAME=EXTENT or NAME=V1,V2,... (e.g. --dim seq=128 "
                                  f"or --dim seq=64,128), got '{item}'")
        extents = tuple(_extent(name, text) for text in value.split(","))
        if name in dims:
            first = ",".join(map(str, dims[name]))
            listed = ",".join(map(str, dims[name] + extents))
            raise DimBindingError(f"--dim {name} was given twice ({name}={first}, then {item}); "
                                  f"list its values once: --dim {name}={listed}")
        repeated = sorted({e for e in extents if extents.count(e) > 1})
        if repeated:
            raise DimBindingError(f"--dim {name} lists {repeated[0]} twice in '{item}'; "
                                  "list each EXTENT once")
        dims[name] = extents
    return dims


def _extent(name: str, text: str) -> int:
    """One EXTENT: ASCII decimal digits only, the one integer rule of every
    input (text_input.read_integer). Python's int() also takes other scripts'
    digits, '_' separators, a sign and surrounding blanks; none of those is
    how an extent is written, so each is refused by name."""
    from tilefoundry.text_input import IntegerTextError, read_integer

    try:
        return read_integer(text, signed=False)
    except IntegerTextError as exc:
        if exc.too_long:
            raise DimBindingError(f"--dim {name}: the value {exc}; give each EXTENT in fewer "
                                  "digits") from None
    shown = f"'{text}'" if text.isascii() else f"'{text}' ({ascii(text)})"
    raise DimBindingError(f"--dim {name}: every value must be an integer, got {shown}; "
                          f"write each EXTENT in ASCII digits 0-9 only (e.g. --dim {name}=96 "
                          f"or --dim {name}=64,128)")


def _requested(args):
    """The family flags given, in FAMILIES order, or ALL for ``--all``, which
    takes no family flag beside it: each would either repeat it or contradict
    it (``--all --performance`` on a target that cannot serve performance)."""
    named = [f for f in FAMILIES if getattr(args, f.replace("-", "_"))]
    if args.all and named:
        raise UsageError(f"--all already runs every family the target serves, so --{named[0]} "
                         f"beside it repeats or contradicts it: give --all alone, or the family "
                         f"flags alone")
    return ALL if args.all else named


def _source(args) -> str:
    if args.example:
        if args.source:
            raise UsageError("analyze: give either SOURCE or --example, not both")
        from importlib.resources import files

        path = files("tilefoundry.examples").joinpath(EXAMPLE_SOURCE.split(":")[0])
        return f"{path}:{EXAMPLE_SOURCE.split(':')[1]}"
    if not args.source:
        raise UsageError("analyze: SOURCE is required (file.py[:Module[.child...][.function]]), or --example")
    return args.source


def run(args) -> int:
    requested = _requested(args)
    source = _source(args)
    grid = parse_dims(args.dim)
    analyze_views.check_flags(args, grid)
    _check_python_source(source)

    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(source)
    if args.topology is not None:  # a level that is none is refused with or without a family
        from tilefoundry.analysis.check import resolve_level

        resolve_level(module, args.topology)
    if analyze_views.compares(args, grid):
        text = analyze_views.rows(module, function, requested, args, grid)
    else:
        from tilefoundry.api import retarget

        module = retarget(module, args.target[0] if args.target else None)
        dims = analyze_views.one_binding(grid)
        if requested or analyze_views.wants_views(args):
            text = _with_progress(_analysis_text, module, function, requested, args, dims)
        elif args.summary:
            raise UsageError("--summary prints a report's summary lines: name a family "
                             "(--compute-cost, ...) or --all")
        else:
            text = typed_program(module, function, dims, as_json=args.json)
    write_file(text, args.output, "--output")
    return 0


def _check_python_source(source: str) -> None:
    """Refuse, before running it, a SOURCE that is no Python file: a KTIR file
    belongs to `intertile`, and a directory or device is not "not found"."""
    from tilefoundry.cli.files import input_file
    from tilefoundry.dsl.loader import split_source

    path, _ = split_source(source)
    if path.endswith(".mlir"):
        raise AnalysisError(f"{path} is a KTIR file, not a Python program: check it with "
                            f"`tilefoundry intertile verify {path}` (or `intertile run`)")
    if os.path.exists(path):  # a missing file keeps the loader's own message
        input_file(path, "a Python file: SOURCE is file.py[:Module[.child...][.function]]")


def typed_program(module, function, dims, as_json: bool = False) -> str:
    """The inlined typed program (text, or the analyze report with no family:
    docs/json.md), checked exactly as for an analysis."""
    from tilefoundry.api import typed_rendering

    rendering = typed_rendering(module, function, dims)
    return rendering.json if as_json else rendering.text


def _options(args) -> dict:
    """What the families read beside the program: the estimate's launch mode."""
    from tilefoundry.analysis.estimate.timings import EstimateOptions

    return {"estimate": EstimateOptions(launch=getattr(args, "launch", "graph"))}


def _with_progress(work, *arguments):
    """``work(*arguments)`` under a progress bar on a terminal: the stage analyze
    runs and the time spent (cli/progress.py); silent otherwise."""
    from tilefoundry.analysis.analyze import reporting_progress
    from tilefoundry.cli.progress import stages

    with stages("analyze") as step, reporting_progress(step):
        return work(*arguments)


def _analysis_text(module, function, requested, args, dims) -> str:
    """The report of the requested families, or what a view puts in its
    place (--top, --breakdown); the view files are written on the way. A view reads all
    four families: when fewer were asked, the report keeps to those asked."""
    from tilefoundry.analysis.analyze import analyze, analyze_served
    from tilefoundry.render.report import render_analysis

    runs: dict = {}  # families -> (result, rendering): one analysis per set of families

    def run_families(families):
        families = tuple(families)
        if families not in runs:
            result = analyze(module, function, analysis=families, level=args.topology, dims=dims,
                             options=_options(args))
            runs[families] = result, render_analysis(result, operands=args.operands)
        return runs[families]

    if requested == ALL:  # every family the target serves: what ran is the request
        result = analyze_served(module, function, FAMILIES, level=args.topology, dims=dims,
                                options=_options(args))
        requested = list(result.analyses)
        runs[tuple(requested)] = result, render_analysis(result, operands=args.operands)
    if not analyze_views.wants_views(args):
        rendering = run_families(requested)[1]
        if args.summary:  # the header and summary lines, without the annotated program
            from tilefoundry.render.report import collapsed

            return "\n".join(collapsed(rendering.summary)) + "\n"
        return rendering.json if args.json else rendering.text
    viewed = run_families(analyze_views.families_for(requested, module.resolve_target()))
    replaced = analyze_views.views(*viewed, args)  # writes the view files
    if replaced is not None:
        return replaced
    if not requested:
        return typed_program(module, function, dims, as_json=args.json)
    rendering = run_families(requested)[1]
    return rendering.json if args.json else rendering.text
