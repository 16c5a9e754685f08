"""Built-in example: RMS normalisation of 16 rows x 1024 on an H200, one row
block per CTA (4 CTAs) and 128 threads per CTA splitting the hidden axis.

Run it with `tilefoundry analyze --example` (typed program) or add family flags.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = 16
HIDDEN = 1024
BLOCKS = 4
THREADS = 128
EPS = 1e-6


@module(
    entry="rms_norm_rows",
    target=CudaTarget("nvidia.h200_sxm"),
    topologies=(Topology("cta", BLOCKS), Topology("thread", THREADS)),
)
class RmsNormTiles:
    @func
    def rms_norm_rows(
        x: Tensor[(ROWS, HIDDEN), "bf16"],
        weight: ConstTensor[(1, HIDDEN), "bf16"],
    ) -> Tensor[(ROWS, HIDDEN), "bf16"]:
        with Mesh(("cta", "thread"), (BLOCKS, THREADS), ("blk", "t")) as m:
            xs = tf.cast(tf.reshard(x, (ROWS @ m.blk, HIDDEN @ m.t), "rmem"), "f32")
            ws = tf.cast(tf.reshard(weight, (1, HIDDEN @ m.t), "rmem"), "f32")
            mean_sq = tf.reduce(xs * xs, (-1,), True, ReduceKind.MEAN)
            normed = xs * tf.rsqrt(mean_sq + EPS) * ws
            y = tf.cast(normed, "bf16")
            return tf.reshard(y, (ROWS @ m.blk, HIDDEN @ m.t), "gmem")
