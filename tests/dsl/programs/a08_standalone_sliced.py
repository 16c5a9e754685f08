"""A standalone `@func(target=..., topologies=...)` kernel (a one-function Module)
that routes rows to the first half of a module-level 8-CTA mesh (`with GRID[:4]`),
places them with a module-level `ShardLayout` object, and records `where(...)`
constraints (mesh object, storage, layout with a value-state binding). Fully static.
"""
from __future__ import annotations

from tilefoundry import func
from tilefoundry.dsl import *
from tilefoundry.ir.types.shard import Layout, ShardLayout
from tilefoundry.target import CudaTarget

ROWS, COLS = 16, 256
CTAS = 8
LEVELS = (Topology("cta", CTAS),)
GRID = Mesh(LEVELS, Layout((CTAS,), (1,)), ("u",))
HALF = GRID[:4]
PLACED = ShardLayout(Layout((4, ROWS // 4, COLS), (0, COLS, 1)), (Split(0),), HALF)


@func(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
def route_rows(x: Tensor[(ROWS, COLS), "bf16"], scale: ConstTensor[(COLS,), "bf16"]) -> Tensor[(ROWS, COLS), "bf16"]:
    with GRID[:4] as routed:
        rows = ROWS
        placed: where(mesh=HALF, storage="smem") = tf.reshard(x, layout=PLACED, storage="smem")
        scale_s = tf.reshard(scale, (COLS,), "smem")
        scaled: where(layout=((rows, COLS), {cta @ B()})) = placed * scale_s
        squared = tf.square(tf.cast(scaled, "f32"))
        total = tf.reduce(squared, (-1,), True, "sum")
        return tf.cast(scaled * tf.cast(tf.rsqrt(total * (1.0 / COLS) + 1e-6), "bf16"), "bf16")
