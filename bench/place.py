"""Issue 42 item 4: `place` held against people. Prints; never asserts.

1. For every kernel of every zoo model's logical layer: the hand-placed kernel's
   objective (the H200 placed root's kernel of the same name), the placed one,
   their ratio, the search time and the check time; a kernel place refuses is a
   row with its reason.
2. Memory-bound kernels (each placed kernel above, a Llama-size GEMV (its
   weight stored (K, N), and (N, K) as a PyTorch Linear keeps it), a
   Llama-size decode attention (8 KV heads x 4 query rows) over 4096 and over
   32768 cache rows, and an RMSNorm over a 4096-token prefill) against their
   roofline ideal (goal: within 1.3x), and a 4096^3 bf16 GEMM (goal: within
   1.6x). A kernel of a few microseconds is latency-bound, not memory-bound: the
   ideal leaves out the launch and DRAM round trips every kernel pays (the
   one-row norms, the 4096-row attention); the longer shapes are where the bar
   applies (docs/place.md). A kernel's ideal is the lesser of the logical kernel's
   (its flops at the best unit its dtypes allow: a placed program that casts its
   tiles to f32 is not let off by its own f32 ideal) and the placed program's
   (the bytes it must move, where the logical program materialises casts).

The speed goals (a decoder layer's kernels within 60 s on 2 cores, one GEMM
within 10 s) are read off the search column.

Run: python bench/place.py [--time-limit S] [--skip-gemm] [--model NAME ...]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time

_ATTENTION = '''from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="attention", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class Logical:
    @func
    def attention(q: Tensor[(8, 4, 128), "f32"], k: Tensor[(8, 4096, 128), "bf16"],
                  v: Tensor[(8, 4096, 128), "bf16"]) -> Tensor[(8, 4, 128), "bf16"]:
        scores = tf.matmul(q, tf.transpose(tf.cast(k, "f32"), (0, 2, 1))) * 0.08838834764831845
        return tf.cast(tf.matmul(tf.softmax(scores, -1), tf.cast(v, "f32")), "bf16")
'''

_NORM = '''from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="norm", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class Logical:
    @func
    def norm(x: Tensor[(4096, 4096), "bf16"], w: ConstTensor[(4096,), "bf16"]) -> Tensor[(4096, 4096), "bf16"]:
        x32 = tf.cast(x, "f32")
        ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * 0.000244140625
        return tf.cast(x32 * tf.rsqrt(ms + 1e-5), "bf16") * w
'''

_LOGICAL = '''from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="{name}", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class Logical:
    @func
    def {name}(a: Tensor[({m}, {k}), "bf16"], b: ConstTensor[({k}, {n}), "bf16"]) -> Tensor[({m}, {n}), "bf16"]:
        return a @ b
'''


#: seconds a roofline-table search may take at least (their spaces are priced whole)
ROOFLINE_TIME_LIMIT = 60.0


def _hand_placed(model, fn: str, objective):
    """The objective of the H200 placed root's kernel named ``fn``, or None."""
    from tilefoundry.placer.objective import price

    if fn not in model.placed_functions:
        return None
    root = next((p.root for p in model.placed_roots if p.target == "nvidia.h200_sxm"), None)
    # the placed layer's entry is its decoder_layer, selected as the layer itself
    selector = f"{root}.layer0" if fn == "decoder_layer" else f"{root}.layer0.{fn}"
    found = next((s for s in model.selections if s.selector == selector), None)
    if found is None:
        return None
    from tilefoundry import api

    module, function = api.load(f"{model.source}:{selector}")
    if found.dims:
        from tilefoundry.api import analyze

        record = analyze((module, function), dims=found.dim_map(), families=(objective.family,))
        figures = record.figures()
        value = figures.get(objective.figure)
        return value if value is not None else getattr(record.records.get(objective.family), "predicted_ns", None)
    return price((module, function), objective).objective_ns


def _logical_ideal(selection: str, dims) -> int | None:
    """The roofline ideal of the logical kernel itself (None where it refuses)."""
    from tilefoundry import api
    from tilefoundry.errors import TileFoundryError

    try:
        return api.analyze(selection, dims=dims, families=("roofline",)).figures()["ideal_ns"]
    except TileFoundryError:
        return None


def _row(cells: list, widths=(14, 22, 12, 12, 7, 8, 8)) -> str:
    return " ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " ".join(str(c) for c in cells[len(widths):])


