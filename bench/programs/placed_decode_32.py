"""A placed kernel on 32 CTAs for bench/run.py: split-K decode attention-style
work and a split-K GEMM. Mesh (4, 8): `m` splits the rows, `k` the contraction,
so the matmul carries Partial("sum") on `k` until a reshard completes it; an
elementwise epilogue and a row reduction run on the placed boxes."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = 512
K = 8192
N = 1024
M_SPLIT = 4
K_SPLIT = 8


@module(entry="split_k", target=CudaTarget("nvidia.h200_sxm"),
        topologies=(Topology("cta", M_SPLIT * K_SPLIT),))
class PlacedSplitK32:
    @func
    def split_k(a: Tensor[(M, K), "bf16"], b: Tensor[(K, N), "bf16"], bias: Tensor[(M, N), "f32"]):
        with Mesh(("cta",), (M_SPLIT, K_SPLIT), ("m", "k")) as grid:
            a_s = tf.reshard(a, (M @ grid.m, K @ grid.k), "smem")
            b_s = tf.reshard(b, (K @ grid.k, N), "smem")
            part = tf.cast(tf.matmul(a_s, b_s), "f32")
            whole = tf.reshard(part, (M @ grid.m, N), "smem")
            bias_s = tf.reshard(bias, (M @ grid.m, N), "smem")
            act = tf.silu(whole + bias_s)
            rows = tf.reduce(act, (-1,), True, ReduceKind.SUM)
            return tf.reshard(act, (M @ grid.m, N), "gmem"), tf.reshard(rows, (M @ grid.m, 1), "gmem")
