"""`tilefoundry diff A B`: two analyses side by side (issue 40 item 8,
docs/views.md): two selections, or one selection under two --target or two
--dim bindings. Every family the targets serve runs on both sides
(`api.analyze(..., families="all")`, so a family added to `api.FAMILIES` is
compared with no change here); the figures are `Analysis.figures()`, the
statements `--top`'s rows."""
from __future__ import annotations

from tilefoundry.errors import UsageError

_COUNT = 10


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="two analyses side by side: every figure with its ratio, the statements that moved",
        description="Analyse A and B with every family their targets serve and print each headline "
                    "figure of both with the ratio B/A, then the statements whose time moved most. "
                    "A and B are two selections (file.py[:Module[.child...][.function]] or a zoo "
                    "name), or one selection under two --target or one --dim NAME=V1,V2.",
        epilog="examples (from tests/data/programs):\n"
               "  tilefoundry diff p03_tiled_gemm.py p04_split_k_partial.py\n"
               "  tilefoundry diff --target nvidia.h200_sxm --target nvidia.h100_sxm p03_tiled_gemm.py\n"
               "  tilefoundry diff --dim seq=96,1024 p11_seq_variants.py:SeqPool",
    )
    parser.add_argument("selections", nargs="+", metavar="SELECTION",
                        help="A and B, or one selection compared under two --target or --dim values")
    parser.add_argument("--target", action="append", default=[], metavar="NAME",
                        help="analyse for target NAME: once for both sides, twice for one selection")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=EXTENT",
                        help="bind a dimension on both sides (repeatable); NAME=V1,V2 (one selection): "
                             "A binds V1, B binds V2")
    parser.add_argument("--topology", metavar="LEVEL", help="per-unit level (default: the first)")
    parser.add_argument("--top", type=int, default=_COUNT, metavar="N",
                        help=f"how many moved statements to list (default {_COUNT})")
    parser.add_argument("--json", action="store_true", help="print the diff JSON document")
    parser.set_defaults(func=run)


def sides_of(selections: list[str], targets: list[str], grid: dict) -> list[dict]:
    """The two sides a command line names: ``{"selection", "target", "dims"}``
    each; what names no pair (three selections, two targets and two selections,
    two lists of dims) is a usage error (exit 2)."""
    listed = {name: values for name, values in grid.items() if len(values) > 1}
    fixed = {name: values[0] for name, values in grid.items() if len(values) == 1}
    if len(selections) > 2:
        raise UsageError(f"diff compares two analyses, got {len(selections)} selections")
    if len(targets) > 2:
        raise UsageError(f"diff compares two analyses, got {len(targets)} --target")
    if any(len(values) > 2 for values in listed.values()) or len(listed) > 1:
        raise UsageError("diff compares two bindings: give one --dim NAME=V1,V2 (A binds V1, B V2)")
    pairs = (len(selections) == 2) + (len(targets) == 2) + bool(listed)
    if pairs != 1:
        raise UsageError("diff compares two analyses: give two selections, or one selection with "
                         "two --target or one --dim NAME=V1,V2" if pairs == 0 else
                         "diff compares along one thing at a time: two selections, two --target or "
                         "one --dim NAME=V1,V2, not several of them")
    sides = []
    for index in range(2):
        dims = dict(fixed)
        for name, values in listed.items():
            dims[name] = values[index]
        sides.append({"selection": selections[index if len(selections) == 2 else 0],
                      "target": targets[index if len(targets) == 2 else 0] if targets else None,
                      "dims": dims})
    return sides


def run(args) -> int:
    from tilefoundry.cli.analyze_cmd import parse_dims
    from tilefoundry.render.views import diff

    if args.top < 1:
        raise UsageError(f"--top takes a positive whole number, got {args.top}")
    sides = sides_of(args.selections, args.target, parse_dims(args.dim) or {})
    analyses = [_analysed(side, args.topology) for side in sides]
    for side, analysis in zip(sides, analyses):
        side["target"] = analysis.to_dict()["target"]
        side["families"] = list(analysis.families)
    figures = diff.figure_rows(analyses[0].figures(), analyses[1].figures())
    statements = diff.moved_statements(*(_statement_rows(a) for a in analyses))
    render = diff.diff_json if args.json else diff.diff_text
    from tilefoundry.cli.files import write_file

    write_file(render(sides, figures, statements, args.top), None, "--json")
    return 0


def _analysed(side: dict, topology):
    """One side analysed with every family its target serves, under a
    progress bar on a terminal."""
    import tilefoundry
    from tilefoundry.analysis.analyze import reporting_progress
    from tilefoundry.cli.progress import stages

    with stages(f"diff {side['selection']}") as step, reporting_progress(step):
        return tilefoundry.analyze(side["selection"], families="all", dims=side["dims"] or None,
                                   target=side["target"], topology=topology)


def _statement_rows(analysis) -> list[dict]:
    """``--top``'s rows of one side: every call's figures over its runs and waves."""
    from tilefoundry.render.report import render_analysis
    from tilefoundry.render.views.top import executions_of, statement_rows

    rendering = render_analysis(analysis.result)
    return statement_rows(rendering.report, executions_of(analysis.result, rendering))
