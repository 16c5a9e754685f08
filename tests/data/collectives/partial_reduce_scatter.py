"""Split-K matmul on 4 CTAs of an H200, its Partial("sum") on ks completed to a
row split over the same axis: each CTA keeps a quarter of the rows of the sum
(a reduce_scatter)."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = 16
K = 256
N = 32


@module(entry="split_k", target=CudaTarget("nvidia.h200_sxm"),
        topologies=(Topology("cta", 4),))
class PartialReduceScatter:
    @func
    def split_k(a: Tensor[(M, K), "f32"], b: Tensor[(K, N), "f32"]):
        with Mesh(("cta",), (4,), ("ks",)) as grid:
            a_s = tf.reshard(a, (M, K @ grid.ks), "smem")
            b_s = tf.reshard(b, (K @ grid.ks, N), "smem")
            part = tf.matmul(a_s, b_s)
            rows = tf.reshard(part, (M @ grid.ks, N), "smem")
            return rows
