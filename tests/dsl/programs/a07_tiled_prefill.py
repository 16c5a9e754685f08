"""Tiled causal-free prefill scores over a DimVar context with `ceildiv` loop
bounds, one CTA per head (`N @ m.axis` sugar), an rmem accumulator carried through
nested `tile` loops, Written
without `from __future__ import annotations`. Bound: --dim ctx=256.
"""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

HEADS = 4
HD = 64
Q = 16
BLOCK = 64
CTX = DimVar("ctx", BLOCK, 1025)
TILES = ceildiv(CTX, BLOCK)


@module(entry="prefill", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", HEADS),))
class TiledPrefill:
    @func
    def prefill(
        q: Tensor[(HEADS, Q, HD), "bf16"],
        k: Tensor[(HEADS, CTX, HD), "bf16"],
    ) -> Tensor[(HEADS, Q, 1), "f32"]:
        with Mesh(("cta",), (HEADS,), ("h",)) as m:
            q_s = tf.reshard(q, (HEADS @ m.h, Q, HD), "smem")
            best = tf.zeros(Tensor[(HEADS, Q, 1), "f32", (HEADS @ m.h, Q, 1), "rmem"])
            for blk in tile(TILES * BLOCK, BLOCK):
                k_blk = tf.reshard(k[:, blk, :], (HEADS @ m.h, BLOCK, HD), "smem")
                for half in tile(HD, 32):
                    part = tf.matmul(q_s[:, :, half], tf.transpose(k_blk[:, :, half], (0, 2, 1)))
                    blk_max = tf.reduce(tf.cast(part, "f32"), (-1,), True, "max")
                    best = tf.maximum(best, tf.reshard(blk_max, (HEADS @ m.h, Q, 1), "rmem"))
            return best
