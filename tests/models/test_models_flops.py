"""Whole-program compute-cost of each zoo model's layer0 entry, derived by hand
from the model's config constants (companions §5: MatMul = 2·M·K·N under the lhs
dtype; RMSNorm = 8·numel f32; RoPE = 3·numel(q + k) under q's dtype; Reduce = numel
of the source; SoftMax, Silu, Gelu, Tanh, Sigmoid, Softplus, Cast = numel of the
result under the result dtype; a Binary = numel of the result; rsqrt/exp are
`special` service, not flops; reshape, transpose, slice, concat, split, reshard,
index_select, cache_update, full_like and insert_slice do no work). A Call inside a
`tile` / `range` loop that depends on the loop counts once per trip. The valid-length
mask (issue 39) is service: one `predicate` per cache row compared with the position
(Phi-3's sliding window three, and one `integer` subtraction) and one `select` per score.

Every expected figure below is computed from the constants of the model file with
an explicit formula; none is a pasted tool output.
"""
from __future__ import annotations

import importlib

import pytest

from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.dsl.loader import load_selection
from tilefoundry.models import CTX_LEN, Selection, model_named

L = CTX_LEN  # the ctx_len binding of every selection that states it


def _whole(model_name: str, selector: str, dims: dict | None):
    model = model_named(model_name)
    module, function = load_selection(model.source_arg(Selection(selector)))
    result = analyze(module, function, analysis="compute-cost", dims=dims)
    record = result.function.get_metadata(ComputeCostMetadata)
    return dict(record.flops), dict(record.service)


def _config(file_stem: str):
    """The model file's module-level constants (importing it runs the DSL once)."""
    return importlib.import_module(f"tilefoundry.models.{file_stem}")


def _rms_by_hand(d):
    """the hand-written RMSNorm `rms`: cast f32 (d), x*x (d), reduce (d), *1/d (1),
    +eps (1), x*rsqrt (d) in f32; cast bf16 (d), *w (d) in bf16; one rsqrt."""
    return {"f32": 4 * d + 2, "bf16": 2 * d}, {"special": 1}


def _mask(rows, scores, compares=1):
    """the valid-length mask's service: `compares` predicates per cache row, a select
    per score"""
    return {"predicate": compares * rows, "select": scores}


def _add(total, part):
    for k, v in part.items():
        total[k] = total.get(k, 0) + v


def test_llama3_8b_layer0_flops():
    """Llama3_8B.layer0 = decoder_layer (the logical `attention`: a whole-cache softmax),
    D=4096, n_q=32, n_kv=8, hd=128, F=14336, ctx L=4096:

    bf16: 2·D·(n_q+2·n_kv)·hd (QKV) + n_kv·hd (cast k_rot) + n_q·hd (cast merged)
          + 2·n_q·hd·D (o_proj) + 3·2·D·F (gate, up, down) + 2·F (silu, *)
          + 2·D (residuals) + 2·2·D (two rms)
    f32:  2·(4D+2) (two rms) + (n_q+n_kv)·hd (casts) + 3·(n_q+n_kv)·hd (rope)
          + 2·L·n_kv·hd (cast caches) + 2·n_q·hd·L (q·kᵀ) + 2·n_q·L (·scale, softmax)
          + 2·n_q·L·hd (p·v)
    special: 2 (rsqrt); the mask over L rows, n_q·L scores
    """
    c = _config("llama3_8b")
    D, NQ, NKV, HD, F = c.D_MODEL, c.N_Q, c.N_KV, c.HEAD_DIM, c.FFN
    bf16 = (2 * D * (NQ + 2 * NKV) * HD + NKV * HD + NQ * HD + 2 * NQ * HD * D
            + 3 * 2 * D * F + 2 * F + 2 * D + 2 * 2 * D)
    f32 = (2 * (4 * D + 2) + (NQ + NKV) * HD + 3 * (NQ + NKV) * HD + 2 * L * NKV * HD
           + 2 * NQ * HD * L + 2 * NQ * L + 2 * NQ * L * HD)
    flops, service = _whole("llama3-8b", "Llama3_8B.layer0", {"ctx_len": L})
    assert flops == {"bf16": bf16, "f32": f32}
    assert service == {"special": 2, **_mask(L, NQ * L)}


