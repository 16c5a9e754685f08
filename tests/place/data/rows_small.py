"""A logical RMSNorm over 8 rows for the place tests, written op by op."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = 8
HIDDEN = 256


@module(entry="rms", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallRms:
    @func
    def rms(x: Tensor[(ROWS, HIDDEN), "bf16"], w: ConstTensor[(HIDDEN,), "bf16"]) -> Tensor[(ROWS, HIDDEN), "bf16"]:
        x32 = tf.cast(x, "f32")
        ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * (1.0 / HIDDEN)
        return tf.cast(x32 * tf.rsqrt(ms + 1e-5), "bf16") * w

    @func
    def cross_rows(x: Tensor[(ROWS, HIDDEN), "f32"]) -> Tensor[(1, HIDDEN), "f32"]:
        return tf.reduce(x, (0,), True, ReduceKind.SUM)
