"""KV-cache write with `tf.cache_update`, then a (2, 4) CTA mesh whose coordinates
are values: `base = cta.c * (W * BLOCK) + cta.w * BLOCK` starts a runtime window
`cache[:, base : base + BLOCK, :, :]`; `B_, H, HD = 1, 4, 64` binds numbers. Fully static.
"""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

B_, H, HD = 1, 4, 64
CTX = 512
BLOCK = 64
W = CTX // BLOCK // 2  # 4 workers


@module(entry="step", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class KvStep:
    @func
    def step(k_cache: Tensor[(B_, CTX, H, HD), "bf16"], k_new: Tensor[(B_, 1, H, HD), "bf16"],
             pos: Tensor[(), "i32"], one: Tensor[(), "i32"], q: Tensor[(B_, H, 1, HD), "bf16"]):
        cache = tf.cache_update(k_cache, pos, one, k_new)
        with Mesh(("cta",), layout=(2, W), names=("c", "w")) as cta:
            base = cta.c * (W * BLOCK) + cta.w * BLOCK
            blk = cache[:, base : base + BLOCK, :, :]
            kt = tf.transpose(blk, (0, 2, 3, 1))
            s = tf.matmul(q, kt)
            m = tf.reduce(s, (-1,), True, "max")
        return m
