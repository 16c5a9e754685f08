"""Llama-style decoder layer built by a module factory `build(config)` from a frozen
config dataclass: annotations read `config.max_position_embeddings`, factory locals
(`D`, `HD`, `SEQ = DimVar(...)`) and a config property; RoPE unpacked with
`q_r, k_r = tf.rope(...)`; GQA by repeat_interleave; the root attaches the layer as a
child and calls it with activations only. Bound: --dim seq=16.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@dataclass(frozen=True)
class LlamaConfig:
    hidden_size: int = 256
    intermediate_size: int = 512
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    rms_norm_eps: float = 1e-5
    max_position_embeddings: int = 2048

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


def build(config: LlamaConfig):
    D = config.hidden_size
    F = config.intermediate_size
    H = config.num_attention_heads
    KV = config.num_key_value_heads
    HD = config.head_dim
    SEQ = DimVar("seq", 1, 129)
    eps = config.rms_norm_eps

    @module(entry="decoder_layer")
    class DecoderLayer:
        @func
        def rms(x: Tensor[(SEQ, D), "bf16"], w: ConstTensor[(D,), "f32"]) -> Tensor[(SEQ, D), "bf16"]:
            return tf.rms_norm(x, w, eps=config.rms_norm_eps)

        @func
        def mlp(x: Tensor[(SEQ, D), "bf16"], w_gate: ConstTensor[(D, F), "bf16"],
                w_up: ConstTensor[(D, F), "bf16"], w_down: ConstTensor[(F, D), "bf16"]) -> Tensor[(SEQ, D), "bf16"]:
            return (tf.silu(x @ w_gate) * (x @ w_up)) @ w_down

        @func
        def attn(x: Tensor[(SEQ, D), "bf16"], wq: ConstTensor[(D, H * HD), "bf16"],
                 wk: ConstTensor[(D, KV * HD), "bf16"], wv: ConstTensor[(D, KV * HD), "bf16"],
                 wo: ConstTensor[(H * HD, D), "bf16"],
                 cos: Tensor[(config.max_position_embeddings, HD), "f32"],
                 sin: Tensor[(config.max_position_embeddings, HD), "f32"],
                 pos: Tensor[(SEQ,), "i64"]) -> Tensor[(SEQ, D), "bf16"]:
            q = tf.reshape(x @ wq, (1, SEQ, H, HD))
            k = tf.reshape(x @ wk, (1, SEQ, KV, HD))
            v = tf.reshape(x @ wv, (1, SEQ, KV, HD))
            q_r, k_r = tf.rope(tf.cast(q, "f32"), tf.cast(k, "f32"), cos, sin, pos)
            qt = tf.transpose(q_r, (0, 2, 1, 3))
            kt = tf.repeat_interleave(tf.transpose(k_r, (0, 2, 3, 1)), H // KV, 1)
            vt = tf.repeat_interleave(tf.transpose(tf.cast(v, "f32"), (0, 2, 1, 3)), H // KV, 1)
            scores = (qt @ kt) * (1.0 / HD ** 0.5)
            probs = tf.softmax(scores, axis=-1)
            ctx = tf.transpose(probs @ vt, (0, 2, 1, 3))
            return tf.cast(tf.reshape(ctx, (SEQ, H * HD)), "bf16") @ wo

        @func
        def decoder_layer(x: Tensor[(SEQ, D), "bf16"],
                          cos: Tensor[(config.max_position_embeddings, HD), "f32"],
                          sin: Tensor[(config.max_position_embeddings, HD), "f32"],
                          pos: Tensor[(SEQ,), "i64"],
                          ln1: ConstTensor[(D,), "f32"], ln2: ConstTensor[(D,), "f32"],
                          wq: ConstTensor[(D, H * HD), "bf16"],
                          wk: ConstTensor[(D, KV * HD), "bf16"], wv: ConstTensor[(D, KV * HD), "bf16"],
                          wo: ConstTensor[(H * HD, D), "bf16"],
                          w_gate: ConstTensor[(D, F), "bf16"], w_up: ConstTensor[(D, F), "bf16"],
                          w_down: ConstTensor[(F, D), "bf16"]) -> Tensor[(SEQ, D), "bf16"]:
            h = x + attn(rms(x, ln1), wq, wk, wv, wo, cos, sin, pos)
            return h + mlp(rms(h, ln2), w_gate, w_up, w_down)

        def forward(self, x):
            return x

    @module(entry="step", target=CudaTarget("nvidia.h200_sxm"))
    class Model:
        layer = DecoderLayer

        @func
        def step(x: Tensor[(SEQ, D), "bf16"],
                 cos: Tensor[(config.max_position_embeddings, HD), "f32"],
                 sin: Tensor[(config.max_position_embeddings, HD), "f32"],
                 pos: Tensor[(SEQ,), "i64"]) -> Tensor[(SEQ, D), "bf16"]:
            return layer(x, cos, sin, pos)

    return Model


Llama = build(LlamaConfig())
