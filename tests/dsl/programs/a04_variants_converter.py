"""Shape variants: a `pass` prototype over `seq` with a decode variant [1, 2) and a
prefill variant [2, 257) that upcasts, plus a converter `_` for the weight `w`.
Bound: --dim seq=1 (decode) and --dim seq=100 (prefill).
"""
from __future__ import annotations

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

SEQ = DimVar("seq", 1, 257)
D = 64


@module(entry="proj", target=CudaTarget("nvidia.h200_sxm"))
class Proj:
    @func
    def proj(x: Tensor[(SEQ, D), "bf16"], w: ConstTensor[(D, D), "bf16"]) -> Tensor[(SEQ, D), "bf16"]:
        pass

    @proj.specialize(DimVarRangePat("seq", 1, 2))
    def proj_decode(x: Tensor[(SEQ, D), "bf16"], w: ConstTensor[(D, D), "bf16"]) -> Tensor[(SEQ, D), "bf16"]:
        return x @ w

    @proj.specialize(DimVarRangePat("seq", 2, 257))
    def proj_prefill(x: Tensor[(SEQ, D), "bf16"], w: ConstTensor[(D, D), "bf16"]) -> Tensor[(SEQ, D), "bf16"]:
        return tf.cast(tf.cast(x, "f32") @ tf.cast(w, "f32"), "bf16")

    @proj.converter("w")
    def _(w_raw: Tensor[(D, D), "f32"]) -> Tensor[(D, D), "bf16"]:
        return tf.cast(tf.transpose(w_raw, (1, 0)), "bf16")
