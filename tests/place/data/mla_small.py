"""A logical MLA decode attention (DeepSeek-V3's absorbed form) at small shapes,
for the place tests: the query's low-rank projection and its RMSNorm before the
query up-projections (so the scores are one GEMV deeper than the caches' new
rows, as in DeepSeek-V3), the latent and RoPE-key projections, the kv latent's
RMSNorm, RoPE, both cache writes, the absorbed query (the no-RoPE query through
w_uk), the scores as a latent-cache product plus a RoPE-key product, scaled,
masked past the position and softmaxed, the weighted sum over the latent cache,
then w_uv per head and the output projection: three results, no placement."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 64
HEADS = 8
RANK = 32
Q_RANK = 32
NOPE = 16
ROPE = 16
V_DIM = 16
CTX = 1024
MAX_POS = 2048
EPS = 1e-6
SCALE = (NOPE + ROPE) ** -0.5
MASKED = -2.0e30


@module(entry="mla", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallMla:
    @func
    def mla(
        h: Tensor[(1, D), "bf16"],
        w_dq: ConstTensor[(D, Q_RANK), "bf16"],
        q_norm: ConstTensor[(Q_RANK,), "bf16"],
        w_q_nope: ConstTensor[(Q_RANK, HEADS * NOPE), "bf16"],
        w_q_rope: ConstTensor[(Q_RANK, HEADS * ROPE), "bf16"],
        w_dkv: ConstTensor[(D, RANK), "bf16"],
        kv_norm: ConstTensor[(RANK,), "bf16"],
        w_kr: ConstTensor[(D, ROPE), "bf16"],
        w_uk: ConstTensor[(HEADS, NOPE, RANK), "bf16"],
        w_uv: ConstTensor[(HEADS, RANK, V_DIM), "bf16"],
        w_o: ConstTensor[(HEADS * V_DIM, D), "bf16"],
        cos_t: Tensor[(MAX_POS, ROPE), "f32"],
        sin_t: Tensor[(MAX_POS, ROPE), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        ckv_cache: Tensor[(1, CTX, 1, RANK), "bf16"],
        kpe_cache: Tensor[(1, CTX, 1, ROPE), "bf16"],
    ):
        c_q = tf.rms_norm(h @ w_dq, q_norm, EPS)
        q_nope = tf.reshape(c_q @ w_q_nope, (HEADS, 1, NOPE))
        q_pe = tf.reshape(c_q @ w_q_rope, (1, 1, HEADS, ROPE))
        c_kv = tf.rms_norm(tf.reshape(h @ w_dkv, (1, 1, 1, RANK)), kv_norm, EPS)
        k_pe = tf.reshape(h @ w_kr, (1, 1, 1, ROPE))
        q_rot, k_rot = tf.rope(tf.cast(q_pe, "f32"), tf.cast(k_pe, "f32"), cos_t, sin_t, pos)
        ckv_all = tf.cache_update(ckv_cache, pos, n_new, c_kv)
        kpe_all = tf.cache_update(kpe_cache, pos, n_new, tf.cast(k_rot, "bf16"))
        q_lat = tf.cast(tf.matmul(q_nope, w_uk), "f32")
        latent = tf.cast(tf.reshape(ckv_all, (1, CTX, RANK)), "f32")
        k_rope = tf.cast(tf.reshape(kpe_all, (1, CTX, ROPE)), "f32")
        q_r = tf.transpose(tf.reshape(q_rot, (1, HEADS, ROPE)), (1, 0, 2))
        scores = tf.matmul(q_lat, tf.transpose(latent, (0, 2, 1))) + tf.matmul(q_r, tf.transpose(k_rope, (0, 2, 1)))
        # the valid length is pos + 1: rows past it are not (yet) this sequence's
        valid = tf.arange(Tensor[(CTX,), "i32"]) <= pos
        probs = tf.softmax(tf.where(valid, scores * SCALE, MASKED), -1)
        ctx_lat = tf.cast(tf.matmul(probs, latent), "bf16")
        heads = tf.matmul(ctx_lat, w_uv)
        merged = tf.reshape(tf.transpose(heads, (1, 0, 2)), (1, HEADS * V_DIM))
        return merged @ w_o, ckv_all, kpe_all
