"""`tilefoundry run`: execute a selection in numpy and print per output its
shape, dtype, min/max/mean, the count of non-finite elements and a checksum
(docs/execution.md)."""
from __future__ import annotations

import os

from tilefoundry.cli.files import write_file
from tilefoundry.errors import DimBindingError


def add_input_flags(parser) -> None:
    """The flags ``run`` and ``check`` share: binding, inputs, weights, seed."""
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=EXTENT",
                        help="bind a dimension (repeatable)")
    parser.add_argument("--inputs", metavar="random|FILE",
                        help="arguments by name from FILE.npz or FILE.safetensors (default: random)")
    parser.add_argument("--weights", metavar="CKPT.safetensors|DIR",
                        help="every ConstTensor weight, keyed by its dotted Module path and name; or a "
                             "Hugging Face checkpoint directory, read by a zoo model's mapping")
    parser.add_argument("--seed", type=_seed, default=0, help="seed of every random draw (default 0)")


def _seed(text: str) -> int:
    """A seed: a whole number >= 0 (numpy's rule), written as every integer
    input is (text_input.read_integer)."""
    import argparse

    from tilefoundry.text_input import IntegerTextError, read_integer, shown_text

    try:
        return read_integer(text, signed=False)
    except IntegerTextError as exc:
        if exc.too_long:
            raise argparse.ArgumentTypeError(f"the seed {exc}") from None
        raise argparse.ArgumentTypeError(f"{shown_text(text)} is not a seed: give a whole number "
                                         ">= 0 in ASCII digits, e.g. --seed 3") from None


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="execute a program in numpy and summarise its outputs",
        description="Execute SOURCE = file.py[:Module[.child...][.function]] in numpy (ml_dtypes for "
                    "bf16/fp8/fp4): every result rounded to its declared dtype. Arguments not given "
                    "are drawn at random (seeded); integer inputs that index are drawn inside the "
                    "ranges the program reads them in.",
        epilog="examples (from tests/data/programs):\n"
               "  tilefoundry run p04_split_k_partial.py\n"
               "  tilefoundry run --dim seq=96 --seed 3 p11_seq_variants.py:SeqPool\n"
               "  tilefoundry run --json p06_module_tree.py:MiniStack",
    )
    add_input_flags(parser)
    parser.add_argument("--save", metavar="OUT.npz|OUT.safetensors",
                        help="write the outputs to exactly this file; the extension decides the format "
                             "(npz holds f32/f16/i32/i64/bool, safetensors also bf16 and fp8)")
    parser.add_argument("--json", action="store_true", help="print the JSON document instead of text")
    parser.add_argument("--strict", action="store_true",
                        help="refuse (exit 1) a program `analyze --memory` refuses for its target's "
                             "capacities, instead of running it with a warning")
    parser.add_argument("source", metavar="SOURCE")
    parser.set_defaults(func=run)


def one_binding(items: list[str]) -> dict:
    from tilefoundry.cli.analyze_cmd import parse_dims

    grid = parse_dims(items) or {}
    several = [name for name, values in grid.items() if len(values) > 1]
    if several:
        raise DimBindingError(f"run: --dim {several[0]} lists several values; run executes one "
                              "binding (tilefoundry check --dim NAME=V1,V2 checks each)")
    return {name: values[0] for name, values in grid.items()}


def check_tensor_files(args) -> None:
    """A named --inputs/--weights file is a readable regular file (a pipe would hang)."""
    from tilefoundry.cli.files import input_file

    for flag, path in (("--inputs", args.inputs), ("--weights", args.weights)):
        if flag == "--weights" and path and os.path.isdir(path):
            continue  # a Hugging Face checkpoint directory: the models room reads it (issue 39)
        if path and path != "random":
            if not path.endswith((".npz", ".safetensors")):
                from tilefoundry.errors import EvaluationError

                raise EvaluationError(f"{flag} {path}: give a .npz or .safetensors file (or "
                                      f"{'random' if flag == '--inputs' else 'omit it for random weights'})")
            input_file(path, "a .npz or .safetensors file")


def input_rows(prepared, inputs, weights) -> list[dict]:
    import numpy as np

    from tilefoundry.semantics.op_numerics import dtype_name

    rows = []
    for param, name, is_weight in prepared.names:
        array = np.asarray(prepared.arguments[param])
        given = weights if is_weight and weights else inputs
        source = "random" if given in (None, "random") else str(given)
        rows.append({"name": name, "shape": list(array.shape), "dtype": dtype_name(array.dtype),
                     "source": source, "weight": bool(is_weight)})
    return rows


def run(args) -> int:
    from tilefoundry.cli.analyze_cmd import _check_python_source
    from tilefoundry.execute import run_logical
    from tilefoundry.execution import output_summary, prepare
    from tilefoundry.render.views.run_check import run_json, run_text

    dims = one_binding(args.dim)
    _check_python_source(args.source)
    check_tensor_files(args)
    if args.save:
        save_path_checked(args.save)
    prepared = prepare(args.source, dims=dims or None, inputs=args.inputs, weights=args.weights,
                       seed=args.seed)
    if args.save:  # a dtype the format cannot hold is refused before the run, from the types
        _save_types_checked(prepared, args.save)
    refusal = memory_refusal(args.source, dims or None)
    if refusal is not None:
        if args.strict:
            raise refusal
        import sys

        print(f"tilefoundry: warning: analyze --memory refuses this program: {refusal}; numpy runs it "
              "without the target's capacities (--strict refuses it)", file=sys.stderr)
    outputs = run_logical(prepared.function, prepared.arguments)
    if args.save:
        save_outputs(outputs, args.save)
    summaries = [output_summary(name, value) for name, value in outputs.items()]
    rows = input_rows(prepared, args.inputs, args.weights)
    render = run_json if args.json else run_text
    write_file(render(args.source, dims, args.seed, rows, summaries), None, "--json")
    return 0


def memory_refusal(source: str, dims):
    """The memory family's refusal of the program (a value past its level's
    capacity, issue 40 item 7), or None: a run executes what the target could
    not hold, so it says so. A target that states no memory hierarchy refuses
    nothing here."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import AnalysisError

    module, function = load_selection(source)
    if "memory" not in module.resolve_target().analyzer_selectors():
        return None
    try:
        analyze(module, function, analysis=("memory",), dims=dims)
    except AnalysisError as exc:
        if getattr(exc, "refused_family", None) in ("memory", "traffic"):
            return exc
    return None


def save_outputs(outputs: dict, path: str) -> None:
    """The outputs to exactly ``path`` (its extension decides the format; a
    dtype the format cannot hold is refused by name, nothing is widened)."""
    from tilefoundry.execute.tensor_files import save_tensor_file

    save_path_checked(path)
    save_tensor_file(outputs, path)


def _save_types_checked(prepared, path: str) -> None:
    from tilefoundry.execute import output_leaves
    from tilefoundry.execute.tensor_files import check_holds
    from tilefoundry.semantics.op_numerics import numpy_dtype

    check_holds({name: numpy_dtype(t.dtype) for name, _, t in output_leaves(prepared.function.body.type)},
                path)


def save_path_checked(path: str) -> None:
    """Before the run: the extension names a format, and the file can be written."""
    from tilefoundry.cli.files import output_file

    if not path.endswith((".npz", ".safetensors")):
        from tilefoundry.errors import EvaluationError

        raise EvaluationError(f"--save {path}: name a .npz or .safetensors file (the extension "
                              "decides the format)")
    output_file(path, "--save")
