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


D_MODEL = 64
D_CONV = 4
CONV_CH = INNER + 2 * D_STATE


@module(entry="mixer", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class SmallMixer:
    @func
    def mixer(
        h: Tensor[(1, D_MODEL), "bf16"],
        dt: Tensor[(1, HEADS), "f32"],
        conv_state: Tensor[(1, D_CONV, CONV_CH), "bf16"],
        state: Tensor[(1, HEADS, HEAD_P, D_STATE), "f32"],
        w_xbc: ConstTensor[(D_MODEL, CONV_CH), "bf16"],
        w_z: ConstTensor[(D_MODEL, INNER), "bf16"],
        conv_w: ConstTensor[(D_CONV, CONV_CH), "bf16"],
        conv_b: ConstTensor[(CONV_CH,), "bf16"],
        a_log: ConstTensor[(HEADS,), "f32"],
        gate_norm: ConstTensor[(INNER,), "f32"],
        w_out: ConstTensor[(INNER, D_MODEL), "bf16"],
    ):
        # the in-projection, then a depthwise causal conv step over its channels
        xbc = h @ w_xbc
        shifted = tf.concat(conv_state[:, 1:D_CONV, :], tf.reshape(xbc, (1, 1, CONV_CH)), axis=1)
        act = tf.silu(tf.reduce(tf.cast(shifted * conv_w, "f32"), (1,), False, ReduceKind.SUM) + tf.cast(conv_b, "f32"))
        z = tf.cast(h @ w_z, "f32")
        dt4 = tf.reshape(tf.softplus(dt), (1, HEADS, 1, 1))
        decay = tf.exp(dt4 * tf.reshape(-tf.exp(a_log), (1, HEADS, 1, 1)))
        x4 = tf.reshape(act[:, 0:INNER], (1, HEADS, HEAD_P, 1))
        b = tf.reshape(act[:, INNER:INNER + D_STATE], (1, 1, 1, D_STATE))
        c = tf.reshape(act[:, INNER + D_STATE:CONV_CH], (1, 1, D_STATE, 1))
        new_state = state * decay + (dt4 * x4) * b
        y = tf.reshape(tf.matmul(new_state, c), (1, INNER)) * tf.silu(z)
        out = tf.cast(tf.rms_norm(y, gate_norm, EPS), "bf16") @ w_out
        return out, shifted, new_state