def test_qwen3_moe_layer0_flops():
    """Qwen3Moe.layer0 = decoder_layer, D=2048, n_q=32, n_kv=4, hd=128, E=128 experts,
    top-k K=8, expert F_e=768, no shared expert, ctx L=4096 (whole-cache softmax):

    attention  bf16: 2·D·(n_q+2·n_kv)·hd + n_kv·hd (cast k_rot) + n_q·hd (cast merged)
                     + 2·n_q·hd·D
               f32:  8·(n_q+n_kv)·hd (q/k rms_norm) + (n_q+n_kv)·hd (casts)
                     + 3·(n_q+n_kv)·hd (rope) + 2·L·n_kv·hd (cast caches)
                     + 2·n_q·hd·L (q·kᵀ) + 2·n_q·L (·scale, softmax) + 2·n_q·L·hd (p·v)
    router     bf16: 2·D·E;  f32: E (cast) + E (softmax) + E (topk) + 2·K (sum, /)
    routed     bf16: 3·2·K·D·F_e + 2·K·F_e (silu, *) + D (cast);  f32: 3·K·D (cast, ·w, sum)
    rest       bf16: 2·D (residuals) + 2·2·D;  f32: 2·(4D+2) (two rms)
    special: 2 (rsqrt); the mask over L rows, n_q·L scores
    """
    c = _config("qwen3_moe")
    D, NQ, NKV, HD = c.D_MODEL, c.N_Q, c.N_KV, c.HEAD_DIM
    E, K, FE = c.EXPERTS, c.TOP_K, c.EXPERT_FFN
    bf16 = (2 * D * (NQ + 2 * NKV) * HD + NKV * HD + NQ * HD + 2 * NQ * HD * D
            + 2 * D * E
            + 3 * 2 * K * D * FE + 2 * K * FE + D
            + 2 * D + 2 * 2 * D)
    f32 = (8 * (NQ + NKV) * HD + (NQ + NKV) * HD + 3 * (NQ + NKV) * HD + 2 * L * NKV * HD
           + 2 * NQ * HD * L + 2 * NQ * L + 2 * NQ * L * HD
           + 3 * E + 2 * K
           + 3 * K * D
           + 2 * (4 * D + 2))
    flops, service = _whole("qwen3-moe", "Qwen3Moe.layer0", {"ctx_len": L})
    assert flops == {"bf16": bf16, "f32": f32}
    assert service == {"special": 2, **_mask(L, NQ * L)}


def test_deepseek_v3_mla_layer0_flops():
    """DeepSeekV3.layer0 = decoder_layer, D=7168, H=128 heads, q rank R_q=1536, kv rank
    R_kv=512, nope 128, rope 64, v 128, F=18432, ctx L=4096, absorbed MLA:

    q path     bf16: 2·D·R_q + 2·R_q·H·(nope+rope);  f32: 8·R_q (q_a rms_norm)
    kv path    bf16: 2·D·R_kv + 2·D·rope + rope (cast k_rot);  f32: 8·R_kv (kv_a rms_norm)
    rope       f32: H·rope + rope (casts) + 3·(H·rope + rope)
    absorb     bf16: 2·H·nope·R_kv (q_nope·w_uk);  f32: H·R_kv (cast) + L·(R_kv+rope) (casts)
    scores     f32: 2·H·R_kv·L + 2·H·rope·L + 3·H·L (+, ·scale, softmax)
    output     f32: 2·H·L·R_kv (p·latent);  bf16: H·R_kv (cast) + 2·H·R_kv·v (·w_uv)
                     + 2·H·v·D (o_proj)
    rest       bf16: 3·2·D·F + 2·F + 2·D + 2·2·D;  f32: 2·(4D+2);  special: 2
    mask       L rows, H·L scores
    """
    c = _config("deepseek_v3_mla")
    D, H, RQ, RKV = c.D_MODEL, c.N_HEADS, c.Q_RANK, c.KV_RANK
    NOPE, ROPE, V, F = c.NOPE_DIM, c.ROPE_DIM, c.V_DIM, c.FFN
    bf16 = (2 * D * RQ + 2 * RQ * H * (NOPE + ROPE)
            + 2 * D * RKV + 2 * D * ROPE + ROPE
            + 2 * H * NOPE * RKV
            + H * RKV + 2 * H * RKV * V + 2 * H * V * D
            + 3 * 2 * D * F + 2 * F + 2 * D + 2 * 2 * D)
    f32 = (8 * RQ + 8 * RKV
           + H * ROPE + ROPE + 3 * (H * ROPE + ROPE)
           + H * RKV + L * (RKV + ROPE)
           + 2 * H * RKV * L + 2 * H * ROPE * L + 3 * H * L
           + 2 * H * L * RKV
           + 2 * (4 * D + 2))
    flops, service = _whole("deepseek-v3-mla", "DeepSeekV3.layer0", {"ctx_len": L})
    assert flops == {"bf16": bf16, "f32": f32}
    assert service == {"special": 2, **_mask(L, H * L)}


