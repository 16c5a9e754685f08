"""Step 1: a first program. One @module holding one @func that scales a matrix."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="scale", target=CudaTarget("nvidia.h200_sxm"))
class Scale:
    @func
    def scale(x: Tensor[(256, 128), "f32"]) -> Tensor[(256, 128), "f32"]:
        y = x * 2.0
        return y
