"""Issue 11 speed targets: verification linear in groups, classification not
quadratic in cores. Prints the seconds of (a) verifying a gather over 16,384
groups (target < 1 s) and (b) classifying, realising and checking a relayout
over 8,192 cores (target < 1 s), each with a quarter size to show the growth."""
from __future__ import annotations

import time

from tilefoundry.intertile.classify import classify_tables
from tilefoundry.intertile.program import check_function
from tilefoundry.intertile.reader import read_text
from tilefoundry.intertile.realize import realize, reproduces
from tilefoundry.intertile.tables import parse_tables

GATHER = """#groups = affine_set<(g) : (g >= 0, -g + {last} >= 0)>
#pair = affine_set<(i)[g] : (i - 2 * g >= 0, -i + 2 * g + 1 >= 0)>
#dep = affine_set<(p)[c, g] : (p - 2 * g >= 0, -p + 2 * g + 1 >= 0)>
func.func @f(%piece: tensor<2x3xf32>) -> tensor<4x3xf32> {{
  %fut = ktdp.inter_tile_produce producer_tiles_per_group = #pair
      : tensor<2x3xf32> -> !ktdp.tile_future<tensor<2x3xf32>, #groups>
  {{
    ^bb0(%gid: index):
      ktdp.yield_partial %piece : tensor<2x3xf32>
  }}
  %r = ktdp.inter_tile_gather(%fut) consumer_tiles_per_group = #pair,
      gather_dimensions = [0], producer_dependency_per_consumer = #dep
      : !ktdp.tile_future<tensor<2x3xf32>, #groups> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}}
"""


def verify_groups(groups: int) -> float:
    fn = read_text(GATHER.format(last=groups - 1), "<bench>").functions[0]
    start = time.perf_counter()
    diags = check_function(fn)
    took = time.perf_counter() - start
    assert not diags, diags[:1]
    return took


def classify_cores(cores: int) -> float:
    """{mb: cores} -> {mb: cores/4, out: 4}: an all-to-all over every core."""
    data = {"cores": cores,
            "source": {str(k): {"mb": k} for k in range(cores)},
            "destination": {str(k): {"mb": k // 4, "out": k % 4} for k in range(cores)}}
    start = time.perf_counter()
    tables = parse_tables(data, "<bench>")
    cls = classify_tables(tables)
    ok = not realize(tables, cls).diagnostics and all(reproduces(tables, cls).values())
    took = time.perf_counter() - start
    assert cls.verdict == "op" and ok
    return took


def main() -> None:
    for groups in (4096, 16384):
        print(f"verify gather groups={groups}: {verify_groups(groups):.3f} s (target < 1 s at 16384)")
    for cores in (2048, 8192):
        print(f"classify+realize+reproduce cores={cores}: {classify_cores(cores):.3f} s "
              "(target < 1 s at 8192)")


if __name__ == "__main__":
    main()
