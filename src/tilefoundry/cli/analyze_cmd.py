"""`tilefoundry analyze`: the typed program, or the requested analysis families
(companions §8)."""
from __future__ import annotations

import os
import sys

from tilefoundry.errors import AnalysisError, DimBindingError, UsageError

FAMILIES = ("compute-cost", "memory", "roofline", "performance", "collectives")
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
               "  tilefoundry analyze --example --performance",
    )
    for family in FAMILIES:
        parser.add_argument(f"--{family}", action="store_true", help=f"report {family}")
    parser.add_argument("--topology", metavar="LEVEL", help="per-unit level (default: the first effective topology)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=EXTENT",
                        help="bind a dimension (repeatable)")
    parser.add_argument("--operands", action="store_true", help="show per-operand traffic (text only)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of text")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--example", action="store_true",
                        help="analyse the built-in example program (no SOURCE needed)")
    parser.add_argument("source", nargs="?", metavar="SOURCE")
    parser.set_defaults(func=run)


def parse_dims(items: list[str]) -> dict[str, int] | None:
    """``--dim`` values (companions §8.3: every --dim error exits 1, the spec's
    rule over the general 'malformed command line exits 2' one, since a binding
    is the program's input). Whether the program has that dimension, and whether
    the extent lies in its range, the analysis decides."""
    if not items:
        return None
    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise DimBindingError(f"--dim takes NAME=EXTENT (e.g. --dim seq=128), got '{item}'")
        if name in dims:
            # one run binds one extent: say so, never suggest another way to list several
            raise DimBindingError(f"--dim {name} was given twice ({name}={dims[name]}, then {item}); "
                             f"analyze binds one EXTENT per dimension: keep one --dim {name}=EXTENT")
        values = value.split(",")
        for text in values:
            try:
                int(text)
            except ValueError:
                raise DimBindingError(f"--dim {name}: every value must be an integer, got '{text}'") from None
        if len(values) > 1:
            raise DimBindingError(f"--dim {name} takes one EXTENT at a time, got '{item}'; "
                             "run analyze once per extent")
        dims[name] = int(values[0])
    return dims


def _requested(args) -> list[str]:
    return [f for f in FAMILIES if getattr(args, f.replace("-", "_"))]


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
    dims = parse_dims(args.dim)
    _check_python_source(source)

    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(source)
    if requested:
        text = _analysis_text(module, function, requested, args, dims)
    else:
        text = typed_program(module, function, dims, as_json=args.json)
    _write(text, args.output)
    return 0


def _check_python_source(source: str) -> None:
    """Refuse, before running it, a SOURCE that is no Python file: a KTIR file
    belongs to `intertile`, and a directory or device is not "not found"."""
    from tilefoundry.cli.main import input_file
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


def _analysis_text(module, function, requested, args, dims) -> str:
    from tilefoundry.analysis.api import analyze
    from tilefoundry.render.report import render_analysis

    result = analyze(module, function, analysis=requested, level=args.topology, dims=dims)
    rendering = render_analysis(result, operands=args.operands)
    return rendering.json if args.json else rendering.text


def _write(text: str, output: str | None) -> None:
    if output:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise AnalysisError(f"cannot write --output {output}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