def test_deepseek_v3_moe_layer3_flops():
    """DeepSeekV3.layer3 (the first MoE layer) = layer0's MLA and norms with the MoE
    block for the dense MLP: E=256 experts in G=8 groups of E/G, top-k K=8, expert and
    shared F_e = F_s = 2048:

    router     f32: D (cast h) + D·E (cast w) + 2·D·E + E (sigmoid) + E (+ bias)
                    + E (top-2 per group) + 2·G (their sum) + G (top groups) + E (top-k)
                    + K (sum) + 1 (+1e-20) + 2·K (/, ·scale);  service: G predicates, E selects
    routed     bf16: 3·2·K·D·F_e + 2·K·F_e (silu, *) + D (cast);  f32: 3·K·D (cast, ·w, sum)
    shared     bf16: 3·2·D·F_s + 2·F_s (silu, *);  moe sum bf16: D
    so layer3 = layer0 − the dense MLP (bf16 3·2·D·F + 2·F) + the above.
    """
    c = _config("deepseek_v3_mla")
    D, F, E, K, G = c.D_MODEL, c.FFN, c.EXPERTS, c.TOP_K, c.N_GROUP
    FE, FS, H = c.EXPERT_FFN, c.SHARED_FFN, c.N_HEADS
    dense, dense_service = _whole("deepseek-v3-mla", "DeepSeekV3.layer0", {"ctx_len": L})
    bf16 = (dense["bf16"] - (3 * 2 * D * F + 2 * F)
            + 3 * 2 * K * D * FE + 2 * K * FE + D + 3 * 2 * D * FS + 2 * FS + D)
    f32 = (dense["f32"] + D + D * E + 2 * D * E + E + E + E + 2 * G + G + E + K + 1 + 2 * K
           + 3 * K * D)
    flops, service = _whole("deepseek-v3-mla", "DeepSeekV3.layer3", {"ctx_len": L})
    assert flops == {"bf16": bf16, "f32": f32}
    assert service == {"special": 2, "predicate": L + G, "select": H * L + E}


def _gemma(kv):
    """Gemma-2 layer over a KV cache of `kv` positions, D=3584, n_q=16, n_kv=8, hd=256,
    F=14336:

    bf16: 2·D·(n_q+2·n_kv)·hd + n_kv·hd (cast k_rot) + n_q·hd (cast merged)
          + 2·n_q·hd·D + 3·2·D·F + 2·F (gelu, *) + 2·D (residuals)
    f32:  4·8·D (four rms_norm) + (n_q+n_kv)·hd (casts) + 3·(n_q+n_kv)·hd (rope)
          + 2·kv·n_kv·hd (cast caches) + 2·n_q·hd·kv (q·kᵀ)
          + 5·n_q·kv (·scale, ·1/cap, tanh, ·cap, softmax) + 2·n_q·kv·hd (p·v)
    """
    c = _config("gemma2_9b")
    D, NQ, NKV, HD, F = c.D_MODEL, c.N_Q, c.N_KV, c.HEAD_DIM, c.FFN
    bf16 = (2 * D * (NQ + 2 * NKV) * HD + NKV * HD + NQ * HD + 2 * NQ * HD * D
            + 3 * 2 * D * F + 2 * F + 2 * D)
    f32 = (4 * 8 * D + (NQ + NKV) * HD + 3 * (NQ + NKV) * HD + 2 * kv * NKV * HD
           + 2 * NQ * HD * kv + 5 * NQ * kv + 2 * NQ * kv * HD)
    return {"bf16": bf16, "f32": f32}


def test_gemma2_9b_sliding_layer0_flops():
    """Gemma2_9B.layer0 (sliding window): `_gemma(kv = WINDOW = 4096)`; no special work."""
    c = _config("gemma2_9b")
    flops, service = _whole("gemma2-9b", "Gemma2_9B.layer0", None)
    assert flops == _gemma(c.WINDOW)
    assert service == _mask(c.WINDOW, c.N_Q * c.WINDOW)


def test_gemma2_9b_global_layer1_flops():
    """Gemma2_9B.layer1 (global): `_gemma(kv = ctx_len)`, bound at 2048 here so it
    differs from the 4096-slot sliding window of layer0."""
    flops, service = _whole("gemma2-9b", "Gemma2_9B.layer1", {"ctx_len": 2048})
    assert flops == _gemma(2048)
    assert service == _mask(2048, _config("gemma2_9b").N_Q * 2048)


