"""Tiled GEMMs as cuBLAS / CUTLASS / DeepGEMM Hopper kernels build them.

A CTA mesh splits the output into 128x128 (or 128x256) tiles; a `for kk in tile(K, BK)`
loop stages each A and B K-panel gmem -> smem (the TMA loads of a warp-specialised
kernel), multiplies the staged panels on the tensor cores, accumulates the product in
f32 in registers, and casts to the output dtype once at the end.

A row-major (M, K) matrix is the same bytes as (M/128, 128, K), and a GEMM library
walks it in exactly those 128-row panels; the programs say so in their types, so that
the CTA axes split tile counts, the DimVars a case binds (`--dim m_tiles=64
--dim n_tiles=64 --dim k=8192` is an 8192^3 GEMM on 128x128 tiles). B is stored as
N-panels (N/BN, K, BN), the bytes of the 64xBN (or 128xBN) box a TMA load fetches.
One trip's product is the batched (m_tiles, n_tiles) grid of tile products, one per
CTA, written in f32 (out_dtype f32: the wgmma accumulator) and added to the register
accumulator; its flops are counted at the operand dtype's tensor rate.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

GRID_M = DimVar("m_tiles", 1, 1025)
GRID_N = DimVar("n_tiles", 1, 1025)
K = DimVar("k", 64, 65537)
TILE_M = 128
TILE_N = 128
WIDE_N = 256
TILE_K = 64
# DeepGEMM's FP8 kernels step K by 128, the granularity of its per-block scales
FP8_TILE_K = 128
K_BLOCKS = DimVar("k_blocks", 1, 513)
# DeepGEMM's JIT picks BLOCK_N per problem (16..128 in steps of 8); a case binds it
FP8_TILE_N = DimVar("tile_n", 16, 129)


@module(entry="gemm", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", GRID_M * GRID_N),))
class GemmBf16:
    """bf16 in, bf16 out, f32 accumulation; 128x128 CTA tile, K tiles of 64."""

    @func
    def gemm(
        a: Tensor[(GRID_M, 1, TILE_M, K), "bf16"],
        b: Tensor[(GRID_N, K, TILE_N), "bf16"],
    ) -> Tensor[(GRID_M, GRID_N, TILE_M, TILE_N), "bf16"]:
        with Mesh(("cta",), (GRID_M, GRID_N), ("mt", "nt")) as grid:
            acc = tf.zeros(Tensor[(GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, TILE_N), "f32", "rmem"])
            for kk in tile(K, TILE_K):
                a_tile = tf.reshard(a[:, :, :, kk], (GRID_M @ grid.mt, 1, TILE_M, TILE_K), "smem")
                b_tile = tf.reshard(b[:, kk, :], (GRID_N @ grid.nt, TILE_K, TILE_N), "smem")
                prod = tf.matmul(a_tile, b_tile, out_dtype="f32")
                acc = acc + tf.reshard(prod, (GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, TILE_N), "rmem")
            out = tf.cast(acc, "bf16")
            return tf.reshard(out, (GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, TILE_N), "gmem")


@module(entry="gemm", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", GRID_M * GRID_N),))
class GemmBf16Wide:
    """bf16 in, bf16 out, f32 accumulation; 128x256 CTA tile (two consumer warpgroups of
    64x256), K tiles of 64. `n_tiles` counts 256-wide tiles."""

    @func
    def gemm(
        a: Tensor[(GRID_M, 1, TILE_M, K), "bf16"],
        b: Tensor[(GRID_N, K, WIDE_N), "bf16"],
    ) -> Tensor[(GRID_M, GRID_N, TILE_M, WIDE_N), "bf16"]:
        with Mesh(("cta",), (GRID_M, GRID_N), ("mt", "nt")) as grid:
            acc = tf.zeros(Tensor[(GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, WIDE_N), "f32", "rmem"])
            for kk in tile(K, TILE_K):
                a_tile = tf.reshard(a[:, :, :, kk], (GRID_M @ grid.mt, 1, TILE_M, TILE_K), "smem")
                b_tile = tf.reshard(b[:, kk, :], (GRID_N @ grid.nt, TILE_K, WIDE_N), "smem")
                prod = tf.matmul(a_tile, b_tile, out_dtype="f32")
                acc = acc + tf.reshard(prod, (GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, WIDE_N), "rmem")
            out = tf.cast(acc, "bf16")
            return tf.reshard(out, (GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, WIDE_N), "gmem")


@module(entry="gemm", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", GRID_M * GRID_N),))
class GemmFp8BlockScaled:
    """DeepGEMM's dense FP8 GEMM: e4m3 operands with fine-grained f32 scales (one per
    row and 128 K for A, one per 128x128 block for B), each 128-deep K block's tensor
    core product promoted to an f32 accumulator on the CUDA cores after scaling, bf16 out.
    `k_blocks` counts K blocks of 128; the operands are stored K-block-major, the 128x128
    boxes the TMA loads fetch (the same bytes as the row-major matrices). The CTA tile is
    128 x `tile_n`; B's scales are stored one per K block and N tile (DeepGEMM stores one
    per 128 x 128 block and a tile narrower than 128 reads one or two of them: the
    difference is a few KiB of f32 beside megabytes of operands)."""

    @func
    def gemm(
        a: Tensor[(GRID_M, K_BLOCKS, TILE_M, FP8_TILE_K), "fp8e4m3"],
        a_scale: Tensor[(GRID_M, K_BLOCKS, TILE_M, 1), "f32"],
        b: Tensor[(K_BLOCKS, GRID_N, FP8_TILE_K, FP8_TILE_N), "fp8e4m3"],
        b_scale: Tensor[(K_BLOCKS, GRID_N, 1, 1), "f32"],
    ) -> Tensor[(GRID_M, GRID_N, TILE_M, FP8_TILE_N), "bf16"]:
        with Mesh(("cta",), (GRID_M, GRID_N), ("mt", "nt")) as grid:
            acc = tf.zeros(Tensor[(GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, FP8_TILE_N), "f32", "rmem"])
            for kb in tile(K_BLOCKS, 1):
                a_tile = tf.reshard(a[:, kb, :, :], (GRID_M @ grid.mt, 1, TILE_M, FP8_TILE_K), "smem")
                b_tile = tf.reshard(b[kb, :, :, :], (1, GRID_N @ grid.nt, FP8_TILE_K, FP8_TILE_N), "smem")
                sa = tf.reshard(a_scale[:, kb, :, :], (GRID_M @ grid.mt, 1, TILE_M, 1), "rmem")
                sb = tf.reshard(b_scale[kb, :, :, :], (1, GRID_N @ grid.nt, 1, 1), "rmem")
                prod = tf.reshard(tf.matmul(a_tile, b_tile, out_dtype="f32"),
                                  (GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, FP8_TILE_N), "rmem")
                acc = acc + prod * sa * sb
            out = tf.cast(acc, "bf16")
            return tf.reshard(out, (GRID_M @ grid.mt, GRID_N @ grid.nt, TILE_M, FP8_TILE_N), "gmem")
