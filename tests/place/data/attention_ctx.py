"""A logical decode attention for the place tests: one new token, 2 KV heads of
2 query rows each (grouped-query), a KV cache of DimVar length ctx (bind --dim ctx=N), no placement."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

HEADS = 2
GROUP = 2
DIM = 32
CTX = DimVar("ctx", 16, 4097)
SCALE = 0.125


@module(entry="decode_attention", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallAttention:
    @func
    def decode_attention(q: Tensor[(HEADS, GROUP, DIM), "f32"], k: Tensor[(HEADS, CTX, DIM), "bf16"],
                         v: Tensor[(HEADS, CTX, DIM), "bf16"]) -> Tensor[(HEADS, GROUP, DIM), "bf16"]:
        scores = tf.matmul(q, tf.transpose(tf.cast(k, "f32"), (0, 2, 1))) * SCALE
        probs = tf.softmax(scores, -1)
        return tf.cast(tf.matmul(probs, tf.cast(v, "f32")), "bf16")