def zoo_table(time_limit: float, only=()) -> list:
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.models import MODELS
    from tilefoundry.placer import place
    from tilefoundry.placer.objective import objective_of
    from tilefoundry.target.catalog import resolve_identity

    objective = objective_of(resolve_identity("nvidia.h200_sxm"))
    print(f"# objective: {objective.figure} ({objective.family}); hand = the H200 placed root's kernel")
    print(_row(["model", "kernel", "hand", "placed", "ratio", "search", "check", "note"]))
    placed_rows = []
    for model in (m for m in MODELS if not only or m.name in only):
        layer_total = checked = 0.0
        layer_own = None
        for fn in model.layer_functions:
            selector = f"{model.root}.layer0.{fn}"
            found = next((s for s in model.selections if s.selector == selector), None)
            dims = found.dim_map() if found is not None else None
            start = time.perf_counter()
            try:
                result = place(f"{model.source}:{selector}", time_limit=time_limit, dims=dims, progress=False)
            except TileFoundryError as exc:
                layer_total += time.perf_counter() - start
                print(_row([model.name, fn, "", "", "", f"{time.perf_counter() - start:.1f}s", "",
                            "not placed: " + str(exc).split("place: ")[-1][:110]]))
                continue
            except Exception as exc:  # a crash is a bug in place: shown, and the table goes on
                print(_row([model.name, fn, "", "", "", "", "", f"PLACE BUG: {type(exc).__name__}: {exc}"]))
                continue
            layer_total += result.seconds
            checked += result.check_seconds
            if fn == "decoder_layer":
                layer_own = (result.seconds, result.check_seconds)
            hand = _hand_placed(model, fn, objective)
            best = result.best
            placed = best.figures[objective.figure] if best else None
            ratio = f"{placed / hand:.2f}" if best and hand else ""
            note = best.description if best else f"no answer ({len(result.bugs)} place bugs)"
            note += "" if result.proven else " (stopped at the limit)"
            print(_row([model.name, fn, f"{hand:,.0f}" if hand else "-", f"{placed:,.0f}" if placed else "-",
                        ratio, f"{result.seconds:.1f}s", f"{result.check_seconds:.1f}s", note]))
            if best:
                placed_rows.append((f"{model.name}.{fn}", best.figures,
                                    _logical_ideal(f"{model.source}:{selector}", dims)))
        own = ("decoder_layer not placed" if layer_own is None else
               f"decoder_layer searched in {layer_own[0]:.1f} s + checked in {layer_own[1]:.1f} s "
               f"= {sum(layer_own):.1f} s (goal: within 60 s)")
        print(f"# {model.name}: {own}; every kernel above searched in {layer_total:.1f} s, "
              f"checked in {checked:.1f} s")
    return placed_rows


def roofline_table(rows: list, time_limit: float, skip_gemm: bool) -> None:
    from tilefoundry.placer import place

    with tempfile.TemporaryDirectory(prefix="place-bench-") as folder:
        weight_nk = (_LOGICAL.format(name="gemv", m=1, k=4096, n=14336)
                     .replace("ConstTensor[(4096, 14336)", "ConstTensor[(14336, 4096)")
                     .replace("return a @ b", "return a @ tf.transpose(b, (1, 0))"))
        shapes = [("gemv_4096x14336", _LOGICAL.format(name="gemv", m=1, k=4096, n=14336), 1.3),
                  ("gemv_4096x14336_weight_(N,K)", weight_nk, 1.3),
                  ("decode_attention_llama", _ATTENTION, 1.3),
                  ("decode_attention_llama_32k", _ATTENTION.replace("4096, 128", "32768, 128"), 1.3),
                  ("rms_norm_4096_tokens", _NORM, 1.3)]
        if not skip_gemm:
            shapes.append(("gemm_4096^3", _LOGICAL.format(name="gemm", m=4096, k=4096, n=4096), 1.6))
        goals = {row[0]: 1.3 for row in rows}
        for name, text, goal in shapes:
            path = os.path.join(folder, re.sub(r"\W", "_", name) + ".py")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            # the bar is on the best of the space, so a search here may run past a
            # short --time-limit (the speed goals are read off the zoo table above)
            result = place(path, time_limit=max(time_limit, ROOFLINE_TIME_LIMIT), progress=False)
            print(f"# {name}: searched {result.seconds:.1f} s, checked {result.check_seconds:.1f} s, "
                  f"{'proven' if result.proven else 'stopped at the limit'}; {result.best.description}")
            rows.append((name, result.best.figures, _logical_ideal(path, None)))
            goals[name] = goal
    print()
    print(_row(["kernel", "", "objective", "ideal", "ratio", "goal"], (30, 0, 12, 12, 7, 6)))
    for name, figures, logical in rows:
        objective = next(v for k, v in figures.items() if k.endswith("_ns") and k != "ideal_ns")
        ideal = min((i for i in (figures.get("ideal_ns"), logical) if i), default=None)
        ratio = f"{objective / ideal:.2f}" if ideal else "-"
        print(_row([name, "", f"{objective:,.0f}", f"{ideal:,}" if ideal else "-", ratio,
                    f"{goals[name]:.1f}x"], (30, 0, 12, 12, 7, 6)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--skip-gemm", action="store_true", help="leave out the 4096^3 GEMM")
    parser.add_argument("--model", action="append", default=[], help="only this zoo model (repeatable)")
    args = parser.parse_args()
    rows = zoo_table(args.time_limit, tuple(args.model))
    print()
    roofline_table(rows, args.time_limit, args.skip_gemm)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
