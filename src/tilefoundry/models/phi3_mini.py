"""Phi-3-mini-style decode layer (microsoft/Phi-3-mini-4k-instruct shapes, one token,
batch 1): RMSNorm, a fused QKV projection cut with `tf.split`, RoPE, multi-head
attention (32 heads, no grouping) over a KV cache of DimVar length `ctx_len`, and a
fused gate/up projection split in two for the SwiGLU MLP. `attention` is the plain
form; `attention_placed` places one head per CTA (32-CTA mesh axis `head`) and walks
the cache with an online-softmax `tile` loop; the layer entry uses the placed one.
Bind: --dim ctx_len=4096.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

# config (microsoft/Phi-3-mini-4k-instruct)
VOCAB = 32064
D_MODEL = 3072
N_HEADS = 32
HEAD_DIM = D_MODEL // N_HEADS
FFN = 8192
LAYERS = 2
EPS = 1e-5
MAX_POS = 4096
BLOCK = 64
SCALE = 1.0 / HEAD_DIM ** 0.5
NEG_BIG = -1.0e30
CTX_LEN = DimVar("ctx_len", BLOCK, MAX_POS + 1)
LEVELS = (Topology("cta", N_HEADS),)


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
            probs = tf.softmax(tf.matmul(q_h, k_t) * SCALE, -1)
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
            for blk in tile(CTX_LEN, BLOCK):
                k_blk = tf.reshard(k_all[:, blk, :, :], (1, BLOCK, N_HEADS @ heads.head, HEAD_DIM), "smem")
                v_blk = tf.reshard(v_all[:, blk, :, :], (1, BLOCK, N_HEADS @ heads.head, HEAD_DIM), "smem")
                scores = tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 2, 3, 1)))
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
        attn, k_all, v_all = attention_placed(norm(x, attn_norm), w_qkv, w_o, cos_t, sin_t, pos, n_new,
                                              k_cache, v_cache)
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            h = x + attn
        out = mlp(norm(h, mlp_norm), w_gate_up, w_down)
        with Mesh(("cta",), (N_HEADS,), ("head",)) as _all:
            return h + out, k_all, v_all


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Phi3Mini:
    layers = tuple(Phi3Layer.renamed(f"layer{i}") for i in range(LAYERS))

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
