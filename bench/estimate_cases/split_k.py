"""Split-K skinny GEMM (decode, m <= 16) with FP8 operands, as split-K kernels build
it: the CTA mesh splits the output features N over `nt` and the contraction K over
`ks`; each CTA stages its (K / SPLIT_K) x 128 weight panel and the matching slice of
the activations gmem -> smem and multiplies them on the tensor cores, so the product
carries Partial("sum") on `ks`; a reshard completes the Partial across the SPLIT_K
CTAs of each output tile (the cross-CTA reduction: through L2 or distributed shared
memory), and the completed tile is cast to bf16 and written once.

`m` is the DimVar a case binds; N, K and SPLIT_K are module constants. The partial
products are f32 (out_dtype f32); the MXFP8 block scales (one byte per 32 weights,
1/32 of the weight bytes) are not in the program.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = DimVar("m", 1, 17)
N = 2304
K = 6144
TILE_N = 128
SPLIT_K = 4
N_TILES = N // TILE_N


@module(entry="gemm", target=CudaTarget("nvidia.b200_sxm"),
        topologies=(Topology("cta", N_TILES * SPLIT_K),))
class SplitKFp8:
    @func
    def gemm(x: Tensor[(M, K), "fp8e4m3"], w: Tensor[(K, N), "fp8e4m3"]) -> Tensor[(M, N), "bf16"]:
        with Mesh(("cta",), (N_TILES, SPLIT_K), ("nt", "ks")) as grid:
            x_s = tf.reshard(x, (M, K @ grid.ks), "smem")
            w_s = tf.reshard(w, (K @ grid.ks, N @ grid.nt), "smem")
            partial = tf.matmul(x_s, w_s, out_dtype="f32")
            total = tf.reshard(partial, (M, N @ grid.nt), "rmem")
            return tf.reshard(tf.cast(total, "bf16"), (M, N @ grid.nt), "gmem")
