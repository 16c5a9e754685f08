"""Small programs whose error bounds are computed by hand in
tests/execute/test_check_bounds.py (issue 38 item 1), and a parametric layer
(dims M, K, N) for the property test that a right reference never fails."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

H200 = CudaTarget("nvidia.h200_sxm")

N16 = 16
N1024 = 1024
M = DimVar("m", 1, 65)
K = DimVar("k", 1, 513)
N = DimVar("n", 1, 65)


@module(entry="dot16", target=H200)
class Dot16:
    @func
    def dot16(a: Tensor[(1, N16), "f32"], b: Tensor[(N16, 1), "f32"]) -> Tensor[(1, 1), "f32"]:
        return tf.matmul(a, b)


@module(entry="dot1024", target=H200)
class Dot1024:
    @func
    def dot1024(a: Tensor[(1, N1024), "f32"], b: Tensor[(N1024, 1), "f32"]) -> Tensor[(1, 1), "f32"]:
        return tf.matmul(a, b)


@module(entry="chain", target=H200)
class CastChain:
    @func
    def chain(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "bf16"]:
        return tf.cast(tf.cast(x, "f16"), "bf16")


@module(entry="moves", target=H200)
class Moves:
    @func
    def moves(x: Tensor[(4, 8), "f32"]) -> Tensor[(8, 4), "f32"]:
        return tf.reshape(tf.transpose(x, (1, 0)), (8, 4))


@module(entry="layer", target=H200)
class Layer:
    @func
    def layer(x: Tensor[(M, K), "bf16"], w: ConstTensor[(K, N), "bf16"],
              g: ConstTensor[(N,), "bf16"]) -> Tensor[(M, N), "bf16"]:
        h = tf.matmul(x, w)
        return tf.rms_norm(tf.gelu(h), g, 1e-6)


ROWS, COLS = 4, 16
NEG_BIG = -2e30  # a masked score, as the zoo's and place's attentions write it


@module(entry="masked", target=H200)
class MaskedSoftmax:
    """A row max and a softmax over scores of which some are masked at -2e30."""

    @func
    def masked(s: Tensor[(ROWS, COLS), "f32"], valid: Tensor[(ROWS, COLS), "bool"]) -> Tensor[(ROWS, COLS), "f32"]:
        scores = tf.where(valid, s * 0.25, NEG_BIG)
        top = tf.reduce(scores, (-1,), True, ReduceKind.MAX)
        return tf.softmax(scores - top, -1)
