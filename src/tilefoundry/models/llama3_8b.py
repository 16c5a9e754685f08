"""Llama-3-8B-style decode step (one token, batch 1): RMSNorm, GQA attention with
RoPE over a KV cache of DimVar length `ctx_len` (the new key/value are written
with `cache_update` first), SwiGLU MLP.

`LlamaLayer` is the logical specification: `attention` is the plain form its layer
entry calls (every CTA holds the whole problem: no reshard); `attention_placed`
places one KV head per CTA and walks the cache in a `tile` loop. `Llama3_8B`
holds LAYERS renamed copies of it plus `embed`, `lm_head` and the whole-model
`decode_step`.

`LlamaLayerPlaced` is the same layer placed over the whole device the way
production decode kernels are (docs/models.md): every projection is a GEMV split
over its output features on all CTAS CTAs, its weights staged through shared
memory a K tile at a time; attention is split-K flash decoding (KV heads x
SPLITS sequence splits, one online softmax per split, the partials combined by
a matmul over the split axis whose Partial a reshard completes). The placed
roots `Llama3_8B_H200` and `Llama3_8B_B200` hold LAYERS copies of it and a
placed `decode_step`. Bind: --dim ctx_len=4096 (the placed attention needs a
multiple of KV_BLOCK * SPLITS = 1024), and --dim kv_len=N to price a step at a
position below N: the attentions visit only the cache blocks of the attended
length (unbound: MAX_POS, the whole cache).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.ir.types.dim import dim_min
from tilefoundry.models.zoo_layers import attach_layers, lazy_roots, published_root
from tilefoundry.target import CudaTarget

# config (meta-llama/Meta-Llama-3-8B, plain Python)
VOCAB = 128256
D_MODEL = 4096
N_Q = 32
N_KV = 8
HEAD_DIM = 128
GROUP = N_Q // N_KV
FFN = 14336
LAYERS = 32
EPS = 1e-5
MAX_POS = 8192
BLOCK = 128
SCALE = 1.0 / HEAD_DIM ** 0.5
NEG_BIG = -1.0e30
# a cache row past the valid length (the position) scores MASKED: below NEG_BIG, the
# online softmax's starting maximum, so a block with no valid row adds exp(-1e30) = 0
MASKED = 2.0 * NEG_BIG
INV_D = 1.0 / D_MODEL
ROPE_THETA = 500000.0
CTX_LEN = DimVar("ctx_len", BLOCK, MAX_POS + 1)
# the attended length: the step at a position below kv_len reads the cache rows
# [0, kv_len) rounded up to its kernel's block, no further (min'd with the cache);
# unbound it is MAX_POS, the whole cache (docs/models.md "The attended length")
KV_LEN = DimVar("kv_len", 1, MAX_POS + 1, default=MAX_POS)
VISITED = ceildiv(dim_min(KV_LEN, CTX_LEN), BLOCK) * BLOCK
LEVELS = (Topology("cta", N_KV),)

# the Hugging Face checkpoint (LlamaForCausalLM; models/checkpoints.py reads these):
# config.json field -> the constant it must equal
HF_MODEL_TYPE = "llama"
HF_CONFIG = {"vocab_size": "VOCAB", "hidden_size": "D_MODEL", "num_attention_heads": "N_Q",
             "num_key_value_heads": "N_KV", "head_dim": "HEAD_DIM", "intermediate_size": "FFN",
             "num_hidden_layers": "LAYERS", "rms_norm_eps": "EPS", "max_position_embeddings": "MAX_POS",
             "rope_theta": "ROPE_THETA"}
# weight -> (checkpoint name, reading): "T" transposes a Linear's (out, in) weight to our
# (in, out); `{i}` is the layer's index; cos_t / sin_t are built from rope_theta
HF_LAYER_WEIGHTS = {
    "attn_norm": ("model.layers.{i}.input_layernorm.weight", ""),
    "mlp_norm": ("model.layers.{i}.post_attention_layernorm.weight", ""),
    "w_q": ("model.layers.{i}.self_attn.q_proj.weight", "T"),
    "w_k": ("model.layers.{i}.self_attn.k_proj.weight", "T"),
    "w_v": ("model.layers.{i}.self_attn.v_proj.weight", "T"),
    "w_o": ("model.layers.{i}.self_attn.o_proj.weight", "T"),
    "w_gate": ("model.layers.{i}.mlp.gate_proj.weight", "T"),
    "w_up": ("model.layers.{i}.mlp.up_proj.weight", "T"),
    "w_down": ("model.layers.{i}.mlp.down_proj.weight", "T"),
}
# a reduced config (tilefoundry.models.reduced) keeps each placement constant the
# largest power of two, at most its published value, dividing every figure listed
REDUCE_RULES = {
    "BLOCK": ("MAX_POS // 4",),
    "CTAS": ("D_MODEL", "FFN", "VOCAB", "N_Q * HEAD_DIM", "N_KV * HEAD_DIM"),
    "KV_BLOCK": ("max(1, MAX_POS // (4 * (CTAS // N_KV)))",),
    "QKV_TK": ("D_MODEL",), "O_TK": ("N_Q * HEAD_DIM",), "UP_TK": ("D_MODEL",),
    "DOWN_TK": ("FFN",), "VOCAB_TK": ("D_MODEL",),
}
REDUCE_REQUIRES = ("N_Q % N_KV == 0", "CTAS % N_KV == 0", "HEAD_DIM % 2 == 0")
HF_ROOT_WEIGHTS = {
    "table": ("model.embed_tokens.weight", ""),
    "final_norm": ("model.norm.weight", ""),
    "w_vocab": ("lm_head.weight", "T"),
}

# placement on the whole device (both targets: every dimension here is a power of
# two times 7 at most, so 128 CTAs is the largest grid that divides them all)
CTAS = 128
SPLITS = CTAS // N_KV
KV_BLOCK = 64
HALF = HEAD_DIM // 2
QKV_TK = 256
O_TK = 512
UP_TK = 64
DOWN_TK = 512
VOCAB_TK = 16
PLACED_CTX = DimVar("ctx_len", KV_BLOCK * SPLITS, MAX_POS + 1)
# the windows of KV_BLOCK * SPLITS rows the split-K attention visits
PLACED_VISITED = ceildiv(dim_min(KV_LEN, PLACED_CTX), KV_BLOCK * SPLITS) * (KV_BLOCK * SPLITS)
PLACED_LEVELS = (Topology("cta", CTAS),)


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
            # the valid length is pos + 1: rows past it are not (yet) this sequence's
            valid = tf.arange(Tensor[(CTX_LEN,), "i32"]) <= pos
            scores = tf.where(valid, tf.matmul(q_g, k_t) * SCALE, MASKED)
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
            # the blocks of the attended length only; the step's own position is read
            # from the rows visited, so a pos past them is refused, never skipped
            rows = tf.arange(Tensor[(VISITED,), "i32"])
            last = tf.index_select(rows, pos, 0)
            for blk in tile(VISITED, BLOCK):
                k_blk = tf.reshard(k_all[:, blk, :, :], (1, BLOCK, N_KV @ heads.kvh, HEAD_DIM), "smem")
                v_blk = tf.reshard(v_all[:, blk, :, :], (1, BLOCK, N_KV @ heads.kvh, HEAD_DIM), "smem")
                scores = tf.where(rows[blk] <= last, tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 2, 3, 1))), MASKED)
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
        attn, k_all, v_all = attention(rms(x, attn_norm), w_q, w_k, w_v, w_o, cos_t, sin_t,
                                       pos, n_new, k_cache, v_cache)
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            h = x + attn
        out = mlp(rms(h, mlp_norm), w_gate, w_up, w_down)
        with Mesh(("cta",), (N_KV,), ("kvh",)) as _all:
            return h + out, k_all, v_all


Q_DIM = N_Q * HEAD_DIM
KV_DIM = N_KV * HEAD_DIM


@module(entry="decoder_layer", topologies=PLACED_LEVELS)
class LlamaLayerPlaced:
    @func
    def rms(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        # the prologue of the GEMV that reads it: every CTA normalises the whole row
        with Mesh(("cta",), (CTAS,), ("n",)) as _all:
            x32 = tf.cast(tf.reshard(x, (1, D_MODEL), "smem"), "f32")
            ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
            return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * tf.reshard(w, (D_MODEL,), "smem")

    @func
    def qkv(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_q: ConstTensor[(D_MODEL, Q_DIM), "bf16"],
        w_k: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
        w_v: ConstTensor[(D_MODEL, KV_DIM), "bf16"],
    ):
        # one fused GEMV: each CTA owns Q_DIM/CTAS query and KV_DIM/CTAS key and value
        # columns and walks K in QKV_TK rows staged through smem, accumulating in f32
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
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
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, PLACED_CTX, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, PLACED_CTX, N_KV, HEAD_DIM), "bf16"],
    ):
        # split-K flash decoding: CTA (kvh, s) owns KV head kvh and, of every window of
        # KV_BLOCK * SPLITS cache rows, the s-th KV_BLOCK rows; it ropes its query group
        # and the new key (one table row each), writes the new row, runs its own
        # online softmax, and the SPLITS partials are combined by a matmul over the
        # split axis (a Partial on `s` that the reshards complete)
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
            k_all = tf.cache_update(k_cache, pos, n_new, k_row)
            v_all = tf.cache_update(v_cache, pos, n_new, v_row)
            q_s = tf.reshape(q_rot * SCALE, (1, 1, N_KV, GROUP, HEAD_DIM))
            run_max = tf.full_like(tf.zeros(Tensor[(1, SPLITS @ a.s, N_KV @ a.kvh, GROUP, 1), "f32", "smem"]), NEG_BIG)
            run_sum = tf.zeros(Tensor[(1, SPLITS @ a.s, N_KV @ a.kvh, GROUP, 1), "f32", "smem"])
            run_acc = tf.zeros(Tensor[(1, SPLITS @ a.s, N_KV @ a.kvh, GROUP, HEAD_DIM), "f32", "smem"])
            # only the windows of the attended length (docs/models.md); the step's own
            # position is read from the rows visited, so a pos past them is refused
            rows = tf.arange(Tensor[(PLACED_VISITED,), "i32"])
            last = tf.index_select(rows, pos, 0)
            for kk in tile(PLACED_VISITED, KV_BLOCK * SPLITS):
                k_blk = tf.reshard(tf.reshape(k_all[:, kk, :, :], (1, SPLITS, KV_BLOCK, N_KV, HEAD_DIM)),
                                   (1, SPLITS @ a.s, KV_BLOCK, N_KV @ a.kvh, HEAD_DIM), "smem")
                v_blk = tf.reshard(tf.reshape(v_all[:, kk, :, :], (1, SPLITS, KV_BLOCK, N_KV, HEAD_DIM)),
                                   (1, SPLITS @ a.s, KV_BLOCK, N_KV @ a.kvh, HEAD_DIM), "smem")
                # rows past the valid length (pos + 1) are masked, each split its own rows
                valid = tf.reshard(tf.reshape(rows[kk] <= last, (1, SPLITS, 1, 1, KV_BLOCK)),
                                   (1, SPLITS @ a.s, 1, 1, KV_BLOCK), "smem")
                scores = tf.where(valid, tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 1, 3, 4, 2))), MASKED)
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
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
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
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, PLACED_CTX, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, PLACED_CTX, N_KV, HEAD_DIM), "bf16"],
    ):
        q, k, v = qkv(h, w_q, w_k, w_v)
        ctx, k_all, v_all = decode_attention(q, k, v, cos_t, sin_t, pos, n_new, k_cache, v_cache)
        return out_proj(ctx, w_o), k_all, v_all

    @func
    def mlp(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_gate: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_up: ConstTensor[(D_MODEL, FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        # two GEMV kernels: gate/up split over FFN columns (SwiGLU in the epilogue),
        # then down split over D_MODEL columns, each reading its input row whole
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
            h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
            acc_g = tf.zeros(Tensor[(1, FFN @ g.n), "f32", "rmem"])
            acc_u = tf.zeros(Tensor[(1, FFN @ g.n), "f32", "rmem"])
            for kk in tile(D_MODEL, UP_TK):
                wg_t = tf.cast(tf.reshard(w_gate[kk, :], (UP_TK, FFN @ g.n), "smem"), "f32")
                wu_t = tf.cast(tf.reshard(w_up[kk, :], (UP_TK, FFN @ g.n), "smem"), "f32")
                acc_g = acc_g + tf.reshard(tf.matmul(h32[:, kk], wg_t), (1, FFN @ g.n), "rmem")
                acc_u = acc_u + tf.reshard(tf.matmul(h32[:, kk], wu_t), (1, FFN @ g.n), "rmem")
            act = tf.silu(tf.cast(acc_g, "bf16")) * tf.cast(acc_u, "bf16")
            act_g = tf.reshard(act, (1, FFN @ g.n), "gmem")
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
            a32 = tf.cast(tf.reshard(act_g, (1, FFN), "smem"), "f32")
            acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
            for kk in tile(FFN, DOWN_TK):
                w_t = tf.cast(tf.reshard(w_down[kk, :], (DOWN_TK, D_MODEL @ g.n), "smem"), "f32")
                acc = acc + tf.reshard(tf.matmul(a32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
            return tf.reshard(tf.cast(acc, "bf16"), (1, D_MODEL @ g.n), "gmem")

    @func
    def residual(x: Tensor[(1, D_MODEL), "bf16"], y: Tensor[(1, D_MODEL), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
            total = tf.reshard(x, (1, D_MODEL @ g.n), "smem") + tf.reshard(y, (1, D_MODEL @ g.n), "smem")
            return tf.reshard(total, (1, D_MODEL @ g.n), "gmem")

    @func
    def decoder_layer(
        x: Tensor[(1, D_MODEL), "bf16"],
        attn_norm: ConstTensor[(D_MODEL,), "bf16"],
        mlp_norm: ConstTensor[(D_MODEL,), "bf16"],
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
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, PLACED_CTX, N_KV, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, PLACED_CTX, N_KV, HEAD_DIM), "bf16"],
    ):
        attn, k_all, v_all = attention(rms(x, attn_norm), w_q, w_k, w_v, w_o, cos_t, sin_t,
                                       pos, n_new, k_cache, v_cache)
        h = residual(x, attn)
        return residual(h, mlp(rms(h, mlp_norm), w_gate, w_up, w_down)), k_all, v_all


def decode_model(name, target, placed):
    """A root: LAYERS renamed copies of the logical (`placed=False`) or placed layer,
    `embed`, `lm_head` and the entry `decode_step` (embedding, every layer, head)."""
    layer, levels, ctx = (LlamaLayerPlaced, PLACED_LEVELS, PLACED_CTX) if placed else (LlamaLayer, LEVELS, CTX_LEN)

    @module(entry="decode_step", target=target, topologies=levels)
    class Llama3_8BDecode:
        attach_layers(locals(), layer, LAYERS)

        if placed:
            @func
            def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
                # the token's row, read at a run-time start and split over the CTAs
                with Mesh(("cta",), (CTAS,), ("n",)) as g:
                    t = tf.reshape(token, ())
                    row = tf.reshard(table[t : t + 1, :], (1, D_MODEL @ g.n), "smem")
                    return tf.reshard(row, (1, D_MODEL @ g.n), "gmem")

            @func
            def lm_head(
                h: Tensor[(1, D_MODEL), "bf16"],
                final_norm: ConstTensor[(D_MODEL,), "bf16"],
                w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
            ) -> Tensor[(1, VOCAB), "f32"]:
                # RMSNorm prologue, then a GEMV split over the vocabulary
                with Mesh(("cta",), (CTAS,), ("n",)) as g:
                    h32 = tf.cast(tf.rms_norm(tf.reshard(h, (1, D_MODEL), "smem"), tf.reshard(final_norm, (D_MODEL,), "smem"), EPS), "f32")
                    acc = tf.zeros(Tensor[(1, VOCAB @ g.n), "f32", "rmem"])
                    for kk in tile(D_MODEL, VOCAB_TK):
                        w_t = tf.cast(tf.reshard(w_vocab[kk, :], (VOCAB_TK, VOCAB @ g.n), "smem"), "f32")
                        acc = acc + tf.reshard(tf.matmul(h32[:, kk], w_t), (1, VOCAB @ g.n), "rmem")
                    return tf.reshard(tf.cast(tf.cast(acc, "bf16"), "f32"), (1, VOCAB @ g.n), "gmem")
        else:
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

        @func
        def decode_step(
            token: Tensor[(1,), "i64"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_caches: Tensor[(LAYERS, 1, ctx, N_KV, HEAD_DIM), "bf16"],
            v_caches: Tensor[(LAYERS, 1, ctx, N_KV, HEAD_DIM), "bf16"],
            table: ConstTensor[(VOCAB, D_MODEL), "bf16"],
            final_norm: ConstTensor[(D_MODEL,), "bf16"],
            w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
        ) -> Tensor[(1, VOCAB), "f32"]:
            h = embed(table, token)
            h = layer0(h, cos_t, sin_t, pos, n_new, k_caches[0, :, :, :, :], v_caches[0, :, :, :, :])[0]
            h = layer1(h, cos_t, sin_t, pos, n_new, k_caches[1, :, :, :, :], v_caches[1, :, :, :, :])[0]
            h = layer2(h, cos_t, sin_t, pos, n_new, k_caches[2, :, :, :, :], v_caches[2, :, :, :, :])[0]
            h = layer3(h, cos_t, sin_t, pos, n_new, k_caches[3, :, :, :, :], v_caches[3, :, :, :, :])[0]
            h = layer4(h, cos_t, sin_t, pos, n_new, k_caches[4, :, :, :, :], v_caches[4, :, :, :, :])[0]
            h = layer5(h, cos_t, sin_t, pos, n_new, k_caches[5, :, :, :, :], v_caches[5, :, :, :, :])[0]
            h = layer6(h, cos_t, sin_t, pos, n_new, k_caches[6, :, :, :, :], v_caches[6, :, :, :, :])[0]
            h = layer7(h, cos_t, sin_t, pos, n_new, k_caches[7, :, :, :, :], v_caches[7, :, :, :, :])[0]
            h = layer8(h, cos_t, sin_t, pos, n_new, k_caches[8, :, :, :, :], v_caches[8, :, :, :, :])[0]
            h = layer9(h, cos_t, sin_t, pos, n_new, k_caches[9, :, :, :, :], v_caches[9, :, :, :, :])[0]
            h = layer10(h, cos_t, sin_t, pos, n_new, k_caches[10, :, :, :, :], v_caches[10, :, :, :, :])[0]
            h = layer11(h, cos_t, sin_t, pos, n_new, k_caches[11, :, :, :, :], v_caches[11, :, :, :, :])[0]
            h = layer12(h, cos_t, sin_t, pos, n_new, k_caches[12, :, :, :, :], v_caches[12, :, :, :, :])[0]
            h = layer13(h, cos_t, sin_t, pos, n_new, k_caches[13, :, :, :, :], v_caches[13, :, :, :, :])[0]
            h = layer14(h, cos_t, sin_t, pos, n_new, k_caches[14, :, :, :, :], v_caches[14, :, :, :, :])[0]
            h = layer15(h, cos_t, sin_t, pos, n_new, k_caches[15, :, :, :, :], v_caches[15, :, :, :, :])[0]
            h = layer16(h, cos_t, sin_t, pos, n_new, k_caches[16, :, :, :, :], v_caches[16, :, :, :, :])[0]
            h = layer17(h, cos_t, sin_t, pos, n_new, k_caches[17, :, :, :, :], v_caches[17, :, :, :, :])[0]
            h = layer18(h, cos_t, sin_t, pos, n_new, k_caches[18, :, :, :, :], v_caches[18, :, :, :, :])[0]
            h = layer19(h, cos_t, sin_t, pos, n_new, k_caches[19, :, :, :, :], v_caches[19, :, :, :, :])[0]
            h = layer20(h, cos_t, sin_t, pos, n_new, k_caches[20, :, :, :, :], v_caches[20, :, :, :, :])[0]
            h = layer21(h, cos_t, sin_t, pos, n_new, k_caches[21, :, :, :, :], v_caches[21, :, :, :, :])[0]
            h = layer22(h, cos_t, sin_t, pos, n_new, k_caches[22, :, :, :, :], v_caches[22, :, :, :, :])[0]
            h = layer23(h, cos_t, sin_t, pos, n_new, k_caches[23, :, :, :, :], v_caches[23, :, :, :, :])[0]
            h = layer24(h, cos_t, sin_t, pos, n_new, k_caches[24, :, :, :, :], v_caches[24, :, :, :, :])[0]
            h = layer25(h, cos_t, sin_t, pos, n_new, k_caches[25, :, :, :, :], v_caches[25, :, :, :, :])[0]
            h = layer26(h, cos_t, sin_t, pos, n_new, k_caches[26, :, :, :, :], v_caches[26, :, :, :, :])[0]
            h = layer27(h, cos_t, sin_t, pos, n_new, k_caches[27, :, :, :, :], v_caches[27, :, :, :, :])[0]
            h = layer28(h, cos_t, sin_t, pos, n_new, k_caches[28, :, :, :, :], v_caches[28, :, :, :, :])[0]
            h = layer29(h, cos_t, sin_t, pos, n_new, k_caches[29, :, :, :, :], v_caches[29, :, :, :, :])[0]
            h = layer30(h, cos_t, sin_t, pos, n_new, k_caches[30, :, :, :, :], v_caches[30, :, :, :, :])[0]
            h = layer31(h, cos_t, sin_t, pos, n_new, k_caches[31, :, :, :, :], v_caches[31, :, :, :, :])[0]
            return lm_head(h, final_norm, w_vocab)

    return published_root(Llama3_8BDecode, name)


# each root is built when first asked for (PEP 562): a selection uses one of the four
__getattr__, __dir__ = lazy_roots(globals(), {
    "Llama3_8B": lambda: decode_model("Llama3_8B", CudaTarget("nvidia.h200_sxm"), placed=False),
    "Llama3_8B_H100": lambda: decode_model("Llama3_8B_H100", CudaTarget("nvidia.h100_sxm"), placed=True),
    "Llama3_8B_H200": lambda: decode_model("Llama3_8B_H200", CudaTarget("nvidia.h200_sxm"), placed=True),
    "Llama3_8B_B200": lambda: decode_model("Llama3_8B_B200", CudaTarget("nvidia.b200_sxm"), placed=True),
})
