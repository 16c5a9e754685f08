"""Mamba-2-style mixer layers (state-spaces/mamba2-2.7b shapes, batch 1). `mixer` is
one recurrent decode step: the input projections give z, x, B, C and dt; a
depthwise causal conv1d step shifts the (D_CONV, CONV_CH) conv state and applies
the conv weights; the SSD state (N_HEADS, HEAD_P, D_STATE) decays by
exp(dt * A) and takes dt * x * B, the output reads it with C, adds the D skip,
and a gated RMSNorm (y * silu(z)) precedes the output projection. `prefill_scan`
runs the same state recurrence over a prompt of DimVar length `ctx_len`
(`for t in range(ctx_len)`, one token per trip, outputs gathered with
insert_slice).

`Mamba2_2_7B` holds LAYERS copies of this logical layer plus `embed`, `lm_head` and the
whole-model `decode_step`. `Mamba2LayerPlaced` is the decode step placed over the
whole device (docs/models.md): the input projections are GEMVs split over their
output features with the depthwise conv1d step fused into the xBC epilogue (each CTA
owns its channels); the SSD state update runs on a (HEAD_GROUPS x P_SPLITS) grid over
heads and head dimension, with the gated RMSNorm's sum of squares reduced across it;
the output projection is a GEMV again. The placed roots `Mamba2_2_7B_H200` and
`Mamba2_2_7B_B200` hold LAYERS copies. Bind: --dim ctx_len=4096 (prefill_scan only;
decode is static).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.models.zoo_layers import attach_layers, lazy_roots, published_root
from tilefoundry.target import CudaTarget

# config (state-spaces/mamba2-2.7b: d_model 2560, 64 layers, expand 2, d_state 128, headdim
# 64, d_conv 4, ngroups 1, vocabulary 50277 padded to a multiple of 16)
VOCAB = 50288
D_MODEL = 2560
EXPAND = 2
D_INNER = EXPAND * D_MODEL
D_STATE = 128
HEAD_P = 64
N_HEADS = D_INNER // HEAD_P
D_CONV = 4
CONV_CH = D_INNER + 2 * D_STATE
LAYERS = 64
EPS = 1e-5
MAX_PROMPT = 16384
INV_D = 1.0 / D_MODEL
CTX_LEN = DimVar("ctx_len", 1, MAX_PROMPT + 1)
CTAS = 8
LEVELS = (Topology("cta", CTAS),)

# the Hugging Face checkpoint (transformers' Mamba2ForCausalLM layout: state-spaces'
# original files are converted by transformers' Mamba-2 conversion script first).
# config.json field -> the constant it must equal; HF_FIXED: fields that must hold
HF_MODEL_TYPE = "mamba2"
HF_CONFIG = {"vocab_size": "VOCAB", "hidden_size": "D_MODEL", "expand": "EXPAND", "state_size": "D_STATE",
             "head_dim": "HEAD_P", "num_heads": "N_HEADS", "conv_kernel": "D_CONV",
             "num_hidden_layers": "LAYERS", "layer_norm_epsilon": "EPS"}
HF_FIXED = {"n_groups": 1, "use_bias": False, "use_conv_bias": True}
# in_proj is fused [z | xBC | dt] (rows of its (out, in) weight); conv1d's (CONV_CH, 1,
# D_CONV) weight is laid out tap-major; D is the per-head skip
HF_LAYER_WEIGHTS = {
    "norm": ("backbone.layers.{i}.norm.weight", ""),
    "w_z": ("backbone.layers.{i}.mixer.in_proj.weight", "rows(0, D_INNER); T"),
    "w_xbc": ("backbone.layers.{i}.mixer.in_proj.weight", "rows(D_INNER, D_INNER + CONV_CH); T"),
    "w_dt": ("backbone.layers.{i}.mixer.in_proj.weight", "rows(D_INNER + CONV_CH, D_INNER + CONV_CH + N_HEADS); T"),
    "conv_w": ("backbone.layers.{i}.mixer.conv1d.weight", "reshape(CONV_CH, D_CONV); T"),
    "conv_b": ("backbone.layers.{i}.mixer.conv1d.bias", ""),
    "dt_bias": ("backbone.layers.{i}.mixer.dt_bias", ""),
    "a_log": ("backbone.layers.{i}.mixer.A_log", ""),
    "d_skip": ("backbone.layers.{i}.mixer.D", "reshape(N_HEADS, 1)"),
    "gate_norm": ("backbone.layers.{i}.mixer.norm.weight", ""),
    "w_out": ("backbone.layers.{i}.mixer.out_proj.weight", "T"),
}
HF_ROOT_WEIGHTS = {
    "table": ("backbone.embeddings.weight", ""),
    "final_norm": ("backbone.norm_f.weight", ""),
    "w_vocab": ("lm_head.weight", "T"),
}
# a reduced config (tilefoundry.models.reduced) keeps each placement constant the
# largest power of two, at most its published value, dividing every figure listed
REDUCE_RULES = {
    "CTAS": ("D_MODEL", "D_INNER", "CONV_CH"),
    "PLACED_CTAS": ("D_MODEL", "D_INNER", "CONV_CH"),
    "HEAD_GROUPS": ("N_HEADS", "PLACED_CTAS"),
    "IN_TK": ("D_MODEL",), "OUT_TK": ("D_INNER",), "VOCAB_CTAS": ("VOCAB", "PLACED_CTAS"), "VOCAB_TK": ("D_MODEL",),
}
REDUCE_REQUIRES = ("N_HEADS * HEAD_P == D_INNER", "HEAD_P % P_SPLITS == 0", "N_HEADS <= PLACED_CTAS")

# placement on the whole device: 128 CTAs divide D_MODEL, D_INNER and CONV_CH; dt
# (one column per head) runs on N_HEADS of them, the state update on a 16 x 8 grid
# of heads x head dimension, the vocabulary (50288 = 112 * 449) on VOCAB_CTAS
PLACED_CTAS = 128
HEAD_GROUPS = 16
P_SPLITS = PLACED_CTAS // HEAD_GROUPS
INV_INNER = 1.0 / D_INNER
IN_TK = 128
OUT_TK = 512
VOCAB_CTAS = 112
VOCAB_TK = 32
PLACED_LEVELS = (Topology("cta", PLACED_CTAS),)


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


@module(entry="decoder_layer", topologies=PLACED_LEVELS)
class Mamba2LayerPlaced:
    @func
    def rms(x: Tensor[(1, D_MODEL), "bf16"], w: ConstTensor[(D_MODEL,), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        # the prologue of the GEMVs that read it: every CTA normalises the whole row
        with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as _all:
            x32 = tf.cast(tf.reshard(x, (1, D_MODEL), "smem"), "f32")
            ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_D
            return tf.cast(x32 * tf.rsqrt(ms + EPS), "bf16") * tf.reshard(w, (D_MODEL,), "smem")

    @func
    def in_proj(
        h: Tensor[(1, D_MODEL), "bf16"],
        conv_state: Tensor[(1, D_CONV, CONV_CH), "bf16"],
        w_z: ConstTensor[(D_MODEL, D_INNER), "bf16"],
        w_xbc: ConstTensor[(D_MODEL, CONV_CH), "bf16"],
        w_dt: ConstTensor[(D_MODEL, N_HEADS), "bf16"],
        conv_w: ConstTensor[(D_CONV, CONV_CH), "bf16"],
        conv_b: ConstTensor[(CONV_CH,), "bf16"],
        dt_bias: ConstTensor[(N_HEADS,), "f32"],
    ):
        # one GEMV kernel over the z and xBC columns (each CTA owns D_INNER/PLACED_CTAS and
        # CONV_CH/PLACED_CTAS of them): the conv1d step is its xBC epilogue (a CTA's
        # channels are its own), dt one column per head on N_HEADS CTAs
        with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
            h32 = tf.cast(tf.reshard(h, (1, D_MODEL), "smem"), "f32")
            acc_z = tf.zeros(Tensor[(1, D_INNER @ g.n), "f32", "rmem"])
            acc_x = tf.zeros(Tensor[(1, CONV_CH @ g.n), "f32", "rmem"])
            for kk in tile(D_MODEL, IN_TK):
                wz_t = tf.cast(tf.reshard(w_z[kk, :], (IN_TK, D_INNER @ g.n), "smem"), "f32")
                wx_t = tf.cast(tf.reshard(w_xbc[kk, :], (IN_TK, CONV_CH @ g.n), "smem"), "f32")
                acc_z = acc_z + tf.reshard(tf.matmul(h32[:, kk], wz_t), (1, D_INNER @ g.n), "rmem")
                acc_x = acc_x + tf.reshard(tf.matmul(h32[:, kk], wx_t), (1, CONV_CH @ g.n), "rmem")
            z = tf.reshard(tf.cast(tf.cast(acc_z, "bf16"), "f32"), (1, D_INNER @ g.n), "gmem")
            xbc = tf.reshape(tf.reshard(tf.cast(acc_x, "bf16"), (1, CONV_CH @ g.n), "smem"), (1, 1, CONV_CH))
            state_s = tf.reshard(conv_state[:, 1:D_CONV, :], (1, D_CONV - 1, CONV_CH @ g.n), "smem")
            shifted = tf.concat(state_s, xbc, axis=1)
            mixed = tf.reduce(tf.cast(shifted * tf.reshard(conv_w, (D_CONV, CONV_CH @ g.n), "smem"), "f32"), (1,), False, ReduceKind.SUM)
            act = tf.silu(mixed + tf.cast(tf.reshard(conv_b, (CONV_CH @ g.n,), "smem"), "f32"))
            xbc_act = tf.reshard(act, (1, CONV_CH @ g.n), "gmem")
            conv_new = tf.reshard(shifted, (1, D_CONV, CONV_CH @ g.n), "gmem")
            with g[:N_HEADS] as hd:
                w_d = tf.cast(tf.reshard(w_dt, (D_MODEL, N_HEADS @ hd.n), "smem"), "f32")
                dt_raw = tf.cast(tf.cast(tf.matmul(h32, w_d), "bf16"), "f32")
                dt_b = tf.reshard(dt_bias, (N_HEADS @ hd.n,), "smem")
                dt = tf.reshard(tf.softplus(dt_raw + dt_b), (1, N_HEADS @ hd.n), "gmem")
            return z, xbc_act, conv_new, dt

    @func
    def ssm(
        z: Tensor[(1, D_INNER), "f32"],
        xbc_act: Tensor[(1, CONV_CH), "f32"],
        dt: Tensor[(1, N_HEADS), "f32"],
        ssm_state: Tensor[(1, N_HEADS, HEAD_P, D_STATE), "f32"],
        a_log: ConstTensor[(N_HEADS,), "f32"],
        d_skip: ConstTensor[(N_HEADS, 1), "f32"],
        gate_norm: ConstTensor[(D_INNER,), "f32"],
    ):
        # the SSD state update on a HEAD_GROUPS x P_SPLITS grid: CTA (hg, pp) holds
        # N_HEADS/HEAD_GROUPS heads x HEAD_P/P_SPLITS rows of their states; B and C are
        # read by all; the gated RMSNorm's sum of squares is reduced over the grid
        # (a gmem -> gmem reshard only relabels who owns what, moving nothing: it lets
        # this grid read the row that the in-projection's CTAs wrote in their split)
        with Mesh(("cta",), (HEAD_GROUPS, P_SPLITS), ("hg", "pp")) as m:
            xbc = tf.reshard(xbc_act, (1, CONV_CH), "gmem")
            x_all = tf.reshape(xbc[:, 0:D_INNER], (1, N_HEADS, HEAD_P, 1))
            x = tf.reshard(x_all, (1, N_HEADS @ m.hg, HEAD_P @ m.pp, 1), "smem")
            b = tf.reshard(tf.reshape(xbc[:, D_INNER:D_INNER + D_STATE], (1, 1, 1, D_STATE)), (1, 1, 1, D_STATE), "smem")
            c = tf.reshard(tf.reshape(xbc[:, D_INNER + D_STATE:CONV_CH], (1, 1, D_STATE, 1)), (1, 1, D_STATE, 1), "smem")
            dt_row = tf.reshard(dt, (1, N_HEADS), "gmem")
            dt4 = tf.reshard(tf.reshape(dt_row, (1, N_HEADS, 1, 1)), (1, N_HEADS @ m.hg, 1, 1), "smem")
            a = tf.reshard(tf.reshape(a_log, (1, N_HEADS, 1, 1)), (1, N_HEADS @ m.hg, 1, 1), "smem")
            decay = tf.exp(dt4 * (tf.exp(a) * -1.0))
            state_in = tf.reshard(ssm_state, (1, N_HEADS @ m.hg, HEAD_P @ m.pp, D_STATE), "smem")
            state = state_in * decay + (dt4 * x) * b
            skip = tf.reshard(tf.reshape(d_skip, (1, N_HEADS, 1, 1)), (1, N_HEADS @ m.hg, 1, 1), "smem")
            y = tf.matmul(state, c) + x * skip
            z_row = tf.reshard(z, (1, D_INNER), "gmem")
            z4 = tf.reshard(tf.reshape(z_row, (1, N_HEADS, HEAD_P, 1)), (1, N_HEADS @ m.hg, HEAD_P @ m.pp, 1), "smem")
            gated = y * tf.silu(z4)
            ms = tf.reduce(gated * gated, (1, 2, 3), True, ReduceKind.SUM) * INV_INNER
            w4 = tf.reshard(tf.reshape(gate_norm, (1, N_HEADS, HEAD_P, 1)), (1, N_HEADS @ m.hg, HEAD_P @ m.pp, 1), "smem")
            normed = tf.cast(gated * tf.rsqrt(ms + EPS) * w4, "bf16")
            out = tf.reshard(tf.reshard(normed, (1, N_HEADS @ m.hg, HEAD_P @ m.pp, 1), "gmem"), (1, N_HEADS, HEAD_P, 1), "gmem")
            state_out = tf.reshard(state, (1, N_HEADS @ m.hg, HEAD_P @ m.pp, D_STATE), "gmem")
            return tf.reshape(out, (1, D_INNER)), state_out

    @func
    def out_proj(y: Tensor[(1, D_INNER), "bf16"], w_out: ConstTensor[(D_INNER, D_MODEL), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
            y32 = tf.cast(tf.reshard(y, (1, D_INNER), "smem"), "f32")
            acc = tf.zeros(Tensor[(1, D_MODEL @ g.n), "f32", "rmem"])
            for kk in tile(D_INNER, OUT_TK):
                w_t = tf.cast(tf.reshard(w_out[kk, :], (OUT_TK, D_MODEL @ g.n), "smem"), "f32")
                acc = acc + tf.reshard(tf.matmul(y32[:, kk], w_t), (1, D_MODEL @ g.n), "rmem")
            return tf.reshard(tf.cast(acc, "bf16"), (1, D_MODEL @ g.n), "gmem")

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
        z, xbc_act, conv_new, dt = in_proj(h, conv_state, w_z, w_xbc, w_dt, conv_w, conv_b, dt_bias)
        y, state = ssm(z, xbc_act, dt, ssm_state, a_log, d_skip, gate_norm)
        return out_proj(y, w_out), conv_new, state

    @func
    def residual(x: Tensor[(1, D_MODEL), "bf16"], y: Tensor[(1, D_MODEL), "bf16"]) -> Tensor[(1, D_MODEL), "bf16"]:
        with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
            total = tf.reshard(x, (1, D_MODEL @ g.n), "smem") + tf.reshard(y, (1, D_MODEL @ g.n), "smem")
            return tf.reshard(total, (1, D_MODEL @ g.n), "gmem")

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
        return residual(x, out), conv_new, state


def decode_model(name, target, placed):
    """A root: LAYERS copies of the logical (`placed=False`) or placed layer, `embed`,
    `lm_head` and the entry `decode_step` (embedding, every layer, head)."""
    layer, levels = (Mamba2LayerPlaced, PLACED_LEVELS) if placed else (Mamba2Layer, LEVELS)

    @module(entry="decode_step", target=target, topologies=levels)
    class Mamba2Decode:
        attach_layers(locals(), layer, LAYERS)

        if placed:
            @func
            def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
                # the token's row, read at a run-time start and split over the CTAs
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    t = tf.reshape(token, ())
                    row = tf.reshard(table[t : t + 1, :], (1, D_MODEL @ g.n), "smem")
                    return tf.reshard(row, (1, D_MODEL @ g.n), "gmem")

            @func
            def lm_head(
                h: Tensor[(1, D_MODEL), "bf16"],
                final_norm: ConstTensor[(D_MODEL,), "bf16"],
                w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
            ) -> Tensor[(1, VOCAB), "f32"]:
                # RMSNorm prologue, then a GEMV split over the vocabulary on VOCAB_CTAS CTAs
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    with g[:VOCAB_CTAS] as v:
                        hn = tf.rms_norm(tf.reshard(h, (1, D_MODEL), "smem"), tf.reshard(final_norm, (D_MODEL,), "smem"), EPS)
                        h32 = tf.cast(hn, "f32")
                        acc = tf.zeros(Tensor[(1, VOCAB @ v.n), "f32", "rmem"])
                        for kk in tile(D_MODEL, VOCAB_TK):
                            w_t = tf.cast(tf.reshard(w_vocab[kk, :], (VOCAB_TK, VOCAB @ v.n), "smem"), "f32")
                            acc = acc + tf.reshard(tf.matmul(h32[:, kk], w_t), (1, VOCAB @ v.n), "rmem")
                        return tf.reshard(tf.cast(tf.cast(acc, "bf16"), "f32"), (1, VOCAB @ v.n), "gmem")
        else:
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

        @func
        def decode_step(
            token: Tensor[(1,), "i64"],
            conv_states: Tensor[(LAYERS, 1, D_CONV, CONV_CH), "bf16"],
            ssm_states: Tensor[(LAYERS, 1, N_HEADS, HEAD_P, D_STATE), "f32"],
            table: ConstTensor[(VOCAB, D_MODEL), "bf16"],
            final_norm: ConstTensor[(D_MODEL,), "bf16"],
            w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
        ) -> Tensor[(1, VOCAB), "f32"]:
            h = embed(table, token)
            h = layer0(h, conv_states[0, :, :, :], ssm_states[0, :, :, :, :])[0]
            h = layer1(h, conv_states[1, :, :, :], ssm_states[1, :, :, :, :])[0]
            h = layer2(h, conv_states[2, :, :, :], ssm_states[2, :, :, :, :])[0]
            h = layer3(h, conv_states[3, :, :, :], ssm_states[3, :, :, :, :])[0]
            h = layer4(h, conv_states[4, :, :, :], ssm_states[4, :, :, :, :])[0]
            h = layer5(h, conv_states[5, :, :, :], ssm_states[5, :, :, :, :])[0]
            h = layer6(h, conv_states[6, :, :, :], ssm_states[6, :, :, :, :])[0]
            h = layer7(h, conv_states[7, :, :, :], ssm_states[7, :, :, :, :])[0]
            h = layer8(h, conv_states[8, :, :, :], ssm_states[8, :, :, :, :])[0]
            h = layer9(h, conv_states[9, :, :, :], ssm_states[9, :, :, :, :])[0]
            h = layer10(h, conv_states[10, :, :, :], ssm_states[10, :, :, :, :])[0]
            h = layer11(h, conv_states[11, :, :, :], ssm_states[11, :, :, :, :])[0]
            h = layer12(h, conv_states[12, :, :, :], ssm_states[12, :, :, :, :])[0]
            h = layer13(h, conv_states[13, :, :, :], ssm_states[13, :, :, :, :])[0]
            h = layer14(h, conv_states[14, :, :, :], ssm_states[14, :, :, :, :])[0]
            h = layer15(h, conv_states[15, :, :, :], ssm_states[15, :, :, :, :])[0]
            h = layer16(h, conv_states[16, :, :, :], ssm_states[16, :, :, :, :])[0]
            h = layer17(h, conv_states[17, :, :, :], ssm_states[17, :, :, :, :])[0]
            h = layer18(h, conv_states[18, :, :, :], ssm_states[18, :, :, :, :])[0]
            h = layer19(h, conv_states[19, :, :, :], ssm_states[19, :, :, :, :])[0]
            h = layer20(h, conv_states[20, :, :, :], ssm_states[20, :, :, :, :])[0]
            h = layer21(h, conv_states[21, :, :, :], ssm_states[21, :, :, :, :])[0]
            h = layer22(h, conv_states[22, :, :, :], ssm_states[22, :, :, :, :])[0]
            h = layer23(h, conv_states[23, :, :, :], ssm_states[23, :, :, :, :])[0]
            h = layer24(h, conv_states[24, :, :, :], ssm_states[24, :, :, :, :])[0]
            h = layer25(h, conv_states[25, :, :, :], ssm_states[25, :, :, :, :])[0]
            h = layer26(h, conv_states[26, :, :, :], ssm_states[26, :, :, :, :])[0]
            h = layer27(h, conv_states[27, :, :, :], ssm_states[27, :, :, :, :])[0]
            h = layer28(h, conv_states[28, :, :, :], ssm_states[28, :, :, :, :])[0]
            h = layer29(h, conv_states[29, :, :, :], ssm_states[29, :, :, :, :])[0]
            h = layer30(h, conv_states[30, :, :, :], ssm_states[30, :, :, :, :])[0]
            h = layer31(h, conv_states[31, :, :, :], ssm_states[31, :, :, :, :])[0]
            h = layer32(h, conv_states[32, :, :, :], ssm_states[32, :, :, :, :])[0]
            h = layer33(h, conv_states[33, :, :, :], ssm_states[33, :, :, :, :])[0]
            h = layer34(h, conv_states[34, :, :, :], ssm_states[34, :, :, :, :])[0]
            h = layer35(h, conv_states[35, :, :, :], ssm_states[35, :, :, :, :])[0]
            h = layer36(h, conv_states[36, :, :, :], ssm_states[36, :, :, :, :])[0]
            h = layer37(h, conv_states[37, :, :, :], ssm_states[37, :, :, :, :])[0]
            h = layer38(h, conv_states[38, :, :, :], ssm_states[38, :, :, :, :])[0]
            h = layer39(h, conv_states[39, :, :, :], ssm_states[39, :, :, :, :])[0]
            h = layer40(h, conv_states[40, :, :, :], ssm_states[40, :, :, :, :])[0]
            h = layer41(h, conv_states[41, :, :, :], ssm_states[41, :, :, :, :])[0]
            h = layer42(h, conv_states[42, :, :, :], ssm_states[42, :, :, :, :])[0]
            h = layer43(h, conv_states[43, :, :, :], ssm_states[43, :, :, :, :])[0]
            h = layer44(h, conv_states[44, :, :, :], ssm_states[44, :, :, :, :])[0]
            h = layer45(h, conv_states[45, :, :, :], ssm_states[45, :, :, :, :])[0]
            h = layer46(h, conv_states[46, :, :, :], ssm_states[46, :, :, :, :])[0]
            h = layer47(h, conv_states[47, :, :, :], ssm_states[47, :, :, :, :])[0]
            h = layer48(h, conv_states[48, :, :, :], ssm_states[48, :, :, :, :])[0]
            h = layer49(h, conv_states[49, :, :, :], ssm_states[49, :, :, :, :])[0]
            h = layer50(h, conv_states[50, :, :, :], ssm_states[50, :, :, :, :])[0]
            h = layer51(h, conv_states[51, :, :, :], ssm_states[51, :, :, :, :])[0]
            h = layer52(h, conv_states[52, :, :, :], ssm_states[52, :, :, :, :])[0]
            h = layer53(h, conv_states[53, :, :, :], ssm_states[53, :, :, :, :])[0]
            h = layer54(h, conv_states[54, :, :, :], ssm_states[54, :, :, :, :])[0]
            h = layer55(h, conv_states[55, :, :, :], ssm_states[55, :, :, :, :])[0]
            h = layer56(h, conv_states[56, :, :, :], ssm_states[56, :, :, :, :])[0]
            h = layer57(h, conv_states[57, :, :, :], ssm_states[57, :, :, :, :])[0]
            h = layer58(h, conv_states[58, :, :, :], ssm_states[58, :, :, :, :])[0]
            h = layer59(h, conv_states[59, :, :, :], ssm_states[59, :, :, :, :])[0]
            h = layer60(h, conv_states[60, :, :, :], ssm_states[60, :, :, :, :])[0]
            h = layer61(h, conv_states[61, :, :, :], ssm_states[61, :, :, :, :])[0]
            h = layer62(h, conv_states[62, :, :, :], ssm_states[62, :, :, :, :])[0]
            h = layer63(h, conv_states[63, :, :, :], ssm_states[63, :, :, :, :])[0]
            return lm_head(h, final_norm, w_vocab)

    return published_root(Mamba2Decode, name)


# each root is built when first asked for (PEP 562): a selection uses one of the four
__getattr__, __dir__ = lazy_roots(globals(), {
    "Mamba2_2_7B": lambda: decode_model("Mamba2_2_7B", CudaTarget("nvidia.h200_sxm"), placed=False),
    "Mamba2_2_7B_H100": lambda: decode_model("Mamba2_2_7B_H100", CudaTarget("nvidia.h100_sxm"), placed=True),
    "Mamba2_2_7B_H200": lambda: decode_model("Mamba2_2_7B_H200", CudaTarget("nvidia.h200_sxm"), placed=True),
    "Mamba2_2_7B_B200": lambda: decode_model("Mamba2_2_7B_B200", CudaTarget("nvidia.b200_sxm"), placed=True),
})
