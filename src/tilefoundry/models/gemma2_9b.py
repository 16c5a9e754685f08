"""Gemma-2-style decode layers (gemma-2-9b shapes, one token, batch 1). Layers
alternate: even layers use sliding-window attention over a ring-buffer KV cache of
WINDOW slots, odd layers global attention over a KV cache of DimVar length
`ctx_len`; both soft-cap the attention logits (`tanh(s / 50) * 50`) and use
query_pre_attn_scalar scaling. Each layer has four RMSNorms (pre/post attention,
pre/post feed-forward; stored weights are `1 + w`, see the converter), a GeGLU MLP
(tanh GELU). The root's `lm_head` soft-caps the final logits at 30 and `embed`
scales by sqrt(d_model). Both layer kinds are built by one factory.
Bind: --dim ctx_len=4096 (the odd layers and their kernels).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

# config (google/gemma-2-9b)
VOCAB = 256000
D_MODEL = 3584
N_Q = 16
N_KV = 8
HEAD_DIM = 256
GROUP = N_Q // N_KV
FFN = 14336
LAYERS = 2
EPS = 1e-6
WINDOW = 4096
MAX_POS = 8192
ATTN_CAP = 50.0
FINAL_CAP = 30.0
QUERY_PRE_ATTN_SCALAR = 256
SCALE = 1.0 / QUERY_PRE_ATTN_SCALAR ** 0.5
EMBED_SCALE = D_MODEL ** 0.5
CTX_LEN = DimVar("ctx_len", 1, MAX_POS + 1)
CTAS = 8
LEVELS = (Topology("cta", CTAS),)


def gemma_layer(kv_len):
    """One Gemma-2 layer Module whose KV cache holds `kv_len` positions."""

    @module(entry="decoder_layer", topologies=LEVELS)
    class Gemma2Layer:
        @func
        def norm(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(1, D_MODEL), "bf16"]:
            with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                return tf.rms_norm(x, w, EPS)

        @norm.converter("w")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @func
        def attention(
            h: Tensor[(1, D_MODEL), "bf16"],
            w_q: ConstTensor[(D_MODEL, N_Q * HEAD_DIM), "bf16"],
            w_k: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
            w_v: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
            w_o: ConstTensor[(N_Q * HEAD_DIM, D_MODEL), "bf16"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            slot: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
            v_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
        ):
            with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                q = tf.reshape(h @ w_q, (1, 1, N_Q, HEAD_DIM))
                k = tf.reshape(h @ w_k, (1, 1, N_KV, HEAD_DIM))
                v = tf.reshape(h @ w_v, (1, 1, N_KV, HEAD_DIM))
                q_rot, k_rot = tf.rope(tf.cast(q, "f32"), tf.cast(k, "f32"), cos_t, sin_t, pos)
                k_all = tf.cache_update(k_cache, slot, n_new, tf.cast(k_rot, "bf16"))
                v_all = tf.cache_update(v_cache, slot, n_new, v)
                q_g = tf.reshape(q_rot, (1, N_KV, GROUP, HEAD_DIM))
                k_t = tf.transpose(tf.cast(k_all, "f32"), (0, 2, 3, 1))
                v_t = tf.transpose(tf.cast(v_all, "f32"), (0, 2, 1, 3))
                logits = tf.matmul(q_g, k_t) * SCALE
                capped = tf.tanh(logits * (1.0 / ATTN_CAP)) * ATTN_CAP
                ctx = tf.matmul(tf.softmax(capped, -1), v_t)
                merged = tf.cast(tf.reshape(ctx, (1, N_Q * HEAD_DIM)), "bf16")
                return merged @ w_o, k_all, v_all

        @func
        def mlp(
            h: Tensor[(1, D_MODEL), "bf16"],
            w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
            w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
            w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
        ) -> Tensor[(1, D_MODEL), "bf16"]:
            with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                return (tf.gelu(h @ w_gate, "tanh") * (h @ w_up)) @ w_down

        @func
        def decoder_layer(
            x: Tensor[(1, D_MODEL), "bf16"],
            pre_attn_norm: ConstTensor[(D_MODEL,), "f32"],
            post_attn_norm: ConstTensor[(D_MODEL,), "f32"],
            pre_ffw_norm: ConstTensor[(D_MODEL,), "f32"],
            post_ffw_norm: ConstTensor[(D_MODEL,), "f32"],
            w_q: ConstTensor[(D_MODEL, N_Q * HEAD_DIM), "bf16"],
            w_k: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
            w_v: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
            w_o: ConstTensor[(N_Q * HEAD_DIM, D_MODEL), "bf16"],
            w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
            w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
            w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            slot: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
            v_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
        ):
            attn, k_all, v_all = attention(norm(x, pre_attn_norm), w_q, w_k, w_v, w_o, cos_t, sin_t,
                                           pos, slot, n_new, k_cache, v_cache)
            attn_out = norm(attn, post_attn_norm)
            with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                h = x + attn_out
            ffw = norm(mlp(norm(h, pre_ffw_norm), w_gate, w_up, w_down), post_ffw_norm)
            with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                return h + ffw, k_all, v_all

    return Gemma2Layer


SlidingLayer = gemma_layer(WINDOW)
GlobalLayer = gemma_layer(CTX_LEN)


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Gemma2_9B:
    layers = tuple((SlidingLayer if i % 2 == 0 else GlobalLayer).renamed(f"layer{i}") for i in range(LAYERS))

    @func
    def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return tf.index_select(table, token, 0) * EMBED_SCALE

    @func
    def lm_head(
        h: Tensor[(1, D_MODEL), "bf16"],
        final_norm: ConstTensor[(D_MODEL,), "f32"],
        w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
    ) -> Tensor[(1, VOCAB), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            logits = tf.cast(tf.rms_norm(h, final_norm, EPS) @ w_vocab, "f32")
            return tf.tanh(logits * (1.0 / FINAL_CAP)) * FINAL_CAP

    @lm_head.converter("final_norm")
    def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
        return w_raw + 1.0
