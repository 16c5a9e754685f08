"""Logical kernels that are no single narrow kind, for the place tests: a layer's
attention at small shapes (q/k/v projections, RoPE, KV-cache writes, attention
masked past the position, the output projection: three results), the
projections with RoPE alone (a tuple result), and a cache write alone."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 64
N_Q = 4
N_KV = 2
HEAD_DIM = 16
GROUP = N_Q // N_KV
CTX = 32
MAX_POS = 64
SCALE = 0.25
MASKED = -2.0e30
CACHE_ROWS = 2048
CACHE_HEADS = 8
CACHE_DIM = 32


@module(entry="attention", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallLayer:
    @func
    def qkv_rope(h: Tensor[(1, D), "bf16"], w_q: ConstTensor[(D, N_Q * HEAD_DIM), "bf16"],
                 w_k: ConstTensor[(D, N_KV * HEAD_DIM), "bf16"], cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
                 sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"], pos: Tensor[(1,), "i32"]):
        q = tf.reshape(h @ w_q, (1, 1, N_Q, HEAD_DIM))
        k = tf.reshape(h @ w_k, (1, 1, N_KV, HEAD_DIM))
        q_rot, k_rot = tf.rope(tf.cast(q, "f32"), tf.cast(k, "f32"), cos_t, sin_t, pos)
        return q_rot, tf.cast(k_rot, "bf16")

    @func
    def cache_write(cache: Tensor[(1, CACHE_ROWS, CACHE_HEADS, CACHE_DIM), "bf16"], pos: Tensor[(1,), "i32"],
                    n_new: Tensor[(1,), "i32"], new: Tensor[(1, 1, CACHE_HEADS, CACHE_DIM), "bf16"]):
        # as the zoo writes a logical kernel: every CTA does the whole write
        with Mesh(("cta",), (132,), ("all",)) as _all:
            return tf.cache_update(cache, pos, n_new, new)

    @func
    def attention(
        h: Tensor[(1, D), "bf16"],
        w_q: ConstTensor[(D, N_Q * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(D, N_KV * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(D, N_KV * HEAD_DIM), "bf16"],
        w_o: ConstTensor[(N_Q * HEAD_DIM, D), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX, N_KV, HEAD_DIM), "bf16"],
    ):
        q_rot, k_new = qkv_rope(h, w_q, w_k, cos_t, sin_t, pos)
        v_new = tf.reshape(h @ w_v, (1, 1, N_KV, HEAD_DIM))
        k_all = tf.cache_update(k_cache, pos, n_new, k_new)
        v_all = tf.cache_update(v_cache, pos, n_new, v_new)
        q_g = tf.reshape(q_rot, (1, N_KV, GROUP, HEAD_DIM))
        k_t = tf.transpose(tf.cast(k_all, "f32"), (0, 2, 3, 1))
        v_t = tf.transpose(tf.cast(v_all, "f32"), (0, 2, 1, 3))
        # rows past the valid length (pos + 1) are not this sequence's yet
        valid = tf.arange(Tensor[(CTX,), "i32"]) <= pos
        probs = tf.softmax(tf.where(valid, tf.matmul(q_g, k_t) * SCALE, MASKED), -1)
        merged = tf.cast(tf.reshape(tf.matmul(probs, v_t), (1, N_Q * HEAD_DIM)), "bf16")
        return merged @ w_o, k_all, v_all


E = 4
T = 2
F = 64


@module(entry="experts", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallExperts:
    @func
    def experts(x: Tensor[(1, D), "bf16"], weights: Tensor[(1, T), "f32"], ids: Tensor[(T,), "i64"],
                w_gate_e: ConstTensor[(E, D, F), "bf16"], w_up_e: ConstTensor[(E, D, F), "bf16"],
                w_down_e: ConstTensor[(E, F, D), "bf16"]) -> Tensor[(1, D), "bf16"]:
        # a MoE block's routed experts and the residual add after them
        gate = tf.index_select(w_gate_e, ids, 0)
        up = tf.index_select(w_up_e, ids, 0)
        down = tf.index_select(w_down_e, ids, 0)
        h = tf.reshape(x, (1, 1, D))
        act = tf.silu(tf.matmul(h, gate)) * tf.matmul(h, up)
        y = tf.cast(tf.matmul(act, down), "f32") * tf.reshape(weights, (T, 1, 1))
        return x + tf.cast(tf.reshape(tf.reduce(y, (0,), False, ReduceKind.SUM), (1, D)), "bf16")


ROWS = DimVar("rows", 1, 65)


@module(entry="scaled", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallConverted:
    @func
    def scaled(x: Tensor[(ROWS, D), "f32"], w: ConstTensor[(D,), "f32"]) -> Tensor[(ROWS, D), "f32"]:
        return x * w

    # a checkpoint stores w - 1 (as Gemma-2's norms store their offsets)
    @scaled.converter("w")
    def _(w_raw: ConstTensor[(D,), "f32"]) -> Tensor[(D,), "f32"]:
        return w_raw + 1.0
