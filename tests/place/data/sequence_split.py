"""A logical kernel whose GEMVs want different CTA counts, for the place tests:
a wide projection (8192 output columns of a 2048-wide row: 32 MB of weights,
which want more CTAs than the narrow one's 128) and, read from its first 1024 columns,
a "narrow" one whose 10,576 output columns (16 x 661, as Mamba-2's input
projection) split over at most 16 CTAs within four waves; both results returned
(a tuple: a sequence, not a chain). Every piece of one CTA count would hold the
wide GEMV to 16 CTAs; split-K lets the narrow one fill the units (its 21 MB of
weights repay the grid barrier its splits' sum waits)."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 2048
WIDE = 8192
NARROW = 16 * 661
GATE = 1024


@module(entry="project", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SplitLayer:
    @func
    def project(h: Tensor[(1, D), "bf16"], w_wide: ConstTensor[(D, WIDE), "bf16"],
                w_narrow: ConstTensor[(GATE, NARROW), "bf16"]):
        wide = h @ w_wide
        return wide, tf.silu(wide[:, 0:GATE]) @ w_narrow
