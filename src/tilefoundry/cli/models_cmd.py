"""``tilefoundry models``: the model zoo shipped in the package (tilefoundry.models).

Lists each model's name, layer count, kernels and the selections ``analyze`` can
be pointed at: the logical kernels and layers, and per target the placed decode
step of the whole model, its kernels and layers. ``--json`` prints them as a list of
``{"name", "source", "root", "config", "architecture", "layers", "functions",
"placed_roots", "selections": [{"selector", "dims", "kind", "target"}]}`` where
``dims`` is ready to splice into an ``analyze`` command line. Reads only the
registry: no model file is imported.
"""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "models",
        help="list the model zoo shipped with tilefoundry and its selections",
        description="List the model files shipped in tilefoundry.models: name, layers, "
                    "kernels and every selection with the --dim bindings it needs.",
        epilog="examples:\n  tilefoundry models\n  tilefoundry models --json",
    )
    parser.add_argument("--json", action="store_true",
                        help="print a JSON list of models with their source path and selections")
    parser.set_defaults(func=run)


def models_json() -> list[dict]:
    from tilefoundry.models import MODELS

    return [
        {
            "name": m.name,
            "source": str(m.source),
            "root": m.root,
            "architecture": m.architecture,
            "config": m.config,
            "layers": m.layers,
            "functions": list(m.functions),
            "placed_roots": [{"root": p.root, "target": p.target} for p in m.placed_roots],
            "selections": [{"selector": s.selector, "dims": s.dim_args(), "kind": s.kind,
                            "target": s.target} for s in m.selections],
        }
        for m in MODELS
    ]


def table_lines() -> list[str]:
    from tilefoundry.models import MODELS, models_dir

    lines = [f"Model zoo ({len(MODELS)} models) in {models_dir()}", ""]
    header = ("MODEL", "LAYERS", "FUNCTIONS", "SELECTIONS")
    rows = [(m.name, str(m.layers), ", ".join(m.functions), str(len(m.selections))) for m in MODELS]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]
    for row in [header] + rows:
        lines.append("  ".join(cell.ljust(widths[i]) if i < 3 else cell for i, cell in enumerate(row)).rstrip())
    for m in MODELS:
        lines += ["", f"{m.name}: {m.architecture}", f"  config: {m.config}", f"  source: {m.source}"]
        if m.placed_roots:  # what the name alone covers in a sweep (dsl/zoo_names.py)
            placed = ", ".join(f"{p.root} on {p.target}" for p in m.placed_roots)
            lines.append(f"  in a sweep, {m.name} alone: {placed} (another target: {m.root})")
        width = max(len(s.selector) for s in m.selections)
        kinds = max(len(s.kind) for s in m.selections)
        for s in m.selections:
            lines.append(f"  {s.selector.ljust(width)}  {s.kind.ljust(kinds)}  {s.target}  "
                         f"{' '.join(s.dim_args())}".rstrip())
    lines += ["", "Analyse one: tilefoundry analyze --compute-cost --memory --roofline --performance "
                  "[--dim NAME=V] MODEL:SELECTOR (or SOURCE:SELECTOR)   (--json lists them for scripts)"]
    return lines


def run(args: argparse.Namespace) -> int:
    if args.json:
        from tilefoundry.render.json_contract import dumps

        # issue 9 fixed this document as a bare list (no identity keys)
        print(dumps(models_json(), kind="models"), end="")
    else:
        print("\n".join(table_lines()))
    return 0
