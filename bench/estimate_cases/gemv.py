"""Decode GEMV (a linear layer at batch m <= 16): the weights are streamed once; the
output features are split over a 1-D CTA mesh (N_SPLIT CTAs, N / N_SPLIT columns
each); each CTA walks K in tiles of 256, staging its weight panel gmem -> smem and
the small activation tile beside it, multiplies on the tensor cores and accumulates in
f32 registers; one cast to f16 at the end. `m` is the DimVar a case binds; N and K
are module constants (an 8192 x 8192 fp16 weight).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = DimVar("m", 1, 17)
N = 8192
K = 8192
N_SPLIT = 128
TILE_K = 256


@module(entry="gemv", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", N_SPLIT),))
class DecodeGemvF16:
    @func
    def gemv(x: Tensor[(M, K), "f16"], w: Tensor[(K, N), "f16"]) -> Tensor[(M, N), "f16"]:
        with Mesh(("cta",), (N_SPLIT,), ("n",)) as grid:
            acc = tf.zeros(Tensor[(M, N @ grid.n), "f32", "rmem"])
            for kk in tile(K, TILE_K):
                x_t = tf.reshard(x[:, kk], (M, TILE_K), "smem")
                w_t = tf.reshard(w[kk, :], (TILE_K, N @ grid.n), "smem")
                acc = acc + tf.reshard(tf.matmul(x_t, w_t, out_dtype="f32"), (M, N @ grid.n), "rmem")
            return tf.reshard(tf.cast(acc, "f16"), (M, N @ grid.n), "gmem")
