"""The layers of DeepSeek-V3 (deepseek_v3_mla.py): MLA attention followed by a dense
SwiGLU MLP (the first DENSE_LAYERS layers) or the DeepSeekMoE block (every other
layer), each logical and placed.

They live here so the model file stays within the module line limit; they are
built from the model file's own constants (``layer_modules(globals())``), so a
reduced copy of the model file (``tilefoundry.models.reduced``) builds its layers
at its own sizes. The bodies read the constants as the factory's locals (authoring
§2.7: a factory's locals resolve a body's free names), so this module holds no
global of a constant's name. The activations' and weights' dtype is the model file's
DTYPE ("bf16"; "f32" in an f32 copy, ``reduced(..., dtype="f32")``).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.models.zoo_layers import published_root

__all__ = ["layer_modules"]

#: the model file's constants the layers read
_NAMES = ("DTYPE", "CTAS", "CTX_LEN", "DOWN_Q_TK", "DOWN_TK", "D_MODEL", "EPS", "EXPERTS", "EXPERT_FFN",
          "EXPERT_TK", "FFN", "GROUP_SIZE", "HALF", "HEAD_GROUPS", "INV_D", "KV_BLOCK",
          "KV_RANK", "LEVELS", "MASKED", "MAX_POS", "NEG_BIG", "NOPE_DIM", "N_GROUP", "N_HEADS",
          "O_TK", "PLACED_CTAS", "PLACED_CTX", "PLACED_LEVELS", "Q_RANK", "ROPE_CTAS",
          "ROPE_DIM", "ROUTED_SCALE", "SCALE", "SHARED_FFN", "SPLITS", "TOPK_GROUP", "TOP_K",
          "UK_TK", "UP_Q_TK", "UP_TK", "UV_TK", "V_DIM", "PLACED_VISITED")


def layer_modules(constants: dict):
    """(dense, MoE, placed dense, placed MoE) layer Modules at ``constants`` (the
    model file's globals)."""
    (DTYPE, CTAS, CTX_LEN, DOWN_Q_TK, DOWN_TK, D_MODEL, EPS, EXPERTS, EXPERT_FFN, EXPERT_TK, FFN,
     GROUP_SIZE, HALF, HEAD_GROUPS, INV_D, KV_BLOCK, KV_RANK, LEVELS, MASKED, MAX_POS, NEG_BIG,
     NOPE_DIM, N_GROUP, N_HEADS, O_TK, PLACED_CTAS, PLACED_CTX, PLACED_LEVELS, Q_RANK, ROPE_CTAS,
     ROPE_DIM, ROUTED_SCALE, SCALE, SHARED_FFN, SPLITS, TOPK_GROUP, TOP_K, UK_TK, UP_Q_TK, UP_TK,
     UV_TK, V_DIM, PLACED_VISITED) = (constants[name] for name in _NAMES)

    def _logical(routed):
        """The logical layer: MLA attention, then the dense SwiGLU MLP (`routed=False`: the
        first DENSE_LAYERS layers) or the MoE block (`routed=True`: the other layers)."""

        @module(entry="decoder_layer", topologies=LEVELS)
        class MlaLayer:
            @func
            def rms(x: Tensor[(1, D_MODEL), DTYPE], w: ConstTensor[(D_MODEL,), DTYPE]) -> Tensor[(1, D_MODEL), DTYPE]:
                with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                    x32 = tf.cast(x, "f32")
                    ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
                    return tf.cast(x32 * tf.rsqrt(ms + EPS), DTYPE) * w

            @func
            def q_proj(
                h: Tensor[(1, D_MODEL), DTYPE],
                w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                q_a_norm: ConstTensor[(Q_RANK,), DTYPE],
                w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE],
            ):
                with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                    c_q = tf.rms_norm(h @ w_dq, q_a_norm, EPS)
                    q_nope = tf.reshape(c_q @ w_uq_nope, (N_HEADS, 1, NOPE_DIM))
                    q_pe = tf.reshape(c_q @ w_uq_rope, (1, 1, N_HEADS, ROPE_DIM))
                    return q_nope, q_pe

            @func
            def mla_attention(
                h: Tensor[(1, D_MODEL), DTYPE],
                w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                q_a_norm: ConstTensor[(Q_RANK,), DTYPE],
                w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE],
                w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                kv_a_norm: ConstTensor[(KV_RANK,), DTYPE],
                w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
                w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE],
                w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE],
                cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                pos: Tensor[(1,), "i32"],
                n_new: Tensor[(1,), "i32"],
                ckv_cache: Tensor[(1, CTX_LEN, 1, KV_RANK), DTYPE],
                kpe_cache: Tensor[(1, CTX_LEN, 1, ROPE_DIM), DTYPE],
            ):
                q_nope, q_pe = q_proj(h, w_dq, q_a_norm, w_uq_nope, w_uq_rope)
                with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                    c_kv = tf.rms_norm(tf.reshape(h @ w_dkv, (1, 1, 1, KV_RANK)), kv_a_norm, EPS)
                    k_pe = tf.reshape(h @ w_kr, (1, 1, 1, ROPE_DIM))
                    q_rot, k_rot = tf.rope(tf.cast(q_pe, "f32"), tf.cast(k_pe, "f32"), cos_t, sin_t, pos)
                    ckv_all = tf.cache_update(ckv_cache, pos, n_new, c_kv)
                    kpe_all = tf.cache_update(kpe_cache, pos, n_new, tf.cast(k_rot, DTYPE))
                    q_lat = tf.cast(tf.matmul(q_nope, w_uk), "f32")
                    latent = tf.cast(tf.reshape(ckv_all, (1, CTX_LEN, KV_RANK)), "f32")
                    k_rope = tf.cast(tf.reshape(kpe_all, (1, CTX_LEN, ROPE_DIM)), "f32")
                    q_r = tf.transpose(tf.reshape(q_rot, (1, N_HEADS, ROPE_DIM)), (1, 0, 2))
                    scores = tf.matmul(q_lat, tf.transpose(latent, (0, 2, 1))) + tf.matmul(q_r, tf.transpose(k_rope, (0, 2, 1)))
                    # the valid length is pos + 1: rows past it are not (yet) this sequence's
                    valid = tf.arange(Tensor[(CTX_LEN,), "i32"]) <= pos
                    probs = tf.softmax(tf.where(valid, scores * SCALE, MASKED), -1)
                    ctx_lat = tf.cast(tf.matmul(probs, latent), DTYPE)
                    heads = tf.matmul(ctx_lat, w_uv)
                    merged = tf.reshape(tf.transpose(heads, (1, 0, 2)), (1, N_HEADS * V_DIM))
                    return merged @ w_o, ckv_all, kpe_all

            if routed:
                @func
                def router(h: Tensor[(1, D_MODEL), DTYPE], w_router: ConstTensor[(D_MODEL, EXPERTS), DTYPE],
                           bias: ConstTensor[(EXPERTS,), "f32"]):
                    # group-limited routing: sigmoid scores in f32; each group of GROUP_SIZE experts is
                    # scored by its two best biased scores, the TOPK_GROUP best groups stay, the TOP_K
                    # best biased scores among them are chosen; the chosen experts' unbiased scores,
                    # normalised to sum 1 and scaled by ROUTED_SCALE, weight them
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        scores = tf.sigmoid(tf.matmul(tf.cast(h, "f32"), tf.cast(w_router, "f32")))
                        grouped = tf.reshape(scores + bias, (1, N_GROUP, GROUP_SIZE))
                        best2, _i2 = tf.topk(grouped, 2, -1, True, True)
                        group_scores = tf.reduce(best2, (-1,), False, ReduceKind.SUM)
                        top_g, _ig = tf.topk(group_scores, TOPK_GROUP, -1, True, True)
                        keep = tf.reshape(group_scores >= top_g[:, TOPK_GROUP - 1 : TOPK_GROUP], (1, N_GROUP, 1))
                        choice = tf.reshape(tf.where(keep, grouped, MASKED), (1, EXPERTS))
                        _top, top_ids = tf.topk(choice, TOP_K, -1, True, True)
                        ids = tf.reshape(top_ids, (TOP_K,))
                        picked = tf.reshape(tf.index_select(tf.reshape(scores, (EXPERTS,)), ids, 0), (1, TOP_K))
                        return picked / (tf.reduce(picked, (-1,), True, ReduceKind.SUM) + 1e-20) * ROUTED_SCALE, ids

                @func
                def routed_experts(
                    h: Tensor[(1, D_MODEL), DTYPE], weights: Tensor[(1, TOP_K), "f32"], ids: Tensor[(TOP_K,), "i64"],
                    w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        x = tf.reshape(h, (1, 1, D_MODEL))
                        gate = tf.matmul(x, tf.index_select(w_gate_e, ids, 0))
                        act = tf.silu(gate) * tf.matmul(x, tf.index_select(w_up_e, ids, 0))
                        y = tf.cast(tf.matmul(act, tf.index_select(w_down_e, ids, 0)), "f32") * tf.reshape(weights, (TOP_K, 1, 1))
                        return tf.cast(tf.reshape(tf.reduce(y, (0,), False, ReduceKind.SUM), (1, D_MODEL)), DTYPE)

                @func
                def shared_expert(
                    h: Tensor[(1, D_MODEL), DTYPE], w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE],
                    w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE], w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        return (tf.silu(h @ w_gate_s) * (h @ w_up_s)) @ w_down_s

                @func
                def moe(
                    h: Tensor[(1, D_MODEL), DTYPE], w_router: ConstTensor[(D_MODEL, EXPERTS), DTYPE],
                    bias: ConstTensor[(EXPERTS,), "f32"], w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), DTYPE],
                    w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE], w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE],
                    w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    weights, ids = router(h, w_router, bias)
                    routed = routed_experts(h, weights, ids, w_gate_e, w_up_e, w_down_e)
                    shared = shared_expert(h, w_gate_s, w_up_s, w_down_s)
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        return routed + shared

                @func
                def decoder_layer(
                    x: Tensor[(1, D_MODEL), DTYPE], attn_norm: ConstTensor[(D_MODEL,), DTYPE],
                    mlp_norm: ConstTensor[(D_MODEL,), DTYPE], w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                    q_a_norm: ConstTensor[(Q_RANK,), DTYPE], w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                    w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE], w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                    kv_a_norm: ConstTensor[(KV_RANK,), DTYPE], w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
                    w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE], w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                    w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE], w_router: ConstTensor[(D_MODEL, EXPERTS), DTYPE],
                    bias: ConstTensor[(EXPERTS,), "f32"], w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), DTYPE],
                    w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE], w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE],
                    w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), DTYPE],
                    cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"], sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                    pos: Tensor[(1,), "i32"], n_new: Tensor[(1,), "i32"],
                    ckv_cache: Tensor[(1, CTX_LEN, 1, KV_RANK), DTYPE], kpe_cache: Tensor[(1, CTX_LEN, 1, ROPE_DIM), DTYPE],
                ):
                    attn, ckv_all, kpe_all = mla_attention(
                        rms(x, attn_norm), w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv, kv_a_norm, w_kr,
                        w_uk, w_uv, w_o, cos_t, sin_t, pos, n_new, ckv_cache, kpe_cache)
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        h = x + attn
                    out = moe(rms(h, mlp_norm), w_router, bias, w_gate_e, w_up_e, w_down_e, w_gate_s, w_up_s, w_down_s)
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        return h + out, ckv_all, kpe_all
            else:
                @func
                def mlp(
                    h: Tensor[(1, D_MODEL), DTYPE],
                    w_gate: ConstTensor[(D_MODEL, FFN), DTYPE],
                    w_up: ConstTensor[(D_MODEL, FFN), DTYPE],
                    w_down: ConstTensor[(FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        return (tf.silu(h @ w_gate) * (h @ w_up)) @ w_down

                @func
                def decoder_layer(
                    x: Tensor[(1, D_MODEL), DTYPE], attn_norm: ConstTensor[(D_MODEL,), DTYPE],
                    mlp_norm: ConstTensor[(D_MODEL,), DTYPE], w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                    q_a_norm: ConstTensor[(Q_RANK,), DTYPE], w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                    w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE], w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                    kv_a_norm: ConstTensor[(KV_RANK,), DTYPE], w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
                    w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE], w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                    w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE], w_gate: ConstTensor[(D_MODEL, FFN), DTYPE],
                    w_up: ConstTensor[(D_MODEL, FFN), DTYPE], w_down: ConstTensor[(FFN, D_MODEL), DTYPE],
                    cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"], sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                    pos: Tensor[(1,), "i32"], n_new: Tensor[(1,), "i32"],
                    ckv_cache: Tensor[(1, CTX_LEN, 1, KV_RANK), DTYPE], kpe_cache: Tensor[(1, CTX_LEN, 1, ROPE_DIM), DTYPE],
                ):
                    attn, ckv_all, kpe_all = mla_attention(
                        rms(x, attn_norm), w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv, kv_a_norm, w_kr,
                        w_uk, w_uv, w_o, cos_t, sin_t, pos, n_new, ckv_cache, kpe_cache)
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        h = x + attn
                    out = mlp(rms(h, mlp_norm), w_gate, w_up, w_down)
                    with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                        return h + out, ckv_all, kpe_all

        return published_root(MlaLayer, "MlaMoeLayer" if routed else "MlaLayer")


    def _placed(routed):
        """The layer placed over the whole device: MLA as four kernels (down-projections,
        absorbed query, latent attention, value and output), then the dense MLP or the
        MoE block (router, the TOP_K routed experts one by one, the shared expert)."""

        @module(entry="decoder_layer", topologies=PLACED_LEVELS)
        class MlaLayerPlaced:
            @func
            def rms(x: Tensor[(1, D_MODEL), DTYPE], w: ConstTensor[(D_MODEL,), DTYPE]) -> Tensor[(1, D_MODEL), DTYPE]:
                # the prologue of the GEMVs that read it: every CTA normalises the whole row
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as _all:
                    x32 = tf.cast(tf.reshard(x, (1, D_MODEL), "smem"), "f32")
                    ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
                    return tf.cast(x32 * tf.rsqrt(ms + EPS), DTYPE) * tf.reshard(w, (D_MODEL,), "smem")

            @func
            def down_proj(
                h: Tensor[(1, D_MODEL), DTYPE],
                w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
            ):
                # the low-rank down-projections as GEMVs split over their output columns: the
                # q and kv latents on all CTAs in one K loop, the RoPE key on ROPE_CTAS of them
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
                    acc_q = tf.zeros(Tensor[(1, Q_RANK @ g.n), "f32", "rmem"])
                    acc_kv = tf.zeros(Tensor[(1, KV_RANK @ g.n), "f32", "rmem"])
                    for kk in tile(D_MODEL, DOWN_Q_TK):
                        wq_t = tf.cast(tf.reshard(w_dq[kk, :], (DOWN_Q_TK, Q_RANK @ g.n), "smem"), "f32")
                        wkv_t = tf.cast(tf.reshard(w_dkv[kk, :], (DOWN_Q_TK, KV_RANK @ g.n), "smem"), "f32")
                        acc_q = acc_q + tf.reshard(tf.matmul(h32[:, kk], wq_t), (1, Q_RANK @ g.n), "rmem")
                        acc_kv = acc_kv + tf.reshard(tf.matmul(h32[:, kk], wkv_t), (1, KV_RANK @ g.n), "rmem")
                    c_q = tf.reshard(tf.cast(acc_q, DTYPE), (1, Q_RANK @ g.n), "gmem")
                    c_kv = tf.reshard(tf.cast(acc_kv, DTYPE), (1, KV_RANK @ g.n), "gmem")
                    with g[:ROPE_CTAS] as r:
                        w_r = tf.cast(tf.reshard(w_kr, (D_MODEL, ROPE_DIM @ r.n), "smem"), "f32")
                        k_pe = tf.reshard(tf.cast(tf.matmul(h32, w_r), DTYPE), (1, ROPE_DIM @ r.n), "gmem")
                    return c_q, c_kv, k_pe

            @func
            def q_absorbed(
                c_q: Tensor[(1, Q_RANK), DTYPE],
                q_a_norm: ConstTensor[(Q_RANK,), DTYPE],
                w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE],
                w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE],
                cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                pos: Tensor[(1,), "i32"],
            ):
                # the q latent normalised by every CTA, then the up-projection split over heads
                # (N_HEADS = PLACED_CTAS: a CTA owns one head's nope and rope columns), w_uk folded
                # into the nope part and the rope part rotated, both written per head
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    cq = tf.rms_norm(tf.reshard(c_q, (1, Q_RANK), "smem"), tf.reshard(q_a_norm, (Q_RANK,), "smem"), EPS)
                    c32 = tf.cast(cq, "f32")
                    acc_n = tf.zeros(Tensor[(1, N_HEADS * NOPE_DIM @ g.n), "f32", "rmem"])
                    acc_r = tf.zeros(Tensor[(1, N_HEADS * ROPE_DIM @ g.n), "f32", "rmem"])
                    for kk in tile(Q_RANK, UP_Q_TK):
                        wn_t = tf.cast(tf.reshard(w_uq_nope[kk, :], (UP_Q_TK, N_HEADS * NOPE_DIM @ g.n), "smem"), "f32")
                        wr_t = tf.cast(tf.reshard(w_uq_rope[kk, :], (UP_Q_TK, N_HEADS * ROPE_DIM @ g.n), "smem"), "f32")
                        acc_n = acc_n + tf.reshard(tf.matmul(c32[:, kk], wn_t), (1, N_HEADS * NOPE_DIM @ g.n), "rmem")
                        acc_r = acc_r + tf.reshard(tf.matmul(c32[:, kk], wr_t), (1, N_HEADS * ROPE_DIM @ g.n), "rmem")
                    q_nope = tf.reshape(tf.reshard(tf.cast(acc_n, DTYPE), (1, N_HEADS * NOPE_DIM @ g.n), "smem"), (N_HEADS, 1, NOPE_DIM))
                    qn32 = tf.cast(q_nope, "f32")
                    acc_l = tf.zeros(Tensor[(N_HEADS @ g.n, 1, KV_RANK), "f32", "rmem"])
                    for kk in tile(NOPE_DIM, UK_TK):
                        uk_t = tf.cast(tf.reshard(w_uk[:, kk, :], (N_HEADS @ g.n, UK_TK, KV_RANK), "smem"), "f32")
                        acc_l = acc_l + tf.reshard(tf.matmul(qn32[:, :, kk], uk_t), (N_HEADS @ g.n, 1, KV_RANK), "rmem")
                    q_lat = tf.cast(tf.cast(acc_l, DTYPE), "f32")
                    p = tf.reshape(pos, ())
                    cos_r = tf.reshard(tf.reshape(cos_t[p : p + 1, :], (1, 1, ROPE_DIM)), (1, 1, ROPE_DIM), "smem")
                    sin_r = tf.reshard(tf.reshape(sin_t[p : p + 1, :], (1, 1, ROPE_DIM)), (1, 1, ROPE_DIM), "smem")
                    q_pe = tf.reshape(tf.reshard(tf.cast(acc_r, DTYPE), (1, N_HEADS * ROPE_DIM @ g.n), "smem"), (N_HEADS, 1, ROPE_DIM))
                    q32 = tf.cast(q_pe, "f32")
                    q_rot = q32 * cos_r + tf.concat(q32[:, :, HALF:ROPE_DIM] * -1.0, q32[:, :, 0:HALF], axis=2) * sin_r
                    lat_g = tf.reshard(q_lat, (N_HEADS @ g.n, 1, KV_RANK), "gmem")
                    rot_g = tf.reshard(q_rot, (N_HEADS @ g.n, 1, ROPE_DIM), "gmem")
                    return lat_g, rot_g

            @func
            def latent_attention(
                q_lat: Tensor[(N_HEADS, 1, KV_RANK), "f32"],
                q_rot: Tensor[(N_HEADS, 1, ROPE_DIM), "f32"],
                c_kv: Tensor[(1, KV_RANK), DTYPE],
                k_pe: Tensor[(1, ROPE_DIM), DTYPE],
                kv_a_norm: ConstTensor[(KV_RANK,), DTYPE],
                cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                pos: Tensor[(1,), "i32"],
                n_new: Tensor[(1,), "i32"],
                ckv_cache: Tensor[(1, PLACED_CTX, 1, KV_RANK), DTYPE],
                kpe_cache: Tensor[(1, PLACED_CTX, 1, ROPE_DIM), DTYPE],
            ):
                # absorbed MLA, split-K: CTA (hg, s) owns N_HEADS/HEAD_GROUPS heads and, of every
                # window of KV_BLOCK * SPLITS cache rows, the s-th KV_BLOCK rows of the latent and
                # RoPE-key caches (shared by all heads); every CTA normalises the new latent and
                # rotates the new key, then runs its online softmax, and the SPLITS partials are
                # combined by a matmul over the split axis (a Partial on `s` the reshards complete)
                with Mesh(("cta",), (HEAD_GROUPS, SPLITS), ("hg", "s")) as a:
                    ckv = tf.rms_norm(tf.reshape(tf.reshard(tf.reshard(c_kv, (1, KV_RANK), "gmem"), (1, KV_RANK), "smem"), (1, 1, 1, KV_RANK)),
                                      tf.reshard(kv_a_norm, (KV_RANK,), "smem"), EPS)
                    p = tf.reshape(pos, ())
                    cos_r = tf.reshard(tf.reshape(cos_t[p : p + 1, :], (1, 1, 1, ROPE_DIM)), (1, 1, 1, ROPE_DIM), "smem")
                    sin_r = tf.reshard(tf.reshape(sin_t[p : p + 1, :], (1, 1, 1, ROPE_DIM)), (1, 1, 1, ROPE_DIM), "smem")
                    k32 = tf.cast(tf.reshape(tf.reshard(tf.reshard(k_pe, (1, ROPE_DIM), "gmem"), (1, ROPE_DIM), "smem"), (1, 1, 1, ROPE_DIM)), "f32")
                    k_rot = k32 * cos_r + tf.concat(k32[:, :, :, HALF:ROPE_DIM] * -1.0, k32[:, :, :, 0:HALF], axis=3) * sin_r
                    ckv_all = tf.cache_update(ckv_cache, pos, n_new, tf.reshard(ckv, (1, 1, 1, KV_RANK), "gmem"))
                    kpe_all = tf.cache_update(kpe_cache, pos, n_new, tf.reshard(tf.cast(k_rot, DTYPE), (1, 1, 1, ROPE_DIM), "gmem"))
                    q_l = tf.reshape(tf.reshard(tf.reshard(q_lat, (N_HEADS, 1, KV_RANK), "gmem"), (N_HEADS @ a.hg, 1, KV_RANK), "smem"), (1, 1, N_HEADS, KV_RANK))
                    q_r = tf.reshape(tf.reshard(tf.reshard(q_rot, (N_HEADS, 1, ROPE_DIM), "gmem"), (N_HEADS @ a.hg, 1, ROPE_DIM), "smem"), (1, 1, N_HEADS, ROPE_DIM))
                    run_max = tf.full_like(tf.zeros(Tensor[(1, SPLITS @ a.s, N_HEADS @ a.hg, 1), "f32", "smem"]), NEG_BIG)
                    run_sum = tf.zeros(Tensor[(1, SPLITS @ a.s, N_HEADS @ a.hg, 1), "f32", "smem"])
                    run_acc = tf.zeros(Tensor[(1, SPLITS @ a.s, N_HEADS @ a.hg, KV_RANK), "f32", "smem"])
                    # only the windows of the attended length; the step's own position is read from
                    # the rows visited, so a pos past them is refused, never skipped
                    rows = tf.arange(Tensor[(PLACED_VISITED,), "i32"])
                    last = tf.index_select(rows, pos, 0)
                    for kk in tile(PLACED_VISITED, KV_BLOCK * SPLITS):
                        lat = tf.reshard(tf.reshape(ckv_all[:, kk, :, :], (1, SPLITS, KV_BLOCK, KV_RANK)),
                                         (1, SPLITS @ a.s, KV_BLOCK, KV_RANK), "smem")
                        kpe = tf.reshard(tf.reshape(kpe_all[:, kk, :, :], (1, SPLITS, KV_BLOCK, ROPE_DIM)),
                                         (1, SPLITS @ a.s, KV_BLOCK, ROPE_DIM), "smem")
                        lat32 = tf.cast(lat, "f32")
                        # rows past the valid length (pos + 1) are masked, each split its own rows
                        valid = tf.reshard(tf.reshape(rows[kk] <= last, (1, SPLITS, 1, KV_BLOCK)),
                                           (1, SPLITS @ a.s, 1, KV_BLOCK), "smem")
                        logits = (tf.matmul(q_l, tf.transpose(lat32, (0, 1, 3, 2)))
                                  + tf.matmul(q_r, tf.transpose(tf.cast(kpe, "f32"), (0, 1, 3, 2)))) * SCALE
                        scores = tf.where(valid, logits, MASKED)
                        new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                        rescale = tf.exp(run_max - new_max)
                        probs = tf.exp(scores - new_max)
                        run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                        run_acc = run_acc * rescale + tf.matmul(probs, lat32)
                        run_max = new_max
                    peak = tf.reduce(tf.reshard(run_max, (1, SPLITS, N_HEADS @ a.hg, 1), "smem"), (1,), True, ReduceKind.MAX)
                    weight = tf.transpose(tf.exp(run_max - peak), (0, 2, 3, 1))
                    num = tf.matmul(weight, tf.transpose(run_acc, (0, 2, 1, 3)))
                    den = tf.reshard(tf.matmul(weight, tf.transpose(run_sum, (0, 2, 1, 3))), (1, N_HEADS @ a.hg, 1, 1), "smem")
                    ctx = tf.reshard(num / den, (1, N_HEADS @ a.hg, 1, KV_RANK), "smem")
                    ctx_lat = tf.reshard(tf.cast(ctx, DTYPE), (1, N_HEADS @ a.hg, 1, KV_RANK), "gmem")
                    return tf.reshape(ctx_lat, (N_HEADS, 1, KV_RANK)), ckv_all, kpe_all

            @func
            def value_out(
                ctx_lat: Tensor[(N_HEADS, 1, KV_RANK), DTYPE],
                w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE],
            ) -> Tensor[(1, D_MODEL), DTYPE]:
                # w_uv per head (one head per CTA), then the output GEMV split over D_MODEL columns
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    c32 = tf.cast(tf.reshard(tf.reshard(ctx_lat, (N_HEADS, 1, KV_RANK), "gmem"), (N_HEADS @ g.n, 1, KV_RANK), "smem"), "f32")
                    acc_v = tf.zeros(Tensor[(N_HEADS @ g.n, 1, V_DIM), "f32", "rmem"])
                    for kk in tile(KV_RANK, UV_TK):
                        uv_t = tf.cast(tf.reshard(w_uv[:, kk, :], (N_HEADS @ g.n, UV_TK, V_DIM), "smem"), "f32")
                        acc_v = acc_v + tf.reshard(tf.matmul(c32[:, :, kk], uv_t), (N_HEADS @ g.n, 1, V_DIM), "rmem")
                    heads = tf.reshard(tf.cast(acc_v, DTYPE), (N_HEADS @ g.n, 1, V_DIM), "gmem")
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    merged = tf.reshape(tf.reshard(heads, (N_HEADS, 1, V_DIM), "gmem"), (1, N_HEADS * V_DIM))
                    m32 = tf.cast(tf.reshard(merged, (1, N_HEADS * V_DIM), "smem"), "f32")
                    acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                    for kk in tile(N_HEADS * V_DIM, O_TK):
                        w_t = tf.cast(tf.reshard(w_o[kk, :], (O_TK, D_MODEL @ g.n), "smem"), "f32")
                        acc = acc + tf.reshard(tf.matmul(m32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
                    return tf.reshard(tf.cast(acc, DTYPE), (1, D_MODEL @ g.n), "gmem")

            @func
            def mla_attention(
                h: Tensor[(1, D_MODEL), DTYPE],
                w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                q_a_norm: ConstTensor[(Q_RANK,), DTYPE],
                w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE],
                w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                kv_a_norm: ConstTensor[(KV_RANK,), DTYPE],
                w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
                w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE],
                w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE],
                cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                pos: Tensor[(1,), "i32"],
                n_new: Tensor[(1,), "i32"],
                ckv_cache: Tensor[(1, PLACED_CTX, 1, KV_RANK), DTYPE],
                kpe_cache: Tensor[(1, PLACED_CTX, 1, ROPE_DIM), DTYPE],
            ):
                c_q, c_kv, k_pe = down_proj(h, w_dq, w_dkv, w_kr)
                q_lat, q_rot = q_absorbed(c_q, q_a_norm, w_uq_nope, w_uq_rope, w_uk, cos_t, sin_t, pos)
                ctx_lat, ckv_all, kpe_all = latent_attention(q_lat, q_rot, c_kv, k_pe, kv_a_norm, cos_t, sin_t, pos,
                                                             n_new, ckv_cache, kpe_cache)
                return value_out(ctx_lat, w_uv, w_o), ckv_all, kpe_all

            @func
            def residual(x: Tensor[(1, D_MODEL), DTYPE], y: Tensor[(1, D_MODEL), DTYPE]) -> Tensor[(1, D_MODEL), DTYPE]:
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    total = tf.reshard(x, (1, D_MODEL @ g.n), "smem") + tf.reshard(y, (1, D_MODEL @ g.n), "smem")
                    return tf.reshard(total, (1, D_MODEL @ g.n), "gmem")

            if routed:
                @func
                def router(h: Tensor[(1, D_MODEL), DTYPE], w_router: ConstTensor[(D_MODEL, EXPERTS), DTYPE],
                           bias: ConstTensor[(EXPERTS,), "f32"]):
                    # the logits a GEMV of EXPERTS / PLACED_CTAS expert columns per CTA; the group-limited
                    # choice over all EXPERTS scores is repeated by every CTA (each then holds the routing)
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                        h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
                        w32 = tf.cast(tf.reshard(w_router, (D_MODEL, EXPERTS @ g.n), "smem"), "f32")
                        logits = tf.reshard(tf.matmul(h32, w32), (1, EXPERTS @ g.n), "gmem")
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as _all:
                        scores = tf.sigmoid(tf.reshard(logits, (1, EXPERTS), "smem"))
                        grouped = tf.reshape(scores + tf.reshard(bias, (EXPERTS,), "smem"), (1, N_GROUP, GROUP_SIZE))
                        best2, _i2 = tf.topk(grouped, 2, -1, True, True)
                        group_scores = tf.reduce(best2, (-1,), False, ReduceKind.SUM)
                        top_g, _ig = tf.topk(group_scores, TOPK_GROUP, -1, True, True)
                        keep = tf.reshape(group_scores >= top_g[:, TOPK_GROUP - 1 : TOPK_GROUP], (1, N_GROUP, 1))
                        choice = tf.reshape(tf.where(keep, grouped, MASKED), (1, EXPERTS))
                        _top, top_ids = tf.topk(choice, TOP_K, -1, True, True)
                        ids = tf.reshape(top_ids, (TOP_K,))
                        picked = tf.reshape(tf.index_select(tf.reshape(scores, (EXPERTS,)), ids, 0), (1, TOP_K))
                        return picked / (tf.reduce(picked, (-1,), True, ReduceKind.SUM) + 1e-20) * ROUTED_SCALE, ids

                @func
                def routed_experts(
                    h: Tensor[(1, D_MODEL), DTYPE], weights: Tensor[(1, TOP_K), "f32"], ids: Tensor[(TOP_K,), "i64"],
                    w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    # the TOP_K selected experts one after another, each read as a run-time window of
                    # the expert stack: a gate/up GEMV split over EXPERT_FFN columns, then a down GEMV
                    # split over D_MODEL columns walking EXPERT_FFN in DOWN_TK rows, weighted into f32
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                        h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
                        w_s = tf.reshard(weights, (1, TOP_K), "smem")
                        ids_s = tf.reshard(ids, (TOP_K,), "smem")
                        out = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                        for j in range(TOP_K):
                            e = ids_s[j]
                            w_gate = tf.reshape(w_gate_e[e : e + 1, :, :], (D_MODEL, EXPERT_FFN))
                            w_up = tf.reshape(w_up_e[e : e + 1, :, :], (D_MODEL, EXPERT_FFN))
                            w_down = tf.reshape(w_down_e[e : e + 1, :, :], (EXPERT_FFN, D_MODEL))
                            acc_g = tf.zeros(Tensor[(1, EXPERT_FFN @ g.n), "f32", "rmem"])
                            acc_u = tf.zeros(Tensor[(1, EXPERT_FFN @ g.n), "f32", "rmem"])
                            for kk in tile(D_MODEL, EXPERT_TK):
                                wg_t = tf.cast(tf.reshard(w_gate[kk, :], (EXPERT_TK, EXPERT_FFN @ g.n), "smem"), "f32")
                                wu_t = tf.cast(tf.reshard(w_up[kk, :], (EXPERT_TK, EXPERT_FFN @ g.n), "smem"), "f32")
                                acc_g = acc_g + tf.reshard(tf.matmul(h32[:, kk], wg_t), (1, EXPERT_FFN @ g.n), "rmem")
                                acc_u = acc_u + tf.reshard(tf.matmul(h32[:, kk], wu_t), (1, EXPERT_FFN @ g.n), "rmem")
                            act = tf.reshard(tf.silu(tf.cast(acc_g, DTYPE)) * tf.cast(acc_u, DTYPE), (1, EXPERT_FFN @ g.n), "gmem")
                            a32 = tf.cast(tf.reshard(act, (1, EXPERT_FFN), "smem"), "f32")
                            acc_d = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                            for kk in tile(EXPERT_FFN, DOWN_TK):
                                w_d = tf.cast(tf.reshard(w_down[kk, :], (DOWN_TK, D_MODEL @ g.n), "smem"), "f32")
                                acc_d = acc_d + tf.reshard(tf.matmul(a32[:, kk], w_d), (1, D_MODEL @ g.n), "rmem")
                            y = tf.cast(tf.cast(acc_d, DTYPE), "f32")
                            out = out + y * tf.reshard(w_s[:, j], (1, 1), "rmem")
                        return tf.reshard(tf.cast(out, DTYPE), (1, D_MODEL @ g.n), "gmem")

                @func
                def shared_expert(
                    h: Tensor[(1, D_MODEL), DTYPE], w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE],
                    w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE], w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    # a SwiGLU of two GEMV kernels like the dense MLP's, at SHARED_FFN features
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                        h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
                        acc_g = tf.zeros(Tensor[(1, SHARED_FFN @ g.n), "f32", "rmem"])
                        acc_u = tf.zeros(Tensor[(1, SHARED_FFN @ g.n), "f32", "rmem"])
                        for kk in tile(D_MODEL, EXPERT_TK):
                            wg_t = tf.cast(tf.reshard(w_gate_s[kk, :], (EXPERT_TK, SHARED_FFN @ g.n), "smem"), "f32")
                            wu_t = tf.cast(tf.reshard(w_up_s[kk, :], (EXPERT_TK, SHARED_FFN @ g.n), "smem"), "f32")
                            acc_g = acc_g + tf.reshard(tf.matmul(h32[:, kk], wg_t), (1, SHARED_FFN @ g.n), "rmem")
                            acc_u = acc_u + tf.reshard(tf.matmul(h32[:, kk], wu_t), (1, SHARED_FFN @ g.n), "rmem")
                        act = tf.reshard(tf.silu(tf.cast(acc_g, DTYPE)) * tf.cast(acc_u, DTYPE), (1, SHARED_FFN @ g.n), "gmem")
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                        a32 = tf.cast(tf.reshard(act, (1, SHARED_FFN), "smem"), "f32")
                        acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                        for kk in tile(SHARED_FFN, DOWN_TK):
                            w_t = tf.cast(tf.reshard(w_down_s[kk, :], (DOWN_TK, D_MODEL @ g.n), "smem"), "f32")
                            acc = acc + tf.reshard(tf.matmul(a32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
                        return tf.reshard(tf.cast(acc, DTYPE), (1, D_MODEL @ g.n), "gmem")

                @func
                def moe(
                    h: Tensor[(1, D_MODEL), DTYPE], w_router: ConstTensor[(D_MODEL, EXPERTS), DTYPE],
                    bias: ConstTensor[(EXPERTS,), "f32"], w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), DTYPE],
                    w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE], w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE],
                    w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    weights, ids = router(h, w_router, bias)
                    routed = routed_experts(h, weights, ids, w_gate_e, w_up_e, w_down_e)
                    return residual(routed, shared_expert(h, w_gate_s, w_up_s, w_down_s))

                @func
                def decoder_layer(
                    x: Tensor[(1, D_MODEL), DTYPE], attn_norm: ConstTensor[(D_MODEL,), DTYPE],
                    mlp_norm: ConstTensor[(D_MODEL,), DTYPE], w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                    q_a_norm: ConstTensor[(Q_RANK,), DTYPE], w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                    w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE], w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                    kv_a_norm: ConstTensor[(KV_RANK,), DTYPE], w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
                    w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE], w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                    w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE], w_router: ConstTensor[(D_MODEL, EXPERTS), DTYPE],
                    bias: ConstTensor[(EXPERTS,), "f32"], w_gate_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_up_e: ConstTensor[(EXPERTS, D_MODEL, EXPERT_FFN), DTYPE],
                    w_down_e: ConstTensor[(EXPERTS, EXPERT_FFN, D_MODEL), DTYPE],
                    w_gate_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE], w_up_s: ConstTensor[(D_MODEL, SHARED_FFN), DTYPE],
                    w_down_s: ConstTensor[(SHARED_FFN, D_MODEL), DTYPE],
                    cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"], sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                    pos: Tensor[(1,), "i32"], n_new: Tensor[(1,), "i32"],
                    ckv_cache: Tensor[(1, PLACED_CTX, 1, KV_RANK), DTYPE], kpe_cache: Tensor[(1, PLACED_CTX, 1, ROPE_DIM), DTYPE],
                ):
                    attn, ckv_all, kpe_all = mla_attention(
                        rms(x, attn_norm), w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv, kv_a_norm, w_kr,
                        w_uk, w_uv, w_o, cos_t, sin_t, pos, n_new, ckv_cache, kpe_cache)
                    h = residual(x, attn)
                    out = moe(rms(h, mlp_norm), w_router, bias, w_gate_e, w_up_e, w_down_e, w_gate_s, w_up_s, w_down_s)
                    return residual(h, out), ckv_all, kpe_all
            else:
                @func
                def mlp(
                    h: Tensor[(1, D_MODEL), DTYPE],
                    w_gate: ConstTensor[(D_MODEL, FFN), DTYPE],
                    w_up: ConstTensor[(D_MODEL, FFN), DTYPE],
                    w_down: ConstTensor[(FFN, D_MODEL), DTYPE],
                ) -> Tensor[(1, D_MODEL), DTYPE]:
                    # two GEMV kernels: gate/up split over FFN columns (SwiGLU in the epilogue),
                    # then down split over D_MODEL columns, each reading its input row whole
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                        h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
                        acc_g = tf.zeros(Tensor[(1, FFN @ g.n), "f32", "rmem"])
                        acc_u = tf.zeros(Tensor[(1, FFN @ g.n), "f32", "rmem"])
                        for kk in tile(D_MODEL, UP_TK):
                            wg_t = tf.cast(tf.reshard(w_gate[kk, :], (UP_TK, FFN @ g.n), "smem"), "f32")
                            wu_t = tf.cast(tf.reshard(w_up[kk, :], (UP_TK, FFN @ g.n), "smem"), "f32")
                            acc_g = acc_g + tf.reshard(tf.matmul(h32[:, kk], wg_t), (1, FFN @ g.n), "rmem")
                            acc_u = acc_u + tf.reshard(tf.matmul(h32[:, kk], wu_t), (1, FFN @ g.n), "rmem")
                        act = tf.silu(tf.cast(acc_g, DTYPE)) * tf.cast(acc_u, DTYPE)
                        act_g = tf.reshard(act, (1, FFN @ g.n), "gmem")
                    with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                        a32 = tf.cast(tf.reshard(act_g, (1, FFN), "smem"), "f32")
                        acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                        for kk in tile(FFN, DOWN_TK):
                            w_t = tf.cast(tf.reshard(w_down[kk, :], (DOWN_TK, D_MODEL @ g.n), "smem"), "f32")
                            acc = acc + tf.reshard(tf.matmul(a32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
                        return tf.reshard(tf.cast(acc, DTYPE), (1, D_MODEL @ g.n), "gmem")

                @func
                def decoder_layer(
                    x: Tensor[(1, D_MODEL), DTYPE], attn_norm: ConstTensor[(D_MODEL,), DTYPE],
                    mlp_norm: ConstTensor[(D_MODEL,), DTYPE], w_dq: ConstTensor[(D_MODEL, Q_RANK), DTYPE],
                    q_a_norm: ConstTensor[(Q_RANK,), DTYPE], w_uq_nope: ConstTensor[(Q_RANK, N_HEADS * NOPE_DIM), DTYPE],
                    w_uq_rope: ConstTensor[(Q_RANK, N_HEADS * ROPE_DIM), DTYPE], w_dkv: ConstTensor[(D_MODEL, KV_RANK), DTYPE],
                    kv_a_norm: ConstTensor[(KV_RANK,), DTYPE], w_kr: ConstTensor[(D_MODEL, ROPE_DIM), DTYPE],
                    w_uk: ConstTensor[(N_HEADS, NOPE_DIM, KV_RANK), DTYPE], w_uv: ConstTensor[(N_HEADS, KV_RANK, V_DIM), DTYPE],
                    w_o: ConstTensor[(N_HEADS * V_DIM, D_MODEL), DTYPE], w_gate: ConstTensor[(D_MODEL, FFN), DTYPE],
                    w_up: ConstTensor[(D_MODEL, FFN), DTYPE], w_down: ConstTensor[(FFN, D_MODEL), DTYPE],
                    cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"], sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
                    pos: Tensor[(1,), "i32"], n_new: Tensor[(1,), "i32"],
                    ckv_cache: Tensor[(1, PLACED_CTX, 1, KV_RANK), DTYPE], kpe_cache: Tensor[(1, PLACED_CTX, 1, ROPE_DIM), DTYPE],
                ):
                    attn, ckv_all, kpe_all = mla_attention(
                        rms(x, attn_norm), w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv, kv_a_norm, w_kr,
                        w_uk, w_uv, w_o, cos_t, sin_t, pos, n_new, ckv_cache, kpe_cache)
                    h = residual(x, attn)
                    out = mlp(rms(h, mlp_norm), w_gate, w_up, w_down)
                    return residual(h, out), ckv_all, kpe_all

        return published_root(MlaLayerPlaced, "MlaMoeLayerPlaced" if routed else "MlaLayerPlaced")

    return _logical(False), _logical(True), _placed(False), _placed(True)
