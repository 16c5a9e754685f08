"""Step 3: a tiled GEMM on a 4 x 4 CTA mesh. The mesh axes `mt` and `nt` split M
and N; a `tile` loop walks K in windows of 64, stages each A/B window in shared
memory and accumulates the f32 product into a loop-carried register accumulator."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = 512
N = 384
K = 1024
TILE_K = 64


@module(
    entry="gemm",
    target=CudaTarget("nvidia.h200_sxm"),
    topologies=(Topology("cta", 16),),
)
class TiledGemm:
    @func
    def gemm(a: Tensor[(M, K), "bf16"], b: Tensor[(K, N), "bf16"]) -> Tensor[(M, N), "bf16"]:
        with Mesh(("cta",), (4, 4), ("mt", "nt")) as grid:
            acc = tf.zeros(Tensor[(M @ grid.mt, N @ grid.nt), "f32", "rmem"])
            for kk in tile(K, TILE_K):
                a_tile = tf.reshard(a[:, kk], (M @ grid.mt, TILE_K), "smem")
                b_tile = tf.reshard(b[kk, :], (TILE_K, N @ grid.nt), "smem")
                prod = tf.matmul(tf.cast(a_tile, "f32"), tf.cast(b_tile, "f32"))
                acc = acc + tf.reshard(prod, (M @ grid.mt, N @ grid.nt), "rmem")
            out = tf.cast(acc, "bf16")
            return tf.reshard(out, (M @ grid.mt, N @ grid.nt), "gmem")
