"""DeepSeek-V3-style decode layer with Multi-head Latent Attention (one token, batch
1): the query goes through a low-rank compression (`w_dq`, RMSNorm, `w_uq_*`), the
key/value through a shared latent `c_kv` of rank KV_RANK (RMSNorm) plus a decoupled
RoPE key `k_pe` shared by all heads. Decode runs in the weight-absorbed form: the
cache holds only the latent and the RoPE key (DimVar length `ctx_len`), `w_uk` is
folded into the query and `w_uv` applied after the attention. A dense SwiGLU MLP
follows (V3's first dense layers). Bind: --dim ctx_len=4096.
"""

import math

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

# config (deepseek-ai/DeepSeek-V3)
VOCAB = 129280
D_MODEL = 7168
N_HEADS = 128
Q_RANK = 1536
KV_RANK = 512
NOPE_DIM = 128
ROPE_DIM = 64
V_DIM = 128
FFN = 18432
LAYERS = 2
EPS = 1e-6
MAX_POS = 16384
# softmax scale with the YaRN attention factor of V3's rope_scaling (yarn, factor 40,
# mscale_all_dim 1): mscale = 0.1·ln(40) + 1, applied squared (HF DeepseekV3Attention)
YARN_MSCALE = 0.1 * math.log(40.0) + 1.0
SCALE = YARN_MSCALE ** 2 / (NOPE_DIM + ROPE_DIM) ** 0.5
INV_D = 1.0 / D_MODEL
CTX_LEN = DimVar("ctx_len", 1, MAX_POS + 1)
CTAS = 8
LEVELS = (Topology("cta", CTAS),)


@module(entry="decoder_layer", topologies=LEVELS)
class MlaLayer:
    @func
    def rms(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            x32 = tf.cast(x, "f32")
            ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
            return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * w

    @func
    def q_proj(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_dq: ConstTensor[(D_MODEL, Q_RANK), "bf16"],
        q_a_norm: ConstTensor[(Q_RANK,), "bf16"],
        w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), "bf16"],
        w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), "bf16"],
    ):
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            c_q = tf.rms_norm(h @ w_dq, q_a_norm, EPS)
            q_nope = tf.reshape(c_q @ w_uq_nope, (N_HEADS, 1, NOPE_DIM))
            q_pe = tf.reshape(c_q @ w_uq_rope, (1, 1, N_HEADS, ROPE_DIM))
            return q_nope, q_pe

    @func
    def mla_attention(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_dq: ConstTensor[(D_MODEL, Q_RANK), "bf16"],
        q_a_norm: ConstTensor[(Q_RANK,), "bf16"],
        w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), "bf16"],
        w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), "bf16"],
        w_dkv: ConstTensor[(D_MODEL, KV_RANK), "bf16"],
        kv_a_norm: ConstTensor[(KV_RANK,), "bf16"],
        w_kr: ConstTensor[(D_MODEL, ROPE_DIM), "bf16"],
        w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), "bf16"],
        w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), "bf16"],
        w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        ckv_cache: Tensor[(1, CTX_LEN, 1, KV_RANK), "bf16"],
        kpe_cache: Tensor[(1, CTX_LEN, 1, ROPE_DIM), "bf16"],
    ):
        q_nope, q_pe = q_proj(h, w_dq, q_a_norm, w_uq_nope, w_uq_rope)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            c_kv = tf.rms_norm(tf.reshape(h @ w_dkv, (1, 1, 1, KV_RANK)), kv_a_norm, EPS)
            k_pe = tf.reshape(h @ w_kr, (1, 1, 1, ROPE_DIM))
            q_rot, k_rot = tf.rope(tf.cast(q_pe, "f32"), tf.cast(k_pe, "f32"), cos_t, sin_t, pos)
            ckv_all = tf.cache_update(ckv_cache, pos, n_new, c_kv)
            kpe_all = tf.cache_update(kpe_cache, pos, n_new, tf.cast(k_rot, "bf16"))
            q_lat = tf.cast(tf.matmul(q_nope, w_uk), "f32")
            latent = tf.cast(tf.reshape(ckv_all, (1, CTX_LEN, KV_RANK)), "f32")
            k_rope = tf.cast(tf.reshape(kpe_all, (1, CTX_LEN, ROPE_DIM)), "f32")
            q_r = tf.transpose(tf.reshape(q_rot, (1, N_HEADS, ROPE_DIM)), (1, 0, 2))
            scores = tf.matmul(q_lat, tf.transpose(latent, (0, 2, 1))) + tf.matmul(q_r, tf.transpose(k_rope, (0, 2, 1)))
            probs = tf.softmax(scores * SCALE, -1)
            ctx_lat = tf.cast(tf.matmul(probs, latent), "bf16")
            heads = tf.matmul(ctx_lat, w_uv)
            merged = tf.reshape(tf.transpose(heads, (1, 0, 2)), (1, N_HEADS * V_DIM))
            return merged @ w_o, ckv_all, kpe_all

    @func
    def mlp(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return (tf.silu(h @ w_gate) * (h @ w_up)) @ w_down

    @func
    def decoder_layer(
        x: Tensor[(1, D_MODEL), "bf16"],
        attn_norm: ConstTensor[(D_MODEL,), "bf16"],
        mlp_norm: ConstTensor[(D_MODEL,), "bf16"],
        w_dq: ConstTensor[(D_MODEL, Q_RANK), "bf16"],
        q_a_norm: ConstTensor[(Q_RANK,), "bf16"],
        w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), "bf16"],
        w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), "bf16"],
        w_dkv: ConstTensor[(D_MODEL, KV_RANK), "bf16"],
        kv_a_norm: ConstTensor[(KV_RANK,), "bf16"],
        w_kr: ConstTensor[(D_MODEL, ROPE_DIM), "bf16"],
        w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), "bf16"],
        w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), "bf16"],
        w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), "bf16"],
        w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        ckv_cache: Tensor[(1, CTX_LEN, 1, KV_RANK), "bf16"],
        kpe_cache: Tensor[(1, CTX_LEN, 1, ROPE_DIM), "bf16"],
    ):
        attn, ckv_all, kpe_all = mla_attention(
            rms(x, attn_norm), w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv, kv_a_norm, w_kr,
            w_uk, w_uv, w_o, cos_t, sin_t, pos, n_new, ckv_cache, kpe_cache)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            h = x + attn
        out = mlp(rms(h, mlp_norm), w_gate, w_up, w_down)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return h + out, ckv_all, kpe_all


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class DeepSeekV3:
    layers = tuple(MlaLayer.renamed(f"layer{i}") for i in range(LAYERS))

    @func
    def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return tf.index_select(table, token, 0)

    @func
    def lm_head(
        h: Tensor[(1, D_MODEL), "bf16"],
        final_norm: ConstTensor[(D_MODEL,), "bf16"],
        w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
    ) -> Tensor[(1, VOCAB), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return tf.cast(tf.rms_norm(h, final_norm, EPS) @ w_vocab, "f32")
