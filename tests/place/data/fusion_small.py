"""Kernels at small shapes for the place tests of glue fused into a GEMV's
epilogue (placer/sequence_ops.py): a shared expert (a SwiGLU whose output is
scaled by a one-column sigmoid gate of the input row) and a GEMV whose output is
normalised over its columns (a glue that cannot keep the GEMV's column split), and
a residual of an earlier kernel's value added to a GEMV's output."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 128
FFN = 256


@module(entry="shared_expert", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallFusion:
    @func
    def shared_expert(
        h: Tensor[(1, D), "bf16"],
        w_gate: ConstTensor[(D, FFN), "bf16"],
        w_up: ConstTensor[(D, FFN), "bf16"],
        w_down: ConstTensor[(FFN, D), "bf16"],
        w_shared_gate: ConstTensor[(D, 1), "bf16"],
    ) -> Tensor[(1, D), "bf16"]:
        y = (tf.silu(h @ w_gate) * (h @ w_up)) @ w_down
        return y * tf.sigmoid(h @ w_shared_gate)

    @func
    def normed(h: Tensor[(1, D), "bf16"], w: ConstTensor[(D, FFN), "bf16"]) -> Tensor[(1, FFN), "f32"]:
        y = tf.cast(h @ w, "f32")
        return y / tf.reduce(y * y, (-1,), True, ReduceKind.SUM)

    @func
    def residual(h: Tensor[(1, D), "bf16"], w1: ConstTensor[(D, D), "bf16"],
                 w2: ConstTensor[(D, D), "bf16"]) -> Tensor[(1, D), "bf16"]:
        t = tf.silu(h @ w1)
        return t @ w2 + t
