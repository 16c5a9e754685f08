"""Mamba-2-style mixer layers (state-spaces/mamba2-2.7b shapes, batch 1). `mixer` is
one recurrent decode step: the input projections give z, x, B, C and dt; a
depthwise causal conv1d step shifts the (D_CONV, CONV_CH) conv state and applies
the conv weights; the SSD state (N_HEADS, HEAD_P, D_STATE) decays by
exp(dt * A) and takes dt * x * B, the output reads it with C, adds the D skip,
and a gated RMSNorm (y * silu(z)) precedes the output projection. `prefill_scan`
runs the same state recurrence over a prompt of DimVar length `ctx_len`
(`for t in range(ctx_len)`, one token per trip, outputs gathered with
insert_slice). Bind: --dim ctx_len=4096 (prefill_scan only; decode is static).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

# config (state-spaces/mamba2-2.7b)
VOCAB = 50288
D_MODEL = 2560
D_INNER = 2 * D_MODEL
D_STATE = 128
HEAD_P = 64
N_HEADS = D_INNER // HEAD_P
D_CONV = 4
CONV_CH = D_INNER + 2 * D_STATE
LAYERS = 2
EPS = 1e-5
MAX_PROMPT = 16384
INV_D = 1.0 / D_MODEL
CTX_LEN = DimVar("ctx_len", 1, MAX_PROMPT + 1)
CTAS = 8
LEVELS = (Topology("cta", CTAS),)


@module(entry="decoder_layer", topologies=LEVELS)
class Mamba2Layer:
    @func
    def rms(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            x32 = tf.cast(x, "f32")
            ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
            return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * w

    @func
    def conv_step(
        xbc: Tensor[(1, CONV_CH), "bf16"],
        conv_state: Tensor[(1, D_CONV, CONV_CH), "bf16"],
        conv_w: ConstTensor[(D_CONV, CONV_CH), "bf16"],
        conv_b: ConstTensor[(CONV_CH,), "bf16"],
    ):
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            shifted = tf.concat(conv_state[:, 1:D_CONV, :], tf.reshape(xbc, (1, 1, CONV_CH)), axis=1)
            mixed = tf.reduce(tf.cast(shifted * conv_w, "f32"), (1,), False, ReduceKind.SUM)
            return tf.silu(mixed + tf.cast(conv_b, "f32")), shifted

    @func
    def mixer(
        h: Tensor[(1, D_MODEL), "bf16"],
        conv_state: Tensor[(1, D_CONV, CONV_CH), "bf16"],
        ssm_state: Tensor[(1, N_HEADS, HEAD_P, D_STATE), "f32"],
        w_z: ConstTensor[(D_MODEL, D_INNER), "bf16"],
        w_xbc: ConstTensor[(D_MODEL, CONV_CH), "bf16"],
        w_dt: ConstTensor[(D_MODEL, N_HEADS), "bf16"],
        conv_w: ConstTensor[(D_CONV, CONV_CH), "bf16"],
        conv_b: ConstTensor[(CONV_CH,), "bf16"],
        dt_bias: ConstTensor[(N_HEADS,), "f32"],
        a_log: ConstTensor[(N_HEADS,), "f32"],
        d_skip: ConstTensor[(N_HEADS, 1), "f32"],
        gate_norm: ConstTensor[(D_INNER,), "f32"],
        w_out: ConstTensor[(D_INNER, D_MODEL), "bf16"],
    ):
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            xbc = h @ w_xbc
        xbc_act, conv_new = conv_step(xbc, conv_state, conv_w, conv_b)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            z = tf.cast(h @ w_z, "f32")
            dt = tf.softplus(tf.cast(h @ w_dt, "f32") + dt_bias)
            x = tf.reshape(xbc_act[:, 0:D_INNER], (1, N_HEADS, HEAD_P, 1))
            b = tf.reshape(xbc_act[:, D_INNER:D_INNER + D_STATE], (1, 1, 1, D_STATE))
            c = tf.reshape(xbc_act[:, D_INNER + D_STATE:CONV_CH], (1, 1, D_STATE, 1))
            dt4 = tf.reshape(dt, (1, N_HEADS, 1, 1))
            decay = tf.exp(dt4 * tf.reshape(-tf.exp(a_log), (1, N_HEADS, 1, 1)))
            state = ssm_state * decay + (dt4 * x) * b
            y = tf.reshape(tf.matmul(state, c), (1, N_HEADS, HEAD_P)) + tf.reshape(x, (1, N_HEADS, HEAD_P)) * d_skip
            gated = tf.reshape(y, (1, D_INNER)) * tf.silu(z)
            out = tf.cast(tf.rms_norm(gated, gate_norm, EPS), "bf16") @ w_out
            return out, conv_new, state

    @func
    def prefill_scan(
        x_seq: Tensor[(1, CTX_LEN, N_HEADS, HEAD_P), "f32"],
        dt_seq: Tensor[(1, CTX_LEN, N_HEADS), "f32"],
        b_seq: Tensor[(1, CTX_LEN, D_STATE), "f32"],
        c_seq: Tensor[(1, CTX_LEN, D_STATE), "f32"],
        ssm_state: Tensor[(1, N_HEADS, HEAD_P, D_STATE), "f32"],
        a_log: ConstTensor[(N_HEADS,), "f32"],
    ):
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            a = tf.reshape(-tf.exp(a_log), (1, N_HEADS, 1, 1))
            state = ssm_state
            y_seq = tf.zeros(Tensor[(1, CTX_LEN, N_HEADS, HEAD_P), "f32"])
            for t in range(CTX_LEN):
                x_t = tf.reshape(x_seq[:, t, :, :], (1, N_HEADS, HEAD_P, 1))
                dt_t = tf.reshape(dt_seq[:, t, :], (1, N_HEADS, 1, 1))
                b_t = tf.reshape(b_seq[:, t, :], (1, 1, 1, D_STATE))
                c_t = tf.reshape(c_seq[:, t, :], (1, 1, D_STATE, 1))
                state = state * tf.exp(dt_t * a) + (dt_t * x_t) * b_t
                y_t = tf.reshape(tf.matmul(state, c_t), (1, 1, N_HEADS, HEAD_P))
                y_seq = tf.insert_slice(y_seq, y_t, (0, t, 0, 0))
            return y_seq, state

    @func
    def decoder_layer(
        x: Tensor[(1, D_MODEL), "bf16"],
        conv_state: Tensor[(1, D_CONV, CONV_CH), "bf16"],
        ssm_state: Tensor[(1, N_HEADS, HEAD_P, D_STATE), "f32"],
        norm: ConstTensor[(D_MODEL,), "bf16"],
        w_z: ConstTensor[(D_MODEL, D_INNER), "bf16"],
        w_xbc: ConstTensor[(D_MODEL, CONV_CH), "bf16"],
        w_dt: ConstTensor[(D_MODEL, N_HEADS), "bf16"],
        conv_w: ConstTensor[(D_CONV, CONV_CH), "bf16"],
        conv_b: ConstTensor[(CONV_CH,), "bf16"],
        dt_bias: ConstTensor[(N_HEADS,), "f32"],
        a_log: ConstTensor[(N_HEADS,), "f32"],
        d_skip: ConstTensor[(N_HEADS, 1), "f32"],
        gate_norm: ConstTensor[(D_INNER,), "f32"],
        w_out: ConstTensor[(D_INNER, D_MODEL), "bf16"],
    ):
        out, conv_new, state = mixer(rms(x, norm), conv_state, ssm_state, w_z, w_xbc, w_dt, conv_w,
                                     conv_b, dt_bias, a_log, d_skip, gate_norm, w_out)
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return x + out, conv_new, state


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Mamba2_2_7B:
    layers = tuple(Mamba2Layer.renamed(f"layer{i}") for i in range(LAYERS))

    @func
    def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return tf.index_select(table, token, 0)

    @func
    def lm_head(
        h: Tensor[(1, D_MODEL), "bf16"],
        final_norm: ConstTensor[(D_MODEL,), "bf16"],
        w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
    ) -> Tensor[(1, VOCAB), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as _all:
            return tf.cast(tf.rms_norm(h, final_norm, EPS) @ w_vocab, "f32")
