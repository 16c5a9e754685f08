"""A logical SwiGLU MLP for the place tests: gate and up read one row (one
stage), down reads their product (a second stage), plus a norm-fed variant."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 32
F = 64


@module(entry="mlp", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallMlp:
    @func
    def mlp(h: Tensor[(1, D), "bf16"], w_gate: ConstTensor[(D, F), "bf16"], w_up: ConstTensor[(D, F), "bf16"],
            w_down: ConstTensor[(F, D), "bf16"]) -> Tensor[(1, D), "bf16"]:
        return (tf.silu(h @ w_gate) * (h @ w_up)) @ w_down

    @func
    def normed_proj(h: Tensor[(1, D), "bf16"], w_a: ConstTensor[(D, F), "bf16"], gain: ConstTensor[(F,), "bf16"],
                    w_b: ConstTensor[(F, D), "bf16"]) -> Tensor[(1, D), "bf16"]:
        return tf.rms_norm(h @ w_a, gain, 1e-6) @ w_b

    @func
    def two_stage_mix(h: Tensor[(1, D), "bf16"], w_a: ConstTensor[(D, D), "bf16"],
                      w_b: ConstTensor[(D, D), "bf16"]) -> Tensor[(1, D), "bf16"]:
        a = h @ w_a
        return (a @ w_b) * a

    @func
    def gated_by_norm(h: Tensor[(1, D), "bf16"], w_a: ConstTensor[(D, D), "bf16"],
                      gain: ConstTensor[(D,), "bf16"]) -> Tensor[(1, D), "bf16"]:
        return (h @ w_a) * tf.rms_norm(h, gain, 1e-6)
