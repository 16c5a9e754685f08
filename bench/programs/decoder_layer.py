"""A Qwen3-style decoder stack for benchmarks: RMSNorm, fused QKV projections
with per-head q/k norms, RoPE, grouped-query attention over a DimVar-long KV
cache with an online-softmax tile loop, output projection, SwiGLU MLP; a root
holding LAYERS renamed copies of the layer, each selected by path.
Bind: --dim seq=4096.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

HIDDEN = 2048
HEADS = 16
KV_HEADS = 8
HEAD_DIM = 128
GROUP = HEADS // KV_HEADS
FFN = 6144
BLOCK = 128
MAX_POS = 32768
EPS = 1e-6
SCALE = 0.08838834764831845
SEQ = DimVar("seq", BLOCK, MAX_POS + 1)
LAYERS = 4


@module(entry="decoder_layer", topologies=(Topology("cta", KV_HEADS),))
class DecoderLayer:
    @func
    def rms(x: Tensor[(1, HIDDEN), "bf16"], w: ConstTensor[(HIDDEN,), "bf16"]) -> Tensor[(1, HIDDEN), "bf16"]:
        x32 = tf.cast(x, "f32")
        ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.MEAN)
        return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * w

    @func
    def head_norm(x: Tensor[(1, 1, HEADS, HEAD_DIM), "bf16"], w: ConstTensor[(HEAD_DIM,), "bf16"]) -> Tensor[(1, 1, HEADS, HEAD_DIM), "bf16"]:
        return tf.rms_norm(x, w, EPS)

    @func
    def kv_norm(x: Tensor[(1, 1, KV_HEADS, HEAD_DIM), "bf16"], w: ConstTensor[(HEAD_DIM,), "bf16"]) -> Tensor[(1, 1, KV_HEADS, HEAD_DIM), "bf16"]:
        return tf.rms_norm(x, w, EPS)

    @func
    def attention(
        h: Tensor[(1, HIDDEN), "bf16"],
        w_q: ConstTensor[(HIDDEN, HEADS * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(HIDDEN, KV_HEADS * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(HIDDEN, KV_HEADS * HEAD_DIM), "bf16"],
        w_o: ConstTensor[(HEADS * HEAD_DIM, HIDDEN), "bf16"],
        q_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        k_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, SEQ, KV_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, SEQ, KV_HEADS, HEAD_DIM), "bf16"],
    ):
        q = head_norm(tf.reshape(h @ w_q, (1, 1, HEADS, HEAD_DIM)), q_norm)
        k = kv_norm(tf.reshape(h @ w_k, (1, 1, KV_HEADS, HEAD_DIM)), k_norm)
        v = tf.reshape(h @ w_v, (1, 1, KV_HEADS, HEAD_DIM))
        q_rot, k_rot = tf.rope(tf.cast(q, "f32"), tf.cast(k, "f32"), cos_t, sin_t, pos)
        with Mesh(("cta",), (KV_HEADS,), ("kvh",)) as heads:
            q_sm = tf.reshard(tf.reshape(q_rot, (1, KV_HEADS, GROUP, HEAD_DIM)),
                              (1, KV_HEADS @ heads.kvh, GROUP, HEAD_DIM), "smem")
            q_s = q_sm * SCALE
            run_max = tf.full_like(tf.reduce(q_s, (-1,), True, ReduceKind.MAX), -1.0e30)
            run_sum = tf.full_like(run_max, 0.0)
            run_acc = tf.full_like(q_s, 0.0)
            for blk in tile(SEQ, BLOCK):
                k_blk = tf.reshard(k_cache[:, blk, :, :], (1, BLOCK, KV_HEADS @ heads.kvh, HEAD_DIM), "smem")
                v_blk = tf.reshard(v_cache[:, blk, :, :], (1, BLOCK, KV_HEADS @ heads.kvh, HEAD_DIM), "smem")
                scores = tf.matmul(q_s, tf.transpose(tf.cast(k_blk, "f32"), (0, 2, 3, 1)))
                new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                rescale = tf.exp(run_max - new_max)
                probs = tf.exp(scores - new_max)
                run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                run_acc = run_acc * rescale + tf.matmul(probs, tf.transpose(tf.cast(v_blk, "f32"), (0, 2, 1, 3)))
                run_max = new_max
            out = tf.reshard(run_acc / run_sum, (1, KV_HEADS, GROUP, HEAD_DIM), "gmem")
        attn = tf.cast(tf.reshape(out, (1, HEADS * HEAD_DIM)), "bf16") @ w_o
        return attn, tf.cast(k_rot, "bf16"), v

    @func
    def mlp(
        h: Tensor[(1, HIDDEN), "bf16"],
        w_gate: ConstTensor[(HIDDEN, FFN), "bf16"],
        w_up: ConstTensor[(HIDDEN, FFN), "bf16"],
        w_down: ConstTensor[(FFN, HIDDEN), "bf16"],
    ) -> Tensor[(1, HIDDEN), "bf16"]:
        return (tf.silu(h @ w_gate) * (h @ w_up)) @ w_down

    @func
    def decoder_layer(
        x: Tensor[(1, HIDDEN), "bf16"],
        attn_norm: ConstTensor[(HIDDEN,), "bf16"],
        mlp_norm: ConstTensor[(HIDDEN,), "bf16"],
        w_q: ConstTensor[(HIDDEN, HEADS * HEAD_DIM), "bf16"],
        w_k: ConstTensor[(HIDDEN, KV_HEADS * HEAD_DIM), "bf16"],
        w_v: ConstTensor[(HIDDEN, KV_HEADS * HEAD_DIM), "bf16"],
        w_o: ConstTensor[(HEADS * HEAD_DIM, HIDDEN), "bf16"],
        q_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        k_norm: ConstTensor[(HEAD_DIM,), "bf16"],
        w_gate: ConstTensor[(HIDDEN, FFN), "bf16"],
        w_up: ConstTensor[(HIDDEN, FFN), "bf16"],
        w_down: ConstTensor[(FFN, HIDDEN), "bf16"],
        cos_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        sin_t: Tensor[(MAX_POS, HEAD_DIM), "f32"],
        pos: Tensor[(1,), "i32"],
        k_cache: Tensor[(1, SEQ, KV_HEADS, HEAD_DIM), "bf16"],
        v_cache: Tensor[(1, SEQ, KV_HEADS, HEAD_DIM), "bf16"],
    ):
        attn, k_new, v_new = attention(rms(x, attn_norm), w_q, w_k, w_v, w_o, q_norm, k_norm,
                                       cos_t, sin_t, pos, k_cache, v_cache)
        h = x + attn
        return h + mlp(rms(h, mlp_norm), w_gate, w_up, w_down), k_new, v_new


@module(target=CudaTarget("nvidia.h200_sxm"))
class DecoderStack:
    """Model root: children only, selected by path (`DecoderStack.layer0`)."""

    layers = tuple(DecoderLayer.renamed(f"layer{i}") for i in range(LAYERS))
