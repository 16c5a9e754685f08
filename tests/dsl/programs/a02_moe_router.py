"""MoE router without `from __future__ import annotations`: softmax + topk, a tuple
return unpacked by the caller, index_select of routed tokens into a sibling expert,
index_add back into a `tf.zeros(Tensor[...])` accumulator, a weight column picked
by a subscript. Fully static.
"""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

T_ = 32
D = 128
E = 8
K = 2
F = 256

@module(entry="moe", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Moe:
    @func
    def router(x: Tensor[(T_, D), "bf16"], w_router: ConstTensor[(D, E), "bf16"]):
        logits = tf.cast(x @ w_router, "f32")
        probs = tf.softmax(logits, axis=-1)
        top_w, top_i = tf.topk(probs, k=K, axis=-1)
        norm = top_w / tf.reduce(top_w, (-1,), True, "sum")
        return norm, top_i

    @func
    def expert(x: Tensor[(T_, D), "bf16"], w1: ConstTensor[(D, F), "bf16"], w2: ConstTensor[(F, D), "bf16"]) -> Tensor[(T_, D), "bf16"]:
        return tf.relu(x @ w1) @ w2

    @func
    def moe(x: Tensor[(T_, D), "bf16"], w_router: ConstTensor[(D, E), "bf16"],
            w1: ConstTensor[(D, F), "bf16"], w2: ConstTensor[(F, D), "bf16"],
            tok: Tensor[(T_,), "i64"]) -> Tensor[(T_, D), "bf16"]:
        weights, idx = router(x, w_router)
        acc = tf.zeros(Tensor[(T_, D), "f32"])
        flat = tf.reshape(idx, (T_ * K,))
        picked = tf.index_select(x, tok, dim=0)
        y = expert(picked, w1, w2)
        acc = tf.index_add(acc, tok, tf.cast(y, "f32"), dim=0)
        w0 = weights[:, 0:1]
        return tf.cast(acc * tf.cast(w0, "f32"), "bf16")
