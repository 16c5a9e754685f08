"""A logical GEMV for the place tests: one row times a weight, no placement."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="gemv", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallGemv:
    @func
    def gemv(h: Tensor[(1, 256), "bf16"], w: ConstTensor[(256, 128), "bf16"]) -> Tensor[(1, 128), "bf16"]:
        return h @ w
