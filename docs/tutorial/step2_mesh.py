"""Step 2: the same scale placed on a mesh of 8 CTAs. Each CTA loads a band of 32
rows into registers (`tf.reshard` to "rmem"), scales it, and stores it back."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = 256
COLS = 128
CTAS = 8


@module(
    entry="scale",
    target=CudaTarget("nvidia.h200_sxm"),
    topologies=(Topology("cta", CTAS),),
)
class ScaleOnMesh:
    @func
    def scale(x: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("row",)) as grid:
            band = tf.reshard(x, (ROWS @ grid.row, COLS), "rmem")
            y = band * 2.0
            return tf.reshard(y, (ROWS @ grid.row, COLS), "gmem")
