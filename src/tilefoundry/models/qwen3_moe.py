"""Qwen3-MoE-style decode layer (Qwen3-30B-A3B shapes, one token, batch 1): RMSNorm,
GQA attention with per-head q/k RMSNorm and RoPE over a KV cache of DimVar length
`ctx_len`; a sparse MoE block whose router takes softmax + top-k (normalised) over
EXPERTS experts, gathers the selected experts' SwiGLU weights with `index_select`
and runs them as one batched matmul, plus a sigmoid-gated shared expert
(Qwen2-MoE style). Bind: --dim ctx_len=4096.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

# config (Qwen/Qwen3-30B-A3B, plus a Qwen2-MoE-style shared expert)
VOCAB = 151936
D_MODEL = 2048
N_Q = 32
N_KV = 4
HEAD_DIM = 128
GROUP = N_Q // N_KV
EXPERTS = 128
TOP_K = 8
EXPERT_FFN = 768
SHARED_FFN = 2048
LAYERS = 2
EPS = 1e-6
MAX_POS = 40960
SCALE = 1.0 / HEAD_DIM ** 0.5
INV_D = 1.0 / D_MODEL
CTX_LEN = DimVar("ctx_len", 1, MAX_POS + 1)
CTAS = 8
LEVELS = (Topology("cta", CTAS),)


@module(entry="decoder_layer", topologies=LEVELS)
class Qwen3MoeLayer:
    @func
    def rms(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            x32 = tf.cast(x, "f32")
            ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
            return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * w

    @func
    def attention(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_q: ConstTensor[(D_MODEL, N_Q * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_o: ConstTensor[(N_Q * HEAD_DIM, D_MODEL), "bf16"],
        q_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        k_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
    ):
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            q = tf.rms_norm(tf.reshape(h @ w_q, (1, 1, N_Q, HEAD_DIM)), q_norm, EPS)
            k = tf.rms_norm(tf.reshape(h @ w_k, (1, 1, N_KV, HEAD_DIM)), k_norm, EPS)
            v = tf.reshape(h @ w_v, (1, 1, N_KV, HEAD_DIM))
            q_rot, k_rot = tf.rope(tf.cast(q, "f32"), tf.cast(k, "f32"), cos_t, sin_t, pos)
            k_all = tf.cache_update(k_cache, pos, n_new, tf.cast(k_rot, "bf16"))
            v_all = tf.cache_update(v_cache, pos, n_new, v)
            q_g = tf.reshape(q_rot, (1, N_KV, GROUP, HEAD_DIM))
            k_t = tf.transpose(tf.cast(k_all, "f32"), (0, 2, 3, 1))
            v_t = tf.transpose(tf.cast(v_all, "f32"), (0, 2, 1, 3))
            probs = tf.softmax(tf.matmul(q_g, k_t) * SCALE, -1)
            ctx = tf.matmul(probs, v_t)
            merged = tf.cast(tf.reshape(ctx, (1, N_Q * HEAD_DIM)), "bf16")
            return merged @ w_o, k_all, v_all

    @func
    def router(h: Tensor[(1, D_MODEL), "bf16"], w_router: ConstTensor[(D_MODEL, EXPERTS), "bf16"]):
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            probs = tf.softmax(tf.cast(h @ w_router, "f32"), -1)
            top_p, top_ids = tf.topk(probs, TOP_K, -1, True, True)
            weights = top_p / tf.reduce(top_p, (-1,), True, ReduceKind.SUM)
            return weights, tf.reshape(top_ids, (TOP_K,))

    @func
    def routed_experts(
        h: Tensor[(1, D_MODEL), "bf16"],
        weights: Tensor[(1, TOP_K), "f32"],
        ids: Tensor[(TOP_K,), "i64"],
        w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), "bf16"],
        w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), "bf16"],
        w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            gate = tf.index_select(w_gate_e, ids, 0)
            up = tf.index_select(w_up_e, ids, 0)
            down = tf.index_select(w_down_e, ids, 0)
            x = tf.reshape(h, (1, 1, D_MODEL))
            act = tf.silu(tf.matmul(x, gate)) * tf.matmul(x, up)
            y = tf.cast(tf.matmul(act, down), "f32")
            mixed = y * tf.reshape(weights, (TOP_K, 1, 1))
            return tf.cast(tf.reshape(tf.reduce(mixed, (0,), False, ReduceKind.SUM), (1, D_MODEL)), "bf16")

    @func
    def shared_expert(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), "bf16"],
        w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), "bf16"],
        w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), "bf16"],
        w_shared_gate: ConstTensor[(D_MODEL, 1), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            y = (tf.silu(h @ w_gate_s) * (h @ w_up_s)) @ w_down_s
            return y * tf.sigmoid(h @ w_shared_gate)

    @func
    def moe(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_router: ConstTensor[(D_MODEL, EXPERTS), "bf16"],
        w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), "bf16"],
        w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), "bf16"],
        w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), "bf16"],
        w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), "bf16"],
        w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), "bf16"],
        w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), "bf16"],
        w_shared_gate: ConstTensor[(D_MODEL, 1), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        weights, ids = router(h, w_router)
        routed = routed_experts(h, weights, ids, w_gate_e, w_up_e, w_down_e)
        shared = shared_expert(h, w_gate_s, w_up_s, w_down_s, w_shared_gate)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return routed + shared

    @func
    def decoder_layer(
        x: Tensor[(1, D_MODEL), "bf16"],
        attn_norm: ConstTensor[(D_MODEL,), "bf16"],
        mlp_norm: ConstTensor[(D_MODEL,), "bf16"],
        w_q: ConstTensor[(D_MODEL, N_Q * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(D_MODEL, N_KV * HEAD_DIM), "bf16"],
        w_o: ConstTensor[(N_Q * HEAD_DIM, D_MODEL), "bf16"],
        q_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        k_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        w_router: ConstTensor[(D_MODEL, EXPERTS), "bf16"],
        w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), "bf16"],
        w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), "bf16"],
        w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), "bf16"],
        w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), "bf16"],
        w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), "bf16"],
        w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), "bf16"],
        w_shared_gate: ConstTensor[(D_MODEL, 1), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_KV, HEAD_DIM), "bf16"],
    ):
        attn, k_all, v_all = attention(rms(x, attn_norm), w_q, w_k, w_v, w_o, q_norm, k_norm,
                                       cos_t, sin_t, pos, n_new, k_cache, v_cache)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            h = x + attn
        ffn = moe(rms(h, mlp_norm), w_router, w_gate_e, w_up_e, w_down_e,
                  w_gate_s, w_up_s, w_down_s, w_shared_gate)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return h + ffn, k_all, v_all


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Qwen3Moe:
    layers = tuple(Qwen3MoeLayer.renamed(f"layer{i}") for i in range(LAYERS))

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
