"""Step 6, before: the scale of step 2 on a (1056, 128) f32 matrix, placed on 8 CTAs.
Each CTA gets 1/132 of the H200's HBM bandwidth, so 8 CTAs reach 8/132 of it."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = 1056
COLS = 128
CTAS = 8


@module(
    entry="scale",
    target=CudaTarget("nvidia.h200_sxm"),
    topologies=(Topology("cta", CTAS),),
)
class ScaleOnFewCtas:
    @func
    def scale(x: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("row",)) as grid:
            band = tf.reshard(x, (ROWS @ grid.row, COLS), "rmem")
            y = band * 2.0
            return tf.reshard(y, (ROWS @ grid.row, COLS), "gmem")
