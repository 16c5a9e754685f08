"""Split-K matmul on 4 CTAs of an H200: the product carries Partial("sum") on the
mesh axis ks; the reshard to an unsplit layout on the same mesh completes it on
every CTA (an all-reduce)."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M = 16
K = 256
N = 32


@module(entry="split_k", target=CudaTarget("nvidia.h200_sxm"),
        topologies=(Topology("cta", 4),))
class PartialAllReduce:
    @func
    def split_k(a: Tensor[(M, K), "f32"], b: Tensor[(K, N), "f32"]):
        with Mesh(("cta",), (4,), ("ks",)) as grid:
            a_s = tf.reshard(a, (M, K @ grid.ks), "smem")
            b_s = tf.reshard(b, (K @ grid.ks, N), "smem")
            part = tf.matmul(a_s, b_s)
            total = tf.reshard(part, (M, N), "smem")
            return total
