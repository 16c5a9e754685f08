"""A logical GEMV for the place tests: one row times a weight, no placement."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="gemv", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallGemv:
    @func
    def gemv(h: Tensor[(1, 64), "bf16"], w: ConstTensor[(64, 16), "bf16"]) -> Tensor[(1, 16), "bf16"]:
        return h @ w
