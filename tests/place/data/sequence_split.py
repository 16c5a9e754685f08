"""A logical kernel whose GEMVs want different CTA counts, for the place tests:
a wide projection (1024 output columns) and, read from its first 64 columns, a
narrow one (16 output columns, K 64), both results returned (a tuple: a
sequence, not a chain). Every piece of one CTA count would hold the wide GEMV
to the 16 CTAs the narrow one's columns divide; split-K lets the narrow one
use a few more (K 64 in splits of 16 rows at least: 4 splits, 64 CTAs), and no more."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 512
WIDE = 1024
NARROW = 16
GATE = 64


@module(entry="project", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SplitLayer:
    @func
    def project(h: Tensor[(1, D), "bf16"], w_wide: ConstTensor[(D, WIDE), "bf16"],
                w_narrow: ConstTensor[(GATE, NARROW), "bf16"]):
        wide = h @ w_wide
        return wide, tf.silu(wide[:, 0:GATE]) @ w_narrow
