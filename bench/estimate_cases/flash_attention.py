"""FlashAttention forward (FlashAttention-2/3 on Hopper), non-causal, as the kernel is
built: one CTA per (batch * head, 128-row query block); the query block is staged in
shared memory once; a `for blk in tile(SEQ, 128)` loop stages each 128-row K and V
block gmem -> smem (TMA), computes the block's scores on the tensor cores, keeps the
running row max and row sum (online softmax, in f32), rescales the f32 output
accumulator and adds the block's P @ V; the output is normalised and cast to bf16 once.

`bh` (batch * heads) and `q_tiles` (sequence length / 128) are the DimVars a case binds;
the head dimension is one module each. Both products are written in f32 (out_dtype
f32, the wgmma accumulator); P is cast to bf16 for the second.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

BH = DimVar("bh", 1, 4097)
Q_TILES = DimVar("q_tiles", 1, 513)
BLOCK_M = 128
BLOCK_N = 128
SEQ = Q_TILES * BLOCK_M
NEG_BIG = -1.0e30
SCALE_128 = 0.08838834764831845  # 1 / sqrt(128)
SCALE_64 = 0.125  # 1 / sqrt(64)


@module(entry="attention", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", BH * Q_TILES),))
class FlashAttentionHd128:
    """Head dimension 128."""

    @func
    def attention(
        q: Tensor[(BH, Q_TILES, BLOCK_M, 128), "bf16"],
        k: Tensor[(BH, 1, SEQ, 128), "bf16"],
        v: Tensor[(BH, 1, SEQ, 128), "bf16"],
    ) -> Tensor[(BH, Q_TILES, BLOCK_M, 128), "bf16"]:
        with Mesh(("cta",), (BH, Q_TILES), ("h", "qt")) as grid:
            q_s = tf.reshard(q, (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 128), "smem")
            run_max = tf.full_like(
                tf.zeros(Tensor[(BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 1), "f32", "rmem"]), NEG_BIG)
            run_sum = tf.zeros(Tensor[(BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 1), "f32", "rmem"])
            acc = tf.zeros(Tensor[(BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 128), "f32", "rmem"])
            for blk in tile(SEQ, BLOCK_N):
                k_blk = tf.reshard(k[:, :, blk, :], (BH @ grid.h, 1, BLOCK_N, 128), "smem")
                v_blk = tf.reshard(v[:, :, blk, :], (BH @ grid.h, 1, BLOCK_N, 128), "smem")
                s = tf.matmul(q_s, tf.transpose(k_blk, (0, 1, 3, 2)), out_dtype="f32")
                scores = tf.reshard(s, (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, BLOCK_N), "rmem") * SCALE_128
                new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                rescale = tf.exp(run_max - new_max)
                probs = tf.exp(scores - new_max)
                run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                p_s = tf.reshard(tf.cast(probs, "bf16"), (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, BLOCK_N), "smem")
                pv = tf.reshard(tf.matmul(p_s, v_blk, out_dtype="f32"),
                                (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 128), "rmem")
                acc = acc * rescale + pv
                run_max = new_max
            out = tf.cast(acc / run_sum, "bf16")
            return tf.reshard(out, (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 128), "gmem")


@module(entry="attention", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", BH * Q_TILES),))
class FlashAttentionHd64:
    """Head dimension 64."""

    @func
    def attention(
        q: Tensor[(BH, Q_TILES, BLOCK_M, 64), "bf16"],
        k: Tensor[(BH, 1, SEQ, 64), "bf16"],
        v: Tensor[(BH, 1, SEQ, 64), "bf16"],
    ) -> Tensor[(BH, Q_TILES, BLOCK_M, 64), "bf16"]:
        with Mesh(("cta",), (BH, Q_TILES), ("h", "qt")) as grid:
            q_s = tf.reshard(q, (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 64), "smem")
            run_max = tf.full_like(
                tf.zeros(Tensor[(BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 1), "f32", "rmem"]), NEG_BIG)
            run_sum = tf.zeros(Tensor[(BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 1), "f32", "rmem"])
            acc = tf.zeros(Tensor[(BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 64), "f32", "rmem"])
            for blk in tile(SEQ, BLOCK_N):
                k_blk = tf.reshard(k[:, :, blk, :], (BH @ grid.h, 1, BLOCK_N, 64), "smem")
                v_blk = tf.reshard(v[:, :, blk, :], (BH @ grid.h, 1, BLOCK_N, 64), "smem")
                s = tf.matmul(q_s, tf.transpose(k_blk, (0, 1, 3, 2)), out_dtype="f32")
                scores = tf.reshard(s, (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, BLOCK_N), "rmem") * SCALE_64
                new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))
                rescale = tf.exp(run_max - new_max)
                probs = tf.exp(scores - new_max)
                run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)
                p_s = tf.reshard(tf.cast(probs, "bf16"), (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, BLOCK_N), "smem")
                pv = tf.reshard(tf.matmul(p_s, v_blk, out_dtype="f32"),
                                (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 64), "rmem")
                acc = acc * rescale + pv
                run_max = new_max
            out = tf.cast(acc / run_sum, "bf16")
            return tf.reshard(out, (BH @ grid.h, Q_TILES @ grid.qt, BLOCK_M, 64), "gmem")
