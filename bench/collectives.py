"""Benchmark: what the collectives family adds on top of the other four (issue 13).

For a zoo decoder layer and its placed attention kernel (llama3-8b and phi3-mini
layer0: `decoder_layer`, `attention_placed`), times in-process analyze + render
of compute-cost, memory, roofline and performance, then the same with
collectives added, best of N each, and prints the difference next to the 0.2 s
goal. Also prints how many reshards were classified and how many ops written.

Run: python bench/collectives.py [--repeat N]
"""
from __future__ import annotations

import argparse
import sys
import time

GOAL_S = 0.2
FOUR = ("compute-cost", "memory", "roofline", "performance")
CASES = (("llama3-8b", "layer0.decoder_layer"), ("llama3-8b", "layer0.attention_placed"),
         ("phi3-mini", "layer0.decoder_layer"), ("phi3-mini", "layer0.attention_placed"))


def _best(source: str, dims: dict, families: tuple, repeat: int) -> tuple[float, object]:
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    best, result = float("inf"), None
    for _ in range(repeat):
        module, function = load_selection(source)  # outside the timer: loading is shared
        start = time.perf_counter()
        result = analyze(module, function, analysis=families, dims=dims)
        render_analysis(result)
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from tilefoundry.analysis.collectives import CollectivesSummaryMetadata
    from tilefoundry.models import MODELS

    by_name = {m.name: m for m in MODELS}
    print(f"{'selection':<42}{'four_s':>8}{'five_s':>8}{'added_s':>9}  reshards ops  <= {GOAL_S}s")
    worst = 0.0
    for name, suffix in CASES:
        model = by_name[name]
        selection = next(s for s in model.selections if s.selector == f"{model.root}.{suffix}")
        source, dims = model.source_arg(selection), selection.dim_map()
        four, _ = _best(source, dims, FOUR, args.repeat)
        five, result = _best(source, dims, FOUR + ("collectives",), args.repeat)
        summary = result.function.get_metadata(CollectivesSummaryMetadata)
        ops = sum(n for k, n in summary.ops if k.startswith("inter_tile_"))
        added = five - four
        worst = max(worst, added)
        print(f"{selection.selector:<42}{four:>8.3f}{five:>8.3f}{added:>9.3f}  "
              f"{summary.reshards:>8} {ops:>3}  {'ok' if added <= GOAL_S else 'slow'}")
    print(f"largest addition: {worst:.3f} s (goal <= {GOAL_S} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
