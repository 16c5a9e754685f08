"""A small selective scan (Mamba-2's prefill recurrence at toy extents): the
state of each of HEADS heads decays by exp(dt * a) and takes dt * x * b at every
token, and each token's output reads the state with c. The loop carries the state
and the gathered outputs; the heads never mix."""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

TOKENS = 6
HEADS = 8
ROWS = 4
STATE = 16


@module(entry="scan", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class SmallScan:
    @func
    def scan(
        x_seq: Tensor[(1, TOKENS, HEADS, ROWS), "f32"],
        dt_seq: Tensor[(1, TOKENS, HEADS), "f32"],
        b_seq: Tensor[(1, TOKENS, STATE), "f32"],
        c_seq: Tensor[(1, TOKENS, STATE), "f32"],
        state0: Tensor[(1, HEADS, ROWS, STATE), "f32"],
        a_log: ConstTensor[(HEADS,), "f32"],
    ):
        with Mesh(("cta",), (8,), ("c",)) as _all:
            a = tf.reshape(-tf.exp(a_log), (1, HEADS, 1, 1))
            state = state0
            y_seq = tf.zeros(Tensor[(1, TOKENS, HEADS, ROWS), "f32"])
            for t in range(TOKENS):
                x_t = tf.reshape(x_seq[:, t, :, :], (1, HEADS, ROWS, 1))
                dt_t = tf.reshape(dt_seq[:, t, :], (1, HEADS, 1, 1))
                b_t = tf.reshape(b_seq[:, t, :], (1, 1, 1, STATE))
                c_t = tf.reshape(c_seq[:, t, :], (1, 1, STATE, 1))
                state = state * tf.exp(dt_t * a) + (dt_t * x_t) * b_t
                y_t = tf.reshape(tf.matmul(state, c_t), (1, 1, HEADS, ROWS))
                y_seq = tf.insert_slice(y_seq, y_t, (0, t, 0, 0))
            return y_seq, state
