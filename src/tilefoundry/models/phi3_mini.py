"""Phi-3-mini-style decode layer (microsoft/Phi-3-mini-4k-instruct shapes, one token,
batch 1): RMSNorm, a fused QKV projection cut with `tf.split`, RoPE, multi-head
attention (32 heads, no grouping) over a KV cache of DimVar length `ctx_len`, and a
fused gate/up projection split in two for the SwiGLU MLP. `attention` is the plain
form; `attention_placed` places one head per CTA (32-CTA mesh axis `head`) and walks
the cache with an online-softmax `tile` loop; the layer entry uses the plain one.
`Phi3Mini` holds LAYERS copies of this logical layer plus `embed`, `lm_head` and the
whole-model `decode_step`.

`Phi3LayerPlaced` is the layer placed over the whole device (docs/models.md): the
fused QKV and gate/up weights are read as column windows of one tensor, every
projection is a GEMV split over its output features on CTAS CTAs with its weights
staged through shared memory a K tile at a time, and attention is split-K flash
decoding over N_HEADS heads x SPLITS sequence splits. The placed roots
`Phi3Mini_H200` and `Phi3Mini_B200` hold LAYERS copies of it.
Bind: --dim ctx_len=4096 (the placed attention needs a multiple of KV_BLOCK * SPLITS),
and --dim kv_len=N to price a step at a position below N. Both attention loops visit
only the blocks the window touches (at most WINDOW_BLOCKS, from a first block computed
from `pos` at run time) of the attended length (unbound: MAX_POS, the whole cache).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.ir.types.dim import dim_min
from tilefoundry.models.zoo_layers import attach_layers, lazy_roots, published_root
from tilefoundry.target import CudaTarget

# config (microsoft/Phi-3-mini-4k-instruct)
VOCAB = 32064
D_MODEL = 3072
N_HEADS = 32
HEAD_DIM = D_MODEL // N_HEADS
FFN = 8192
LAYERS = 32
EPS = 1e-5
MAX_POS = 4096
BLOCK = 64
SCALE = 1.0 / HEAD_DIM ** 0.5
NEG_BIG = -1.0e30
# the published model attends to its last WINDOW positions (sliding_window 2047:
# row j is seen from position pos when pos - WINDOW < j <= pos); a row outside scores
# MASKED, below NEG_BIG (the online softmax's start), so it adds exp(-1e30) = 0
WINDOW = 2047
MASKED = 2.0 * NEG_BIG
ROPE_THETA = 10000.0
CTX_LEN = DimVar("ctx_len", BLOCK, MAX_POS + 1)
# the attended length: the step at a position below kv_len reads at most the cache
# rows [0, kv_len) (min'd with the cache) rounded up to its kernel's block, and of
# those only the blocks its window touches (unbound: MAX_POS, every row of the cache)
KV_LEN = DimVar("kv_len", 1, MAX_POS + 1, default=MAX_POS)
ATTENDED = ceildiv(dim_min(KV_LEN, CTX_LEN), BLOCK) * BLOCK
# the most BLOCK-row blocks the window (pos - WINDOW, pos] touches, wherever it sits
WINDOW_BLOCKS = -(-(WINDOW - 1) // BLOCK) + 1
VISITED_BLOCKS = dim_min(ATTENDED // BLOCK, WINDOW_BLOCKS)
LEVELS = (Topology("cta", N_HEADS),)

# the Hugging Face checkpoint (Phi3ForCausalLM; models/checkpoints.py reads these): the
# fused qkv_proj (q, k, v rows) and gate_up_proj (gate, up rows) are ours transposed
HF_MODEL_TYPE = "phi3"
HF_CONFIG = {"vocab_size": "VOCAB", "hidden_size": "D_MODEL", "num_attention_heads": "N_HEADS",
             "num_key_value_heads": "N_HEADS", "intermediate_size": "FFN", "num_hidden_layers": "LAYERS",
             "rms_norm_eps": "EPS", "max_position_embeddings": "MAX_POS", "sliding_window": "WINDOW",
             "rope_theta": "ROPE_THETA"}
HF_LAYER_WEIGHTS = {
    "attn_norm": ("model.layers.{i}.input_layernorm.weight", ""),
    "mlp_norm": ("model.layers.{i}.post_attention_layernorm.weight", ""),
    "w_qkv": ("model.layers.{i}.self_attn.qkv_proj.weight", "T"),
    "w_o": ("model.layers.{i}.self_attn.o_proj.weight", "T"),
    "w_gate_up": ("model.layers.{i}.mlp.gate_up_proj.weight", "T"),
    "w_down": ("model.layers.{i}.mlp.down_proj.weight", "T"),
}
HF_ROOT_WEIGHTS = {
    "table": ("model.embed_tokens.weight", ""),
    "final_norm": ("model.norm.weight", ""),
    "w_vocab": ("lm_head.weight", "T"),
}
REDUCE_RULES = {
    "BLOCK": ("MAX_POS // 4",),
    "CTAS": ("D_MODEL", "FFN", "N_HEADS * (D_MODEL // N_HEADS)"),
    "KV_BLOCK": ("max(1, MAX_POS // (4 * (CTAS // N_HEADS)))",),
    "QKV_TK": ("D_MODEL",), "O_TK": ("D_MODEL",), "UP_TK": ("D_MODEL",), "DOWN_TK": ("FFN",),
    "VOCAB_CTAS": ("VOCAB", "CTAS"), "VOCAB_TK": ("D_MODEL",),
}
REDUCE_REQUIRES = ("CTAS % N_HEADS == 0", "D_MODEL % N_HEADS == 0", "(D_MODEL // N_HEADS) % 2 == 0")

# placement on the whole device: 128 CTAs divide every feature dimension; the
# vocabulary (32064 = 2^6 * 501) splits over VOCAB_CTAS = 96 of them
CTAS = 128
SPLITS = CTAS // N_HEADS
KV_BLOCK = 64
HALF = HEAD_DIM // 2
QKV_TK = 128
O_TK = 512
UP_TK = 128
DOWN_TK = 512
VOCAB_CTAS = 96
VOCAB_TK = 32
PLACED_CTX = DimVar("ctx_len", KV_BLOCK * SPLITS, MAX_POS + 1)
# the same for the split-K attention, in windows of KV_BLOCK * SPLITS rows
PLACED_STEP = KV_BLOCK * SPLITS
PLACED_ATTENDED = ceildiv(dim_min(KV_LEN, PLACED_CTX), PLACED_STEP) * PLACED_STEP
PLACED_WINDOW_STEPS = -(-(WINDOW - 1) // PLACED_STEP) + 1
PLACED_VISITED = dim_min(PLACED_ATTENDED // PLACED_STEP, PLACED_WINDOW_STEPS)
PLACED_LEVELS = (Topology("cta", CTAS),)


@module(entry="decoder_layer", topologies=LEVELS)
class Phi3Layer:
    @func
    def norm(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            return tf.rms_norm(x, w, EPS)

    @func
    def qkv_rope(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
    ):
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            q, k, v = tf.split(h @ w_qkv, -1, 3)
            q4 = tf.cast(tf.reshape(q, (1, 1, N_HEADS, HEAD_DIM)), "f32")
            k4 = tf.cast(tf.reshape(k, (1, 1, N_HEADS, HEAD_DIM)), "f32")
            q_rot, k_rot = tf.rope(q4, k4, cos_t, sin_t, pos)
            return q_rot, tf.cast(k_rot, "bf16"), tf.reshape(v, (1, 1, N_HEADS, HEAD_DIM))

    @func
    def attention(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"],
        w_o: ConstTensor[(D_MODEL, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_HEADS, HEAD_DIM), "bf16"],
    ):
        q_rot, k_new, v_new = qkv_rope(h, w_qkv, cos_t, sin_t, pos)
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            k_all = tf.cache_update(k_cache, pos, n_new, k_new)
            v_all = tf.cache_update(v_cache, pos, n_new, v_new)
            q_h = tf.transpose(q_rot, (0, 2, 1, 3))
            k_t = tf.transpose(tf.cast(k_all, "f32"), (0, 2, 3, 1))
            v_t = tf.transpose(tf.cast(v_all, "f32"), (0, 2, 1, 3))
            rows = tf.arange(Tensor[(CTX_LEN,), "i32"])
            valid = tf.logical_and(rows <= pos, rows > pos - tf.full_like(pos, WINDOW))
            probs = tf.softmax(tf.where(valid, tf.matmul(q_h, k_t) * SCALE, MASKED), -1)
            ctx = tf.matmul(probs, v_t)
            merged = tf.cast(tf.reshape(ctx, (1, D_MODEL)), "bf16")
            return merged @ w_o, k_all, v_all

    @func
    def attention_placed(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"],
        w_o: ConstTensor[(D_MODEL, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_HEADS, HEAD_DIM), "bf16"],
    ):
        q_rot, k_new, v_new = qkv_rope(h, w_qkv, cos_t, sin_t, pos)
        with Mesh(("cta",), (N_HEADS,), ("head",)) as heads:
            k_all = tf.cache_update(k_cache, pos, n_new, k_new)
            v_all = tf.cache_update(v_cache, pos, n_new, v_new)
            q_h = tf.transpose(q_rot, (0, 2, 1, 3))
            q_s = tf.reshard(q_h, (1, N_HEADS @ heads.head, 1, HEAD_DIM), "smem") * SCALE
            run_max = tf.full_like(tf.reduce(q_s, (-1,), True, ReduceKind.MAX), NEG_BIG)
            run_sum = tf.full_like(run_max, 0.0)
            run_acc = tf.full_like(q_s, 0.0)
            # the blocks of the window only, from the first one it touches (a run-time start:
            # docs/models.md); the position is read from the attended rows, so a pos past
            # them is refused, never skipped
            rows = tf.arange(Tensor[(ATTENDED,), "i32"])
            p = tf.reshape(pos, ())
            last = rows[p : p + 1]  # a slice, not index_select: that is priced at its table
            step = tf.full_like(pos, BLOCK)
            first = tf.reshape(tf.maximum(pos // step - tf.full_like(pos, WINDOW_BLOCKS - 1), tf.full_like(pos, 0)) * step, ())
            offsets = tf.arange(Tensor[(VISITED_BLOCKS,), "i32"]) * tf.reshape(step, ())
            for i in range(VISITED_BLOCKS):
                at = first + tf.reshape(offsets[i : i + 1], ())
                k_blk = tf.reshard(k_all[:, at : at + BLOCK, :, :], (1, BLOCK, N_HEADS @ heads.head, HEAD_DIM), "smem")
                v_blk = tf.reshard(v_all[:, at : at + BLOCK, :, :], (1, BLOCK, N_HEADS @ heads.head, HEAD_DIM), "smem")
                seen = tf.logical_and(rows[at : at + BLOCK] <= last, rows[at : at + BLOCK] > pos - tf.full_like(pos, WINDOW))
                scores = tf.where(seen, tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 2, 3, 1))), MASKED)
                new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                rescale = tf.exp(run_max - new_max)
                probs = tf.exp(scores - new_max)
                run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                run_acc = run_acc * rescale + tf.matmul(probs, tf.transpose(tf.cast(v_blk, "f32"), (0, 2, 1, 3)))
                run_max = new_max
            ctx = tf.reshard(run_acc / run_sum, (1, N_HEADS, 1, HEAD_DIM), "gmem")
            merged = tf.cast(tf.reshape(ctx, (1, D_MODEL)), "bf16")
            return merged @ w_o, k_all, v_all

    @func
    def mlp(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_gate_up: ConstTensor[(D_MODEL, 2 * FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            gate, up = tf.split(h @ w_gate_up, -1, 2)
            return (tf.silu(gate) * up) @ w_down

    @func
    def decoder_layer(
        x: Tensor[(1, D_MODEL), "bf16"],
        attn_norm: ConstTensor[(D_MODEL,), "bf16"],
        mlp_norm: ConstTensor[(D_MODEL,), "bf16"],
        w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"],
        w_o: ConstTensor[(D_MODEL, D_MODEL), "bf16"],
        w_gate_up: ConstTensor[(D_MODEL, 2 * FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, CTX_LEN, N_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, CTX_LEN, N_HEADS, HEAD_DIM), "bf16"],
    ):
        attn, k_all, v_all = attention(norm(x, attn_norm), w_qkv, w_o, cos_t, sin_t, pos, n_new,
                                       k_cache, v_cache)
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            h = x + attn
        out = mlp(norm(h, mlp_norm), w_gate_up, w_down)
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            return h + out, k_all, v_all


@module(entry="decoder_layer", topologies=PLACED_LEVELS)
class Phi3LayerPlaced:
    @func
    def norm(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        # the prologue of the GEMV that reads it: every CTA normalises the whole row
        with Mesh(("cta",), (CTAS,), ("n",)) as _all:
            return tf.rms_norm(tf.reshard(x, (1, D_MODEL), "smem"), tf.reshard(w, (D_MODEL,), "smem"), EPS)

    @func
    def qkv(h: Tensor[(1, D_MODEL), "bf16"], w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"]):
        # the fused weight read as three column windows, one GEMV: each CTA owns
        # D_MODEL/CTAS columns of q, k and v and walks K in QKV_TK rows through smem
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
            h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
            acc_q = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
            acc_k = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
            acc_v = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
            for kk in tile(D_MODEL, QKV_TK):
                wq_t = tf.cast(tf.reshard(w_qkv[kk, 0:D_MODEL], (QKV_TK, D_MODEL @ g.n), "smem"), "f32")
                wk_t = tf.cast(tf.reshard(w_qkv[kk, D_MODEL:2 * D_MODEL], (QKV_TK, D_MODEL @ g.n), "smem"), "f32")
                wv_t = tf.cast(tf.reshard(w_qkv[kk, 2 * D_MODEL:3 * D_MODEL], (QKV_TK, D_MODEL @ g.n), "smem"), "f32")
                acc_q = acc_q + tf.reshard(tf.matmul(h32[:, kk], wq_t), (1, D_MODEL @ g.n), "rmem")
                acc_k = acc_k + tf.reshard(tf.matmul(h32[:, kk], wk_t), (1, D_MODEL @ g.n), "rmem")
                acc_v = acc_v + tf.reshard(tf.matmul(h32[:, kk], wv_t), (1, D_MODEL @ g.n), "rmem")
            q = tf.reshard(tf.cast(acc_q, "bf16"), (1, D_MODEL @ g.n), "gmem")
            k = tf.reshard(tf.cast(acc_k, "bf16"), (1, D_MODEL @ g.n), "gmem")
            v = tf.reshard(tf.cast(acc_v, "bf16"), (1, D_MODEL @ g.n), "gmem")
            return q, k, v

    @func
    def decode_attention(
        q: Tensor[(1, D_MODEL), "bf16"],
        k_new: Tensor[(1, D_MODEL), "bf16"],
        v_new: Tensor[(1, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, PLACED_CTX, N_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, PLACED_CTX, N_HEADS, HEAD_DIM), "bf16"],
    ):
        # split-K flash decoding: CTA (head, s) owns one head and, of every window of
        # KV_BLOCK * SPLITS cache rows, the s-th KV_BLOCK rows; it ropes its query and
        # the new key (one table row each), writes the new row, runs its own online
        # softmax, and the SPLITS partials are combined by a matmul over the split
        # axis (a Partial on `s` that the reshards complete)
        with Mesh(("cta",), (N_HEADS, SPLITS), ("head", "s")) as a:
            p = tf.reshape(pos, ())
            cos_r = tf.reshard(tf.reshape(cos_t[p : p + 1, :], (1, 1, HEAD_DIM)), (1, 1, HEAD_DIM), "smem")
            sin_r = tf.reshard(tf.reshape(sin_t[p : p + 1, :], (1, 1, HEAD_DIM)), (1, 1, HEAD_DIM), "smem")
            q32 = tf.cast(tf.reshape(tf.reshard(q, (1, D_MODEL @ a.head), "smem"), (1, N_HEADS, HEAD_DIM)), "f32")
            q_rot = q32 * cos_r + tf.concat(q32[:, :, HALF:HEAD_DIM] * -1.0, q32[:, :, 0:HALF], axis=2) * sin_r
            k32 = tf.cast(tf.reshape(tf.reshard(k_new, (1, D_MODEL @ a.head), "smem"), (1, N_HEADS, HEAD_DIM)), "f32")
            k_rot = k32 * cos_r + tf.concat(k32[:, :, HALF:HEAD_DIM] * -1.0, k32[:, :, 0:HALF], axis=2) * sin_r
            k_row = tf.reshard(tf.reshape(tf.cast(k_rot, "bf16"), (1, 1, N_HEADS, HEAD_DIM)), (1, 1, N_HEADS, HEAD_DIM), "gmem")
            v_s = tf.reshape(tf.reshard(v_new, (1, D_MODEL @ a.head), "smem"), (1, 1, N_HEADS, HEAD_DIM))
            v_row = tf.reshard(v_s, (1, 1, N_HEADS, HEAD_DIM), "gmem")
            k_all = tf.cache_update(k_cache, pos, n_new, k_row)
            v_all = tf.cache_update(v_cache, pos, n_new, v_row)
            q_s = tf.reshape(q_rot * SCALE, (1, 1, N_HEADS, 1, HEAD_DIM))
            run_max = tf.full_like(tf.zeros(Tensor[(1, SPLITS @ a.s, N_HEADS @ a.head, 1, 1), "f32", "smem"]), NEG_BIG)
            run_sum = tf.zeros(Tensor[(1, SPLITS @ a.s, N_HEADS @ a.head, 1, 1), "f32", "smem"])
            run_acc = tf.zeros(Tensor[(1, SPLITS @ a.s, N_HEADS @ a.head, 1, HEAD_DIM), "f32", "smem"])
            # the windows the sliding window touches only, from the first (a run-time start:
            # docs/models.md); the position is read from the attended rows, so a pos past
            # them is refused, never skipped
            rows = tf.arange(Tensor[(PLACED_ATTENDED,), "i32"])
            last = rows[p : p + 1]  # a slice, not index_select: that is priced at its table
            step = tf.full_like(pos, PLACED_STEP)
            first = tf.reshape(tf.maximum(pos // step - tf.full_like(pos, PLACED_WINDOW_STEPS - 1), tf.full_like(pos, 0)) * step, ())
            offsets = tf.arange(Tensor[(PLACED_VISITED,), "i32"]) * tf.reshape(step, ())
            for i in range(PLACED_VISITED):
                at = first + tf.reshape(offsets[i : i + 1], ())
                k_blk = tf.reshard(tf.reshape(k_all[:, at : at + PLACED_STEP, :, :], (1, SPLITS, KV_BLOCK, N_HEADS, HEAD_DIM)),
                                   (1, SPLITS @ a.s, KV_BLOCK, N_HEADS @ a.head, HEAD_DIM), "smem")
                v_blk = tf.reshard(tf.reshape(v_all[:, at : at + PLACED_STEP, :, :], (1, SPLITS, KV_BLOCK, N_HEADS, HEAD_DIM)),
                                   (1, SPLITS @ a.s, KV_BLOCK, N_HEADS @ a.head, HEAD_DIM), "smem")
                # rows outside the window (pos - WINDOW, pos] are masked, each split its own
                seen = tf.logical_and(rows[at : at + PLACED_STEP] <= last, rows[at : at + PLACED_STEP] > pos - tf.full_like(pos, WINDOW))
                valid = tf.reshard(tf.reshape(seen, (1, SPLITS, 1, 1, KV_BLOCK)), (1, SPLITS @ a.s, 1, 1, KV_BLOCK), "smem")
                scores = tf.where(valid, tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 1, 3, 4, 2))), MASKED)
                new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                rescale = tf.exp(run_max - new_max)
                probs = tf.exp(scores - new_max)
                run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                run_acc = run_acc * rescale + tf.matmul(probs, tf.transpose(tf.cast(v_blk, "f32"), (0, 1, 3, 2, 4)))
                run_max = new_max
            peak = tf.reduce(tf.reshard(run_max, (1, SPLITS, N_HEADS @ a.head, 1, 1), "smem"), (1,), True, ReduceKind.MAX)
            weight = tf.transpose(tf.exp(run_max - peak), (0, 2, 3, 4, 1))
            num = tf.matmul(weight, tf.transpose(run_acc, (0, 2, 3, 1, 4)))
            den = tf.reshard(tf.matmul(weight, tf.transpose(run_sum, (0, 2, 3, 1, 4))), (1, N_HEADS @ a.head, 1, 1, 1), "smem")
            ctx = tf.reshard(num / den, (1, N_HEADS @ a.head, 1, 1, HEAD_DIM), "smem")
            merged = tf.reshard(tf.cast(ctx, "bf16"), (1, N_HEADS @ a.head, 1, 1, HEAD_DIM), "gmem")
            return tf.reshape(merged, (1, D_MODEL)), k_all, v_all

    @func
    def out_proj(ctx: Tensor[(1, D_MODEL), "bf16"], w_o: ConstTensor[(D_MODEL, D_MODEL), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
            c32 = tf.cast(tf.reshard(ctx, (1, D_MODEL), "smem"), "f32")
            acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
            for kk in tile(D_MODEL, O_TK):
                w_t = tf.cast(tf.reshard(w_o[kk, :], (O_TK, D_MODEL @ g.n), "smem"), "f32")
                acc = acc + tf.reshard(tf.matmul(c32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
            return tf.reshard(tf.cast(acc, "bf16"), (1, D_MODEL @ g.n), "gmem")

    @func
    def attention(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"],
        w_o: ConstTensor[(D_MODEL, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, PLACED_CTX, N_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, PLACED_CTX, N_HEADS, HEAD_DIM), "bf16"],
    ):
        q, k, v = qkv(h, w_qkv)
        ctx, k_all, v_all = decode_attention(q, k, v, cos_t, sin_t, pos, n_new, k_cache, v_cache)
        return out_proj(ctx, w_o), k_all, v_all

    @func
    def mlp(
        h: Tensor[(1, D_MODEL), "bf16"],
        w_gate_up: ConstTensor[(D_MODEL, 2 * FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
    ) -> Tensor[(1, D_MODEL), "bf16"]:
        # two GEMV kernels: gate/up (the fused weight's two column windows) split over
        # FFN columns with SwiGLU in the epilogue, then down split over D_MODEL columns
        with Mesh(("cta",), (CTAS,), ("n",)) as g:
            h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
            acc_g = tf.zeros(Tensor[(1, FFN @ g.n), "f32", "rmem"])
            acc_u = tf.zeros(Tensor[(1, FFN @ g.n), "f32", "rmem"])
            for kk in tile(D_MODEL, UP_TK):
                wg_t = tf.cast(tf.reshard(w_gate_up[kk, 0:FFN], (UP_TK, FFN @ g.n), "smem"), "f32")
                wu_t = tf.cast(tf.reshard(w_gate_up[kk, FFN:2 * FFN], (UP_TK, FFN @ g.n), "smem"), "f32")
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
        w_qkv: ConstTensor[(D_MODEL, 3 * D_MODEL), "bf16"],
        w_o: ConstTensor[(D_MODEL, D_MODEL), "bf16"],
        w_gate_up: ConstTensor[(D_MODEL, 2 * FFN), "bf16"],
        w_down: ConstTensor[(FFN, D_MODEL), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        n_new: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, PLACED_CTX, N_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, PLACED_CTX, N_HEADS, HEAD_DIM), "bf16"],
    ):
        attn, k_all, v_all = attention(norm(x, attn_norm), w_qkv, w_o, cos_t, sin_t, pos, n_new,
                                       k_cache, v_cache)
        h = residual(x, attn)
        return residual(h, mlp(norm(h, mlp_norm), w_gate_up, w_down)), k_all, v_all


def decode_model(name, target, placed):
    """A root: LAYERS copies of the logical (`placed=False`) or placed layer, `embed`,
    `lm_head` and the entry `decode_step` (embedding, every layer, head)."""
    layer, levels, ctx = (Phi3LayerPlaced, PLACED_LEVELS, PLACED_CTX) if placed else (Phi3Layer, LEVELS, CTX_LEN)

    @module(entry="decode_step", target=target, topologies=levels)
    class Phi3MiniDecode:
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
                # RMSNorm prologue, then a GEMV split over the vocabulary on VOCAB_CTAS CTAs
                with Mesh(("cta",), (CTAS,), ("n",)) as g:
                    with g[:VOCAB_CTAS] as v:
                        hn = tf.rms_norm(tf.reshard(h, (1, D_MODEL), "smem"), tf.reshard(final_norm, (D_MODEL,), "smem"), EPS)
                        h32 = tf.cast(hn, "f32")
                        acc = tf.zeros(Tensor[(1, VOCAB @ v.n), "f32", "rmem"])
                        for kk in tile(D_MODEL, VOCAB_TK):
                            w_t = tf.cast(tf.reshard(w_vocab[kk, :], (VOCAB_TK, VOCAB @ v.n), "smem"), "f32")
                            acc = acc + tf.reshard(tf.matmul(h32[:, kk], w_t), (1, VOCAB @ v.n), "rmem")
                        return tf.reshard(tf.cast(tf.cast(acc, "bf16"), "f32"), (1, VOCAB @ v.n), "gmem")
        else:
            @func
            def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
                with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
                    return tf.index_select(table, token, 0)

            @func
            def lm_head(
                h: Tensor[(1, D_MODEL), "bf16"],
                final_norm: ConstTensor[(D_MODEL,), "bf16"],
                w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
            ) -> Tensor[(1, VOCAB), "f32"]:
                with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
                    return tf.cast(tf.rms_norm(h, final_norm, EPS) @ w_vocab, "f32")

        @func
        def decode_step(
            token: Tensor[(1,), "i64"],
            cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            k_caches: Tensor[(LAYERS, 1, ctx, N_HEADS, HEAD_DIM), "bf16"],
            v_caches: Tensor[(LAYERS, 1, ctx, N_HEADS, HEAD_DIM), "bf16"],
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

    return published_root(Phi3MiniDecode, name)


# each root is built when first asked for (PEP 562): a selection uses one of the four
__getattr__, __dir__ = lazy_roots(globals(), {
    "Phi3Mini": lambda: decode_model("Phi3Mini", CudaTarget("nvidia.h200_sxm"), placed=False),
    "Phi3Mini_H100": lambda: decode_model("Phi3Mini_H100", CudaTarget("nvidia.h100_sxm"), placed=True),
    "Phi3Mini_H200": lambda: decode_model("Phi3Mini_H200", CudaTarget("nvidia.h200_sxm"), placed=True),
    "Phi3Mini_B200": lambda: decode_model("Phi3Mini_B200", CudaTarget("nvidia.b200_sxm"), placed=True),
})
