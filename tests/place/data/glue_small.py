"""A Mamba-2-style state update at small shapes, for the place tests of a glue
piece staged in smem: the state (heads x head dimension x state) decays by
exp(dt * A) and takes dt * x * B, the output reads it with C, is gated by
silu(z) and normalised over the whole row (an RMSNorm across the heads)."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

HEADS = 8
HEAD_P = 16
D_STATE = 32
INNER = HEADS * HEAD_P
EPS = 1e-5


@module(entry="update", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallStateUpdate:
    @func
    def update(
        x: Tensor[(1, INNER), "f32"],
        dt: Tensor[(1, HEADS), "f32"],
        bc: Tensor[(1, 2 * D_STATE), "f32"],
        z: Tensor[(1, INNER), "f32"],
        state: Tensor[(1, HEADS, HEAD_P, D_STATE), "f32"],
        a_log: ConstTensor[(HEADS,), "f32"],
        gate_norm: ConstTensor[(INNER,), "f32"],
    ):
        dt4 = tf.reshape(tf.softplus(dt), (1, HEADS, 1, 1))
        decay = tf.exp(dt4 * tf.reshape(-tf.exp(a_log), (1, HEADS, 1, 1)))
        x4 = tf.reshape(x, (1, HEADS, HEAD_P, 1))
        b = tf.reshape(bc[:, 0:D_STATE], (1, 1, 1, D_STATE))
        c = tf.reshape(bc[:, D_STATE:2 * D_STATE], (1, 1, D_STATE, 1))
        new_state = state * decay + (dt4 * x4) * b
        y = tf.reshape(tf.matmul(new_state, c), (1, INNER)) * tf.silu(z)
        return tf.cast(tf.rms_norm(y, gate_norm, EPS), "bf16"), new_state
