"""Row softmax over very long rows, as QuACK's CuTe-DSL softmax builds it: a cluster of
CTAs per row (each CTA holds its share of the row on chip, so the row is read from HBM
once), the row max and the row sum each reduced within a CTA and then across the
cluster (through distributed shared memory: the cross-CTA reduce reads the other
CTAs' partial values), and the normalised row written once. f32 in and out. `rows` and
`share` (elements per CTA) are the DimVars a case binds.

The measured kernel at a 131072-element row ran a cluster of 4 CTAs that overwrite
their registers in place (x -> exp(x - max) -> /sum); the program's values are not
updated in place, so an elementwise result counts beside its input, and the row is
split over 8 CTAs to stay inside one CTA's shared memory and registers. The HBM bytes
(the row read once, written once) are the kernel's.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = DimVar("rows", 1, 65537)
SHARE = DimVar("share", 1, 1 << 20)
CLUSTER = 8
THREADS = 256  # the measured kernel's CTAs


@module(entry="softmax", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", ROWS * CLUSTER), Topology("thread", THREADS)))
class ClusterRowSoftmax:
    @func
    def softmax(x: Tensor[(ROWS, CLUSTER, SHARE), "f32"]) -> Tensor[(ROWS, CLUSTER, SHARE), "f32"]:
        with Mesh(("cta",), (ROWS, CLUSTER), ("r", "c")) as grid:
            x_s = tf.reshard(x, (ROWS @ grid.r, CLUSTER @ grid.c, SHARE), "smem")
            part_max = tf.reduce(x_s, (-1,), True, ReduceKind.MAX)
            row_max = tf.reduce(
                tf.reshard(part_max, (ROWS @ grid.r, CLUSTER, 1), "smem"), (-2,), True, ReduceKind.MAX)
            e = tf.exp(x_s - row_max)
            part_sum = tf.reduce(e, (-1,), True, ReduceKind.SUM)
            row_sum = tf.reduce(
                tf.reshard(part_sum, (ROWS @ grid.r, CLUSTER, 1), "smem"), (-2,), True, ReduceKind.SUM)
            return tf.reshard(e / row_sum, (ROWS @ grid.r, CLUSTER @ grid.c, SHARE), "gmem")
