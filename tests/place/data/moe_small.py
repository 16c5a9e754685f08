"""A MoE block at small shapes for the place tests (placer/sequence_experts.py):
a router (a GEMV, softmax, top-k, the top probabilities normalised), the routed
experts (each chosen expert's SwiGLU weights read with index_select and run as
one batched matmul, the outputs summed by the router's weights), the two
together, and a batched product by selected stacks that is no expert block (its
per-expert results are returned, never summed)."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 64
EXPERTS = 16
TOP_K = 2
FFN = 32


@module(entry="moe", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallMoe:
    @func
    def router(h: Tensor[(1, D), "bf16"], w_router: ConstTensor[(D, EXPERTS), "bf16"]):
        probs = tf.softmax(tf.cast(h @ w_router, "f32"), -1)
        top_p, top_ids = tf.topk(probs, TOP_K, -1, True, True)
        weights = top_p / tf.reduce(top_p, (-1,), True, ReduceKind.SUM)
        return weights, tf.reshape(top_ids, (TOP_K,))

    @func
    def routed_experts(
        h: Tensor[(1, D), "bf16"],
        weights: Tensor[(1, TOP_K), "f32"],
        ids: Tensor[(TOP_K,), "i64"],
        w_gate_e: ConstTensor[(EXPERTS, D, FFN), "bf16"],
        w_up_e: ConstTensor[(EXPERTS, D, FFN), "bf16"],
        w_down_e: ConstTensor[(EXPERTS, FFN, D), "bf16"],
    ) -> Tensor[(1, D), "bf16"]:
        gate = tf.index_select(w_gate_e, ids, 0)
        up = tf.index_select(w_up_e, ids, 0)
        down = tf.index_select(w_down_e, ids, 0)
        x = tf.reshape(h, (1, 1, D))
        act = tf.silu(tf.matmul(x, gate)) * tf.matmul(x, up)
        y = tf.cast(tf.matmul(act, down), "f32")
        mixed = y * tf.reshape(weights, (TOP_K, 1, 1))
        return tf.cast(tf.reshape(tf.reduce(mixed, (0,), False, ReduceKind.SUM), (1, D)), "bf16")

    @func
    def moe(
        h: Tensor[(1, D), "bf16"],
        w_router: ConstTensor[(D, EXPERTS), "bf16"],
        w_gate_e: ConstTensor[(EXPERTS, D, FFN), "bf16"],
        w_up_e: ConstTensor[(EXPERTS, D, FFN), "bf16"],
        w_down_e: ConstTensor[(EXPERTS, FFN, D), "bf16"],
    ) -> Tensor[(1, D), "bf16"]:
        weights, ids = router(h, w_router)
        return routed_experts(h, weights, ids, w_gate_e, w_up_e, w_down_e)

    @func
    def per_expert(
        h: Tensor[(1, D), "bf16"],
        ids: Tensor[(TOP_K,), "i64"],
        w_gate_e: ConstTensor[(EXPERTS, D, FFN), "bf16"],
        w_down_e: ConstTensor[(EXPERTS, FFN, D), "bf16"],
    ) -> Tensor[(TOP_K, 1, D), "bf16"]:
        # each expert's output returned apart: no sum over the experts
        act = tf.silu(tf.matmul(tf.reshape(h, (1, 1, D)), tf.index_select(w_gate_e, ids, 0)))
        return tf.matmul(act, tf.index_select(w_down_e, ids, 0))