def test_mamba2_layer0_flops():
    """Mamba2_2_7B.layer0 = decoder_layer (one decode step), D=2560, d_inner DI=5120,
    d_state N=128, head P=64, H=80 heads, conv width 4 over C = DI + 2·N channels:

    projections bf16: 2·D·C (xBC) + 2·D·DI (z) + 2·D·H (dt) + 2·DI·D (out)
    conv step   bf16: 4·C (state·w);  f32: 4·C (cast) + 4·C (sum over taps) + C (cast b)
                      + C (+b) + C (silu)
    dt / decay  f32: DI (cast z) + H (cast dt) + H (+bias) + H (softplus) + H (neg A)
                     + H (dt·A)
    state       f32: H·P·N (state·decay) + H·P (dt·x) + H·P·N (·B) + H·P·N (+)
                     + 2·H·P·N (state·C)
    output      f32: 2·H·P (x·D, +) + DI (silu z) + DI (·) + 8·DI (gated rms_norm);
                bf16: DI (cast)
    rest        bf16: D (residual) + 2·D;  f32: 4·D + 2;  special: 1 (rsqrt) + 2·H (exp)
    """
    c = _config("mamba2_2_7b")
    D, DI, N, P, H, C = c.D_MODEL, c.D_INNER, c.D_STATE, c.HEAD_P, c.N_HEADS, c.CONV_CH
    W = c.D_CONV
    bf16 = (2 * D * C + 2 * D * DI + 2 * D * H + 2 * DI * D
            + W * C + DI + D + 2 * D)
    f32 = (W * C + W * C + C + C + C
           + DI + 5 * H
           + 3 * H * P * N + H * P + 2 * H * P * N
           + 2 * H * P + 2 * DI + 8 * DI
           + 4 * D + 2)
    flops, service = _whole("mamba2-2.7b", "Mamba2_2_7B.layer0", None)
    assert flops == {"bf16": bf16, "f32": f32}
    assert service == {"special": 1 + 2 * H}


def test_mamba2_prefill_scan_flops():
    """Mamba2_2_7B.layer0.prefill_scan over L = ctx_len = 4096 tokens: once H (neg A);
    per token H (dt·A) + H·P·N (state·decay) + H·P (dt·x) + H·P·N (·B) + H·P·N (+)
    + 2·H·P·N (state·C), all f32; special H (exp A) + L·H (exp dt·A)."""
    c = _config("mamba2_2_7b")
    N, P, H = c.D_STATE, c.HEAD_P, c.N_HEADS
    f32 = H + L * (H + 3 * H * P * N + H * P + 2 * H * P * N)
    flops, service = _whole("mamba2-2.7b", "Mamba2_2_7B.layer0.prefill_scan", {"ctx_len": L})
    assert flops == {"f32": f32}
    assert service == {"special": H + L * H}


def test_phi3_mini_layer0_flops():
    """Phi3Mini.layer0 = decoder_layer (the logical `attention`: a whole-cache softmax
    under the sliding-window mask), D=3072, H=32 heads of hd=96 (H·hd = D), F=8192,
    ctx L=4096:

    bf16: 2·D·3D (fused QKV) + D (cast k_rot) + D (cast merged) + 2·D·D (o_proj)
          + 2·D·2F (fused gate/up) + 2·F (silu, *) + 2·F·D (down) + 2·D (residuals)
    f32:  2·8·D (two rms_norm) + 2·D (casts q, k) + 3·2·D (rope)
          + 2·L·D (cast caches) + 2·D·L (q·kᵀ) + 2·H·L (·scale, softmax) + 2·D·L (p·v)
    service: the sliding-window mask over the L rows: three predicates per row
    (row <= pos, row > pos − WINDOW, and), H·L selects, one integer (pos − WINDOW)
    """
    c = _config("phi3_mini")
    D, H, F = c.D_MODEL, c.N_HEADS, c.FFN
    bf16 = 2 * D * 3 * D + D + D + 2 * D * D + 2 * D * 2 * F + 2 * F + 2 * F * D + 2 * D
    f32 = 2 * 8 * D + 2 * D + 3 * 2 * D + 2 * L * D + 2 * D * L + 2 * H * L + 2 * D * L
    flops, service = _whole("phi3-mini", "Phi3Mini.layer0", {"ctx_len": L})
    assert flops == {"bf16": bf16, "f32": f32}
    assert service == {"integer": 1, **_mask(L, H * L, compares=3)}


@pytest.mark.parametrize("name", ["llama3-8b", "qwen3-moe", "deepseek-v3-mla", "mamba2-2.7b"])
def test_hand_written_rms_kernel_flops(name):
    """Each model's own `rms` kernel: see `_rms_by_hand`."""
    model = model_named(name)
    c = _config(model.file[:-3])
    flops, service = _whole(name, f"{model.root}.layer0.rms", None)
    expected_flops, expected_service = _rms_by_hand(c.D_MODEL)
    assert flops == expected_flops and service == expected_service
