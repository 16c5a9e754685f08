"""Step 4: the tiled GEMM of step 3 with an open contraction length: K is the DimVar
`k`, bound on the command line with `--dim k=EXTENT`."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = 512
N = 384
K = DimVar("k", 64, 8193)  # any contraction length in [64, 8193)
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
