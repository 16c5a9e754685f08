"""Llama-3-8B-style decode step (one token, batch 1): RMSNorm, GQA attention with
RoPE over a KV cache of DimVar length `ctx_len` (the new key/value are written
with `cache_update` first), SwiGLU MLP. `attention` is the plain form (every
CTA holds the whole problem: no reshard); `attention_placed` places one KV head
per CTA and walks the cache with an online-softmax `tile` loop. The root holds
LAYERS renamed copies of the layer plus `embed` and `lm_head`.
Bind: --dim ctx_len=4096.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

# config (meta-llama/Meta-Llama-3-8B, plain Python)
VOCAB = 128256
D_MODEL = 4096
N_Q = 32
N_KV = 8
HEAD_DIM = 128
GROUP = N_Q // N_KV
FFN = 14336
LAYERS = 2
EPS = 1e-5
MAX_POS = 8192
BLOCK = 128
SCALE = 1.0 / HEAD_DIM ** 0.5
NEG_BIG = -1.0e30
INV_D = 1.0 / D_MODEL
CTX_LEN = DimVar("ctx_len", BLOCK, MAX_POS + 1)
LEVELS = (Topology("cta", N_KV),)


@module(entry="decoder_layer", topologies=LEVELS)
class LlamaLayer:
    @func
    def rms(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            x32 = tf.cast(x, "f32")
            ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
            return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * w

    @func
    def qkv_rope(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_q: ConstTensor[(D_MODEL, N_Q * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
    ):
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            q = tf.reshape(h @ w_q, (1, 1, N_Q, HEAD_DIM))
            k = tf.reshape(h @ w_k, (1, 1, N_KV, HEAD_DIM))
            v = tf.reshape(h @ w_v, (1, 1, N_KV, HEAD_DIM))
            q_rot, k_rot = tf.rope(tf.cast(q, "f32"), tf.cast(k, "f32"), cos_t, sin_t, pos)
            return q_rot, tf.cast(k_rot, "bf16"), v

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
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
    ):
        q_rot, k_new, v_new = qkv_rope(h, w_q, w_k, w_v, cos_t, sin_t, pos)
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            k_all = tf.cache_update(k_cache, pos, n_new, k_new)
            v_all = tf.cache_update(v_cache, pos, n_new, v_new)
            q_g = tf.reshape(q_rot, (1, N_KV, GROUP, HEAD_DIM))
            k_t = tf.transpose(tf.cast(k_all, "f32"), (0, 2, 3, 1))
            v_t = tf.transpose(tf.cast(v_all, "f32"), (0, 2, 1, 3))
            scores = tf.matmul(q_g, k_t) * SCALE
            probs = tf.softmax(scores, -1)
            ctx = tf.matmul(probs, v_t)
            merged = tf.cast(tf.reshape(ctx, (1, N_Q * HEAD_DIM)), "bf16")
            return merged @ w_o, k_all, v_all

    @func
    def attention_placed(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_q: ConstTensor[(D_MODEL, N_Q * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_o: ConstTensor[(N_Q * HEAD_DIM, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
    ):
        q_rot, k_new, v_new = qkv_rope(h, w_q, w_k, w_v, cos_t, sin_t, pos)
        with Mesh(("cta",), (N_KV,), ("kvh",)) as heads:
            k_all = tf.cache_update(k_cache, pos, n_new, k_new)
            v_all = tf.cache_update(v_cache, pos, n_new, v_new)
            q_g = tf.reshape(q_rot, (1, N_KV, GROUP, HEAD_DIM))
            q_sm = tf.reshard(q_g, (1, N_KV @ heads.kvh, GROUP, HEAD_DIM), "smem")
            q_s = q_sm * SCALE
            run_max = tf.full_like(tf.reduce(q_s, (-1,), True, ReduceKind.MAX), NEG_BIG)
            run_sum = tf.full_like(run_max, 0.0)
            run_acc = tf.full_like(q_s, 0.0)
            for blk in tile(CTX_LEN, BLOCK):
                k_blk = tf.reshard(k_all[:, blk, :, :], (1, BLOCK, N_KV @ heads.kvh, HEAD_DIM), "smem")
                v_blk = tf.reshard(v_all[:, blk, :, :], (1, BLOCK, N_KV @ heads.kvh, HEAD_DIM), "smem")
                scores = tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 2, 3, 1)))
                new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                rescale = tf.exp(run_max - new_max)
                probs = tf.exp(scores - new_max)
                run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                run_acc = run_acc * rescale + tf.matmul(probs, tf.transpose(tf.cast(v_blk, "f32"), (0, 2, 1, 3)))
                run_max = new_max
            ctx = tf.reshard(run_acc / run_sum, (1, N_KV, GROUP, HEAD_DIM), "gmem")
            merged = tf.cast(tf.reshape(ctx, (1, N_Q * HEAD_DIM)), "bf16")
            return merged @ w_o, k_all, v_all

    @func
    def mlp(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            return (tf.silu(h @ w_gate) * (h @ w_up)) @ w_down

    @func
    def decoder_layer(
        x: Tensor[(1, D_MODEL), "bf16"],
        attn_norm: ConstTensor[(D_MODEL,), "bf16"],
        mlp_norm: ConstTensor[(D_MODEL,), "bf16"],
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
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
    ):
        attn, k_all, v_all = attention_placed(rms(x, attn_norm), w_q, w_k, w_v, w_o, cos_t, sin_t,
                                              pos, n_new, k_cache, v_cache)
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            h = x + attn
        out = mlp(rms(h, mlp_norm), w_gate, w_up, w_down)
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            return h + out, k_all, v_all


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Llama3_8B:
    layers = tuple(LlamaLayer.renamed(f"layer{i}") for i in range(LAYERS))

    @func
    def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            return tf.index_select(table, token, 0)

    @func
    def lm_head(
        h: Tensor[(1, D_MODEL), "bf16"],
        final_norm: ConstTensor[(D_MODEL,), "bf16"],
        w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
    ) -> Tensor[(1, VOCAB), "f32"]:
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            return tf.cast(tf.rms_norm(h, final_norm, EPS) @ w_vocab, "f32")
