"""Gemma-2-style decode layers (gemma-2-9b shapes, one token, batch 1). Layers
alternate: even layers use sliding-window attention over a ring-buffer KV cache of
WINDOW slots, odd layers global attention over a KV cache of DimVar length
`ctx_len`; both soft-cap the attention logits (`tanh(s / 50) * 50`) and use
query_pre_attn_scalar scaling. Each layer has four RMSNorms (pre/post attention,
pre/post feed-forward; stored weights are `1 + w`, see the converter), a GeGLU MLP
(tanh GELU). The root's `lm_head` soft-caps the final logits at 30 and `embed`
scales by sqrt(d_model). Both layer kinds are built by one factory.

`Gemma2_9B` holds LAYERS copies of the logical layers (alternating) plus `embed`,
`lm_head` and the whole-model `decode_step`. `gemma_layer_placed` builds the same
layers placed over the whole device (docs/models.md): every projection a GEMV split
over its output features on CTAS CTAs, weights staged through shared memory a K tile
at a time; attention as split-K flash decoding over N_KV heads x SPLITS sequence
splits with the soft cap applied per block; every RMSNorm the prologue of the kernel
that reads its row. The placed roots `Gemma2_9B_H200` and `Gemma2_9B_B200` hold
LAYERS copies. Bind: --dim ctx_len=4096 (the odd layers and their kernels; the
placed attention needs a multiple of KV_BLOCK * SPLITS = 1024), and --dim kv_len=N
to price a step at a position below N (the placed attentions visit only the windows
of the attended length; unbound: MAX_POS, every row).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.ir.types.dim import dim_min
from tilefoundry.models.zoo_layers import attach_layers, lazy_roots, published_root
from tilefoundry.target import CudaTarget

# config (google/gemma-2-9b)
VOCAB = 256000
D_MODEL = 3584
N_Q = 16
N_KV = 8
HEAD_DIM = 256
GROUP = N_Q // N_KV
FFN = 14336
LAYERS = 42
EPS = 1e-6
WINDOW = 4096
MAX_POS = 8192
ATTN_CAP = 50.0
FINAL_CAP = 30.0
QUERY_PRE_ATTN_SCALAR = 256
SCALE = 1.0 / QUERY_PRE_ATTN_SCALAR ** 0.5
EMBED_SCALE = D_MODEL ** 0.5
ROPE_THETA = 10000.0
# a cache row past the valid length (the position) scores MASKED, far below a capped
# score (>= -ATTN_CAP), so its probability is exp(-1e30) = 0
MASKED = -1.0e30
CTX_LEN = DimVar("ctx_len", 1, MAX_POS + 1)
CTAS = 8

# the Hugging Face checkpoint (Gemma2ForCausalLM; models/checkpoints.py reads these)
HF_MODEL_TYPE = "gemma2"
HF_CONFIG = {"vocab_size": "VOCAB", "hidden_size": "D_MODEL", "num_attention_heads": "N_Q",
             "num_key_value_heads": "N_KV", "head_dim": "HEAD_DIM", "intermediate_size": "FFN",
             "num_hidden_layers": "LAYERS", "rms_norm_eps": "EPS", "sliding_window": "WINDOW",
             "max_position_embeddings": "MAX_POS", "attn_logit_softcapping": "ATTN_CAP",
             "final_logit_softcapping": "FINAL_CAP", "query_pre_attn_scalar": "QUERY_PRE_ATTN_SCALAR",
             "rope_theta": "ROPE_THETA"}
# norms are stored raw (w; Gemma2RMSNorm scales by 1 + w): the layer's converters add 1
HF_LAYER_WEIGHTS = {
    "pre_attn_norm": ("model.layers.{i}.input_layernorm.weight", ""),
    "post_attn_norm": ("model.layers.{i}.post_attention_layernorm.weight", ""),
    "pre_ffw_norm": ("model.layers.{i}.pre_feedforward_layernorm.weight", ""),
    "post_ffw_norm": ("model.layers.{i}.post_feedforward_layernorm.weight", ""),
    "w_q": ("model.layers.{i}.self_attn.q_proj.weight", "T"),
    "w_k": ("model.layers.{i}.self_attn.k_proj.weight", "T"),
    "w_v": ("model.layers.{i}.self_attn.v_proj.weight", "T"),
    "w_o": ("model.layers.{i}.self_attn.o_proj.weight", "T"),
    "w_gate": ("model.layers.{i}.mlp.gate_proj.weight", "T"),
    "w_up": ("model.layers.{i}.mlp.up_proj.weight", "T"),
    "w_down": ("model.layers.{i}.mlp.down_proj.weight", "T"),
}
# the head is tied to the embedding (no lm_head.weight): it reads embed_tokens transposed
HF_ROOT_WEIGHTS = {
    "table": ("model.embed_tokens.weight", ""),
    "final_norm": ("model.norm.weight", ""),
    "w_vocab": ("lm_head.weight", "T"),
}
REDUCE_RULES = {
    "CTAS": ("D_MODEL", "FFN", "N_Q * HEAD_DIM", "N_KV * HEAD_DIM"),
    "PLACED_CTAS": ("D_MODEL", "FFN", "VOCAB", "N_Q * HEAD_DIM", "N_KV * HEAD_DIM"),
    "KV_BLOCK": ("max(1, WINDOW // (2 * (PLACED_CTAS // N_KV)))",),
    "QKV_TK": ("D_MODEL",), "O_TK": ("N_Q * HEAD_DIM",), "UP_TK": ("D_MODEL",),
    "DOWN_TK": ("FFN",), "VOCAB_TK": ("D_MODEL",),
}
REDUCE_REQUIRES = ("N_Q % N_KV == 0", "PLACED_CTAS % N_KV == 0", "HEAD_DIM % 2 == 0", "LAYERS % 2 == 0",
                   "WINDOW % (KV_BLOCK * (PLACED_CTAS // N_KV)) == 0")
LEVELS = (Topology("cta", CTAS),)

# placement on the whole device: 128 CTAs divide every feature dimension
# (D_MODEL = 3584 = 2^9 * 7, the vocabulary 256000 = 2^11 * 125)
PLACED_CTAS = 128
SPLITS = PLACED_CTAS // N_KV
KV_BLOCK = 64
HALF = HEAD_DIM // 2
Q_DIM = N_Q * HEAD_DIM
KV_DIM = N_KV * HEAD_DIM
QKV_TK = 128
O_TK = 512
UP_TK = 64
DOWN_TK = 512
VOCAB_TK = 16
PLACED_CTX = DimVar("ctx_len", KV_BLOCK * SPLITS, MAX_POS + 1)
# the attended length: the step at a position below kv_len reads its cache's rows
# [0, kv_len) rounded up to the split-K window, no further: a global layer min(kv_len,
# ctx_len), a sliding layer min(kv_len, WINDOW) of its ring. Unbound it is MAX_POS:
# every row of both (docs/models.md "The attended length")
KV_LEN = DimVar("kv_len", 1, MAX_POS + 1, default=MAX_POS)
PLACED_LEVELS = (Topology("cta", PLACED_CTAS),)


def gemma_layer(kv_len):
    """One Gemma-2 layer Module whose KV cache holds `kv_len` positions."""

    @module(entry="decoder_layer", topologies=LEVELS)
    class Gemma2Layer:
        @func
        def norm(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(1, D_MODEL), "bf16"]:
            with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                return tf.rms_norm(x, w, EPS)


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
                # rows 0 .. pos hold this sequence (a ring past the window: all of them)
                valid = tf.arange(Tensor[(kv_len,), "i32"]) <= pos
                capped = tf.where(valid, tf.tanh(logits * (1.0 / ATTN_CAP)) * ATTN_CAP, MASKED)
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

        # a checkpoint stores each norm's offset w (Gemma2RMSNorm scales by 1 + w); the
        # converters are keyed by the layer's own weight names, which a checkpoint uses
        @decoder_layer.converter("pre_attn_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @decoder_layer.converter("post_attn_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @decoder_layer.converter("pre_ffw_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @decoder_layer.converter("post_ffw_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

    return Gemma2Layer


def gemma_layer_placed(kv_len):
    """One Gemma-2 layer placed over the whole device; its KV cache holds `kv_len` positions,
    of which the attention visits the windows of the attended length (KV_LEN)."""
    visited = ceildiv(dim_min(KV_LEN, kv_len), KV_BLOCK * SPLITS) * (KV_BLOCK * SPLITS)

    @module(entry="decoder_layer", topologies=PLACED_LEVELS)
    class Gemma2LayerPlaced:
        @func
        def norm(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(1, D_MODEL), "bf16"]:
            # the prologue of the kernel that reads it: every CTA normalises the whole row
            with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as _all:
                return tf.rms_norm(tf.reshard(x, (1, D_MODEL), "smem"), tf.reshard(w, (D_MODEL,), "smem"), EPS)


        @func
        def qkv(
            h: Tensor[(1, D_MODEL), "bf16"],
            w_q: ConstTensor[(D_MODEL, Q_DIM), "bf16"],
            w_k: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
            w_v: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
        ):
            # one fused GEMV: each CTA owns Q_DIM/PLACED_CTAS query and KV_DIM/PLACED_CTAS key
            # and value columns and walks K in QKV_TK rows staged through smem
            with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
                acc_q = tf.zeros(Tensor[(1, Q_DIM @ g.n), "f32", "rmem"])
                acc_k = tf.zeros(Tensor[(1, KV_DIM @ g.n), "f32", "rmem"])
                acc_v = tf.zeros(Tensor[(1, KV_DIM @ g.n), "f32", "rmem"])
                for kk in tile(D_MODEL, QKV_TK):
                    wq_t = tf.cast(tf.reshard(w_q[kk, :], (QKV_TK, Q_DIM @ g.n), "smem"), "f32")
                    wk_t = tf.cast(tf.reshard(w_k[kk, :], (QKV_TK, KV_DIM @ g.n), "smem"), "f32")
                    wv_t = tf.cast(tf.reshard(w_v[kk, :], (QKV_TK, KV_DIM @ g.n), "smem"), "f32")
                    acc_q = acc_q + tf.reshard(tf.matmul(h32[:, kk], wq_t), (1, Q_DIM @ g.n), "rmem")
                    acc_k = acc_k + tf.reshard(tf.matmul(h32[:, kk], wk_t), (1, KV_DIM @ g.n), "rmem")
                    acc_v = acc_v + tf.reshard(tf.matmul(h32[:, kk], wv_t), (1, KV_DIM @ g.n), "rmem")
                q = tf.reshard(tf.cast(acc_q, "bf16"), (1, Q_DIM @ g.n), "gmem")
                k = tf.reshard(tf.cast(acc_k, "bf16"), (1, KV_DIM @ g.n), "gmem")
                v = tf.reshard(tf.cast(acc_v, "bf16"), (1, KV_DIM @ g.n), "gmem")
                return q, k, v

        @func
        def decode_attention(
            q: Tensor[(1, Q_DIM), "bf16"],
            k_new: Tensor[(1, KV_DIM), "bf16"],
            v_new: Tensor[(1, KV_DIM), "bf16"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            slot: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
            v_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
        ):
            # split-K flash decoding: CTA (kvh, s) owns KV head kvh and, of every window of
            # KV_BLOCK * SPLITS cache rows, the s-th KV_BLOCK rows; it ropes its query group
            # and the new key (one table row each), writes the new row at `slot`, soft-caps
            # and runs its own online softmax; the SPLITS partials are combined by a matmul
            # over the split axis (a Partial on `s` that the reshards complete)
            with Mesh(("cta",), (N_KV, SPLITS), ("kvh", "s")) as a:
                p = tf.reshape(pos, ())
                cos_r = tf.reshard(tf.reshape(cos_t[p : p + 1, :], (1, 1, 1, HEAD_DIM)), (1, 1, 1, HEAD_DIM), "smem")
                sin_r = tf.reshard(tf.reshape(sin_t[p : p + 1, :], (1, 1, 1, HEAD_DIM)), (1, 1, 1, HEAD_DIM), "smem")
                q32 = tf.cast(tf.reshape(tf.reshard(q, (1, Q_DIM @ a.kvh), "smem"), (1, N_KV, GROUP, HEAD_DIM)), "f32")
                q_rot = q32 * cos_r + tf.concat(q32[:, :, :, HALF:HEAD_DIM] * -1.0, q32[:, :, :, 0:HALF], axis=3) * sin_r
                k32 = tf.cast(tf.reshape(tf.reshard(k_new, (1, KV_DIM @ a.kvh), "smem"), (1, 1, N_KV, HEAD_DIM)), "f32")
                k_rot = k32 * cos_r + tf.concat(k32[:, :, :, HALF:HEAD_DIM] * -1.0, k32[:, :, :, 0:HALF], axis=3) * sin_r
                k_row = tf.reshard(tf.cast(k_rot, "bf16"), (1, 1, N_KV, HEAD_DIM), "gmem")
                v_s = tf.reshape(tf.reshard(v_new, (1, KV_DIM @ a.kvh), "smem"), (1, 1, N_KV, HEAD_DIM))
                v_row = tf.reshard(v_s, (1, 1, N_KV, HEAD_DIM), "gmem")
                k_all = tf.cache_update(k_cache, slot, n_new, k_row)
                v_all = tf.cache_update(v_cache, slot, n_new, v_row)
                q_s = tf.reshape(q_rot, (1, 1, N_KV, GROUP, HEAD_DIM))
                run_max = tf.full_like(tf.zeros(Tensor[(1, SPLITS @ a.s, N_KV @ a.kvh, GROUP, 1), "f32", "smem"]), -2.0 * ATTN_CAP)
                run_sum = tf.zeros(Tensor[(1, SPLITS @ a.s, N_KV @ a.kvh, GROUP, 1), "f32", "smem"])
                run_acc = tf.zeros(Tensor[(1, SPLITS @ a.s, N_KV @ a.kvh, GROUP, HEAD_DIM), "f32", "smem"])
                # only the windows of the attended length; the new row's slot is read from
                # the rows visited, so a slot past them is refused, never skipped
                rows = tf.arange(Tensor[(visited,), "i32"])
                newest = tf.maximum(tf.index_select(rows, slot, 0), pos)  # pos itself: a slot is at most pos
                for kk in tile(visited, KV_BLOCK * SPLITS):
                    k_blk = tf.reshard(tf.reshape(k_all[:, kk, :, :], (1, SPLITS, KV_BLOCK, N_KV, HEAD_DIM)),
                                       (1, SPLITS @ a.s, KV_BLOCK, N_KV @ a.kvh, HEAD_DIM), "smem")
                    v_blk = tf.reshard(tf.reshape(v_all[:, kk, :, :], (1, SPLITS, KV_BLOCK, N_KV, HEAD_DIM)),
                                       (1, SPLITS @ a.s, KV_BLOCK, N_KV @ a.kvh, HEAD_DIM), "smem")
                    logits = tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 1, 3, 4, 2))) * SCALE
                    # rows past the valid length (pos + 1) are masked, each split its own rows
                    valid = tf.reshard(tf.reshape(rows[kk] <= newest, (1, SPLITS, 1, 1, KV_BLOCK)),
                                       (1, SPLITS @ a.s, 1, 1, KV_BLOCK), "smem")
                    scores = tf.where(valid, tf.tanh(logits * (1.0 / ATTN_CAP)) * ATTN_CAP, MASKED)
                    new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                    rescale = tf.exp(run_max - new_max)
                    probs = tf.exp(scores - new_max)
                    run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                    run_acc = run_acc * rescale + tf.matmul(probs, tf.transpose(tf.cast(v_blk, "f32"), (0, 1, 3, 2, 4)))
                    run_max = new_max
                peak = tf.reduce(tf.reshard(run_max, (1, SPLITS, N_KV @ a.kvh, GROUP, 1), "smem"), (1,), True, ReduceKind.MAX)
                weight = tf.transpose(tf.exp(run_max - peak), (0, 2, 3, 4, 1))
                num = tf.matmul(weight, tf.transpose(run_acc, (0, 2, 3, 1, 4)))
                den = tf.reshard(tf.matmul(weight, tf.transpose(run_sum, (0, 2, 3, 1, 4))), (1, N_KV @ a.kvh, GROUP, 1, 1), "smem")
                ctx = tf.reshard(num / den, (1, N_KV @ a.kvh, GROUP, 1, HEAD_DIM), "smem")
                merged = tf.reshard(tf.cast(ctx, "bf16"), (1, N_KV @ a.kvh, GROUP, 1, HEAD_DIM), "gmem")
                return tf.reshape(merged, (1, Q_DIM)), k_all, v_all

        @func
        def out_proj(ctx: Tensor[(1, Q_DIM), "bf16"], w_o: ConstTensor[(Q_DIM, D_MODEL), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
            with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                c32 = tf.cast(tf.reshard(ctx, (1, Q_DIM), "smem"), "f32")
                acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                for kk in tile(Q_DIM, O_TK):
                    w_t = tf.cast(tf.reshard(w_o[kk, :], (O_TK, D_MODEL @ g.n), "smem"), "f32")
                    acc = acc + tf.reshard(tf.matmul(c32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
                return tf.reshard(tf.cast(acc, "bf16"), (1, D_MODEL @ g.n), "gmem")

        @func
        def attention(
            h: Tensor[(1, D_MODEL), "bf16"],
            w_q: ConstTensor[(D_MODEL, Q_DIM), "bf16"],
            w_k: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
            w_v: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
            w_o: ConstTensor[(Q_DIM, D_MODEL), "bf16"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            slot: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
            v_cache: Tensor[(1, kv_len, N_KV, HEAD_DIM), "bf16"],
        ):
            q, k, v = qkv(h, w_q, w_k, w_v)
            ctx, k_all, v_all = decode_attention(q, k, v, cos_t, sin_t, pos, slot, n_new, k_cache, v_cache)
            return out_proj(ctx, w_o), k_all, v_all

        @func
        def mlp(
            h: Tensor[(1, D_MODEL), "bf16"],
            w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
            w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
            w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
        ) -> Tensor[(1, D_MODEL), "bf16"]:
            # two GEMV kernels: gate/up split over FFN columns (GeGLU in the epilogue),
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
                act = tf.gelu(tf.cast(acc_g, "bf16"), "tanh") * tf.cast(acc_u, "bf16")
                act_g = tf.reshard(act, (1, FFN @ g.n), "gmem")
            with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                a32 = tf.cast(tf.reshard(act_g, (1, FFN), "smem"), "f32")
                acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
                for kk in tile(FFN, DOWN_TK):
                    w_t = tf.cast(tf.reshard(w_down[kk, :], (DOWN_TK, D_MODEL @ g.n), "smem"), "f32")
                    acc = acc + tf.reshard(tf.matmul(a32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
                return tf.reshard(tf.cast(acc, "bf16"), (1, D_MODEL @ g.n), "gmem")

        @func
        def residual(x: Tensor[(1, D_MODEL), "bf16"], y: Tensor[(1, D_MODEL), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
            with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                total = tf.reshard(x, (1, D_MODEL @ g.n), "smem") + tf.reshard(y, (1, D_MODEL @ g.n), "smem")
                return tf.reshard(total, (1, D_MODEL @ g.n), "gmem")

        @func
        def decoder_layer(
            x: Tensor[(1, D_MODEL), "bf16"],
            pre_attn_norm: ConstTensor[(D_MODEL,), "f32"],
            post_attn_norm: ConstTensor[(D_MODEL,), "f32"],
            pre_ffw_norm: ConstTensor[(D_MODEL,), "f32"],
            post_ffw_norm: ConstTensor[(D_MODEL,), "f32"],
            w_q: ConstTensor[(D_MODEL, Q_DIM), "bf16"],
            w_k: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
            w_v: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
            w_o: ConstTensor[(Q_DIM, D_MODEL), "bf16"],
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
            h = residual(x, norm(attn, post_attn_norm))
            ffw = norm(mlp(norm(h, pre_ffw_norm), w_gate, w_up, w_down), post_ffw_norm)
            return residual(h, ffw), k_all, v_all

        # a checkpoint stores each norm's offset w (Gemma2RMSNorm scales by 1 + w); the
        # converters are keyed by the layer's own weight names, which a checkpoint uses
        @decoder_layer.converter("pre_attn_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @decoder_layer.converter("post_attn_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @decoder_layer.converter("pre_ffw_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

        @decoder_layer.converter("post_ffw_norm")
        def _(w_raw: ConstTensor[(D_MODEL,), "f32"]) -> Tensor[(D_MODEL,), "f32"]:
            return w_raw + 1.0

    return Gemma2LayerPlaced


SlidingLayer = gemma_layer(WINDOW)
GlobalLayer = gemma_layer(CTX_LEN)
SlidingLayerPlaced = gemma_layer_placed(WINDOW)
GlobalLayerPlaced = gemma_layer_placed(PLACED_CTX)


def decode_model(name, target, placed):
    """A root: LAYERS logical (`placed=False`) or placed layers, even ones sliding and
    odd ones global, `embed`, `lm_head` and the entry `decode_step`."""
    sliding, global_, levels, ctx = ((SlidingLayerPlaced, GlobalLayerPlaced, PLACED_LEVELS, PLACED_CTX) if placed
                                     else (SlidingLayer, GlobalLayer, LEVELS, CTX_LEN))

    @module(entry="decode_step", target=target, topologies=levels)
    class Gemma2_9BDecode:
        attach_layers(locals(), lambda index: sliding if index % 2 == 0 else global_, LAYERS)

        if placed:
            @func
            def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
                # the token's row, read at a run-time start, scaled, split over the CTAs
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    t = tf.reshape(token, ())
                    row = tf.reshard(table[t : t + 1, :], (1, D_MODEL @ g.n), "smem")
                    return tf.reshard(row * EMBED_SCALE, (1, D_MODEL @ g.n), "gmem")

            @func
            def lm_head(
                h: Tensor[(1, D_MODEL), "bf16"],
                final_norm: ConstTensor[(D_MODEL,), "f32"],
                w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
            ) -> Tensor[(1, VOCAB), "f32"]:
                # RMSNorm prologue, a GEMV split over the vocabulary, the final soft cap
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    hn = tf.rms_norm(tf.reshard(h, (1, D_MODEL), "smem"), tf.reshard(final_norm, (D_MODEL,), "smem"), EPS)
                    h32 = tf.cast(hn, "f32")
                    acc = tf.zeros(Tensor[(1, VOCAB @ g.n), "f32", "rmem"])
                    for kk in tile(D_MODEL, VOCAB_TK):
                        w_t = tf.cast(tf.reshard(w_vocab[kk, :], (VOCAB_TK, VOCAB @ g.n), "smem"), "f32")
                        acc = acc + tf.reshard(tf.matmul(h32[:, kk], w_t), (1, VOCAB @ g.n), "rmem")
                    logits = tf.cast(tf.cast(acc, "bf16"), "f32")
                    return tf.reshard(tf.tanh(logits * (1.0 / FINAL_CAP)) * FINAL_CAP, (1, VOCAB @ g.n), "gmem")
        else:
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

        @func
        def decode_step(
            token: Tensor[(1,), "i64"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            slot: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_win: Tensor[(LAYERS // 2, 1, WINDOW, N_KV, HEAD_DIM), "bf16"],
            v_win: Tensor[(LAYERS // 2, 1, WINDOW, N_KV, HEAD_DIM), "bf16"],
            k_glob: Tensor[(LAYERS // 2, 1, ctx, N_KV, HEAD_DIM), "bf16"],
            v_glob: Tensor[(LAYERS // 2, 1, ctx, N_KV, HEAD_DIM), "bf16"],
            table: ConstTensor[(VOCAB, D_MODEL), "bf16"],
            final_norm: ConstTensor[(D_MODEL,), "f32"],
            w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
        ) -> Tensor[(1, VOCAB), "f32"]:
            # even layers attend over the WINDOW-slot ring buffers (k_win, v_win), odd
            # ones over the ctx_len caches (k_glob, v_glob); `slot` = pos mod WINDOW
            h = embed(table, token)
            h = layer0(h, cos_t, sin_t, pos, slot, n_new, k_win[0, :, :, :, :], v_win[0, :, :, :, :])[0]
            h = layer1(h, cos_t, sin_t, pos, pos, n_new, k_glob[0, :, :, :, :], v_glob[0, :, :, :, :])[0]
            h = layer2(h, cos_t, sin_t, pos, slot, n_new, k_win[1, :, :, :, :], v_win[1, :, :, :, :])[0]
            h = layer3(h, cos_t, sin_t, pos, pos, n_new, k_glob[1, :, :, :, :], v_glob[1, :, :, :, :])[0]
            h = layer4(h, cos_t, sin_t, pos, slot, n_new, k_win[2, :, :, :, :], v_win[2, :, :, :, :])[0]
            h = layer5(h, cos_t, sin_t, pos, pos, n_new, k_glob[2, :, :, :, :], v_glob[2, :, :, :, :])[0]
            h = layer6(h, cos_t, sin_t, pos, slot, n_new, k_win[3, :, :, :, :], v_win[3, :, :, :, :])[0]
            h = layer7(h, cos_t, sin_t, pos, pos, n_new, k_glob[3, :, :, :, :], v_glob[3, :, :, :, :])[0]
            h = layer8(h, cos_t, sin_t, pos, slot, n_new, k_win[4, :, :, :, :], v_win[4, :, :, :, :])[0]
            h = layer9(h, cos_t, sin_t, pos, pos, n_new, k_glob[4, :, :, :, :], v_glob[4, :, :, :, :])[0]
            h = layer10(h, cos_t, sin_t, pos, slot, n_new, k_win[5, :, :, :, :], v_win[5, :, :, :, :])[0]
            h = layer11(h, cos_t, sin_t, pos, pos, n_new, k_glob[5, :, :, :, :], v_glob[5, :, :, :, :])[0]
            h = layer12(h, cos_t, sin_t, pos, slot, n_new, k_win[6, :, :, :, :], v_win[6, :, :, :, :])[0]
            h = layer13(h, cos_t, sin_t, pos, pos, n_new, k_glob[6, :, :, :, :], v_glob[6, :, :, :, :])[0]
            h = layer14(h, cos_t, sin_t, pos, slot, n_new, k_win[7, :, :, :, :], v_win[7, :, :, :, :])[0]
            h = layer15(h, cos_t, sin_t, pos, pos, n_new, k_glob[7, :, :, :, :], v_glob[7, :, :, :, :])[0]
            h = layer16(h, cos_t, sin_t, pos, slot, n_new, k_win[8, :, :, :, :], v_win[8, :, :, :, :])[0]
            h = layer17(h, cos_t, sin_t, pos, pos, n_new, k_glob[8, :, :, :, :], v_glob[8, :, :, :, :])[0]
            h = layer18(h, cos_t, sin_t, pos, slot, n_new, k_win[9, :, :, :, :], v_win[9, :, :, :, :])[0]
            h = layer19(h, cos_t, sin_t, pos, pos, n_new, k_glob[9, :, :, :, :], v_glob[9, :, :, :, :])[0]
            h = layer20(h, cos_t, sin_t, pos, slot, n_new, k_win[10, :, :, :, :], v_win[10, :, :, :, :])[0]
            h = layer21(h, cos_t, sin_t, pos, pos, n_new, k_glob[10, :, :, :, :], v_glob[10, :, :, :, :])[0]
            h = layer22(h, cos_t, sin_t, pos, slot, n_new, k_win[11, :, :, :, :], v_win[11, :, :, :, :])[0]
            h = layer23(h, cos_t, sin_t, pos, pos, n_new, k_glob[11, :, :, :, :], v_glob[11, :, :, :, :])[0]
            h = layer24(h, cos_t, sin_t, pos, slot, n_new, k_win[12, :, :, :, :], v_win[12, :, :, :, :])[0]
            h = layer25(h, cos_t, sin_t, pos, pos, n_new, k_glob[12, :, :, :, :], v_glob[12, :, :, :, :])[0]
            h = layer26(h, cos_t, sin_t, pos, slot, n_new, k_win[13, :, :, :, :], v_win[13, :, :, :, :])[0]
            h = layer27(h, cos_t, sin_t, pos, pos, n_new, k_glob[13, :, :, :, :], v_glob[13, :, :, :, :])[0]
            h = layer28(h, cos_t, sin_t, pos, slot, n_new, k_win[14, :, :, :, :], v_win[14, :, :, :, :])[0]
            h = layer29(h, cos_t, sin_t, pos, pos, n_new, k_glob[14, :, :, :, :], v_glob[14, :, :, :, :])[0]
            h = layer30(h, cos_t, sin_t, pos, slot, n_new, k_win[15, :, :, :, :], v_win[15, :, :, :, :])[0]
            h = layer31(h, cos_t, sin_t, pos, pos, n_new, k_glob[15, :, :, :, :], v_glob[15, :, :, :, :])[0]
            h = layer32(h, cos_t, sin_t, pos, slot, n_new, k_win[16, :, :, :, :], v_win[16, :, :, :, :])[0]
            h = layer33(h, cos_t, sin_t, pos, pos, n_new, k_glob[16, :, :, :, :], v_glob[16, :, :, :, :])[0]
            h = layer34(h, cos_t, sin_t, pos, slot, n_new, k_win[17, :, :, :, :], v_win[17, :, :, :, :])[0]
            h = layer35(h, cos_t, sin_t, pos, pos, n_new, k_glob[17, :, :, :, :], v_glob[17, :, :, :, :])[0]
            h = layer36(h, cos_t, sin_t, pos, slot, n_new, k_win[18, :, :, :, :], v_win[18, :, :, :, :])[0]
            h = layer37(h, cos_t, sin_t, pos, pos, n_new, k_glob[18, :, :, :, :], v_glob[18, :, :, :, :])[0]
            h = layer38(h, cos_t, sin_t, pos, slot, n_new, k_win[19, :, :, :, :], v_win[19, :, :, :, :])[0]
            h = layer39(h, cos_t, sin_t, pos, pos, n_new, k_glob[19, :, :, :, :], v_glob[19, :, :, :, :])[0]
            h = layer40(h, cos_t, sin_t, pos, slot, n_new, k_win[20, :, :, :, :], v_win[20, :, :, :, :])[0]
            h = layer41(h, cos_t, sin_t, pos, pos, n_new, k_glob[20, :, :, :, :], v_glob[20, :, :, :, :])[0]
            return lm_head(h, final_norm, w_vocab)

    return published_root(Gemma2_9BDecode, name)


# each root is built when first asked for (PEP 562): a selection uses one of the four
__getattr__, __dir__ = lazy_roots(globals(), {
    "Gemma2_9B": lambda: decode_model("Gemma2_9B", CudaTarget("nvidia.h200_sxm"), placed=False),
    "Gemma2_9B_H100": lambda: decode_model("Gemma2_9B_H100", CudaTarget("nvidia.h100_sxm"), placed=True),
    "Gemma2_9B_H200": lambda: decode_model("Gemma2_9B_H200", CudaTarget("nvidia.h200_sxm"), placed=True),
    "Gemma2_9B_B200": lambda: decode_model("Gemma2_9B_B200", CudaTarget("nvidia.b200_sxm"), placed=True),
})
