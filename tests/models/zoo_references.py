"""Independent float64 numpy references of the zoo's layer kernels.

Each function follows the published definition of its architecture (the paper
and the Hugging Face ``transformers`` modeling file named in its docstring),
not the DSL program: the programs are what these are held against. Every
reference widens its (bf16 / f32) inputs to float64 exactly and computes in
float64 with no intermediate rounding, so the only differences from a program
are the program's own roundings.

Conventions shared with the zoo programs (their calling convention, not their
arithmetic):

- batch 1, one decode token: activations are ``(1, d_model)``;
- projections are ``x @ W`` with ``W`` stored ``(in, out)`` (the transpose of an
  ``nn.Linear.weight``);
- KV caches are ``(1, cache_len, heads, head_dim)``; the new token's key/value is
  written at row ``pos`` (``slot`` for Gemma's ring buffer) and the decode step
  attends to every row of the cache (the caller keeps only valid rows in it:
  ``pos = cache_len - 1`` for a cache that ends at the new token, or a full
  ring buffer of the last ``window`` positions);
- RoPE tables are ``(max_pos, head_dim)`` of full head width (HF's
  ``cat(freqs, freqs)`` layout) indexed by position, rotate-half convention.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "f64", "rms_norm", "gemma_rms_norm", "rope_tables", "rotate_half", "apply_rope",
    "decode_attention", "llama_qkv_rope", "llama_attention", "swiglu_mlp", "llama_decoder_layer",
    "qwen3_attention", "qwen3_router", "qwen3_routed_experts", "qwen2_shared_expert", "qwen3_moe",
    "mla_q_proj", "mla_attention", "gelu_tanh", "geglu_mlp", "gemma2_attention",
    "gemma2_decoder_layer", "mamba2_conv_step", "mamba2_mixer", "mamba2_prefill_scan",
    "mamba2_decoder_layer", "phi3_qkv_rope", "phi3_attention", "phi3_mlp", "phi3_decoder_layer",
    "embed", "gemma2_embed", "lm_head", "gemma2_lm_head", "qwen3_decoder_layer",
    "deepseek_v3_decoder_layer", "deepseek_v3_softmax_scale",
]


def f64(array) -> np.ndarray:
    """An array widened to float64 exactly (bf16 through its bit pattern, which is
    the top half of an f32: fast for the multi-GB weights of the zoo)."""
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        bits = array.view(np.uint16).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def _matvec(x, w) -> np.ndarray:
    """``x @ w`` in float64 for an activation row and a (possibly huge) bf16 weight,
    widening the weight a block of rows at a time."""
    x = f64(x)
    w = np.asarray(w)
    out = np.zeros(x.shape[:-1] + (w.shape[-1],))
    step = 2048
    for i in range(0, w.shape[0], step):
        out += x[..., i:i + step] @ f64(w[i:i + step])
    return out


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _softplus(x):
    return np.logaddexp(0.0, x)


def _scalar(index) -> int:
    return int(np.asarray(index).reshape(-1)[0])


# ---------------------------------------------------------------- norms


def rms_norm(x, weight, eps):
    """RMSNorm (Zhang & Sennrich 2019) as HF ``LlamaRMSNorm.forward``:
    ``weight * x / sqrt(mean(x**2 over the last axis) + eps)``, computed on the
    upcast activation. Also Qwen3 (model and per-head q/k norm), DeepSeek-V3 (and
    its ``q_a_layernorm`` / ``kv_a_layernorm``), Mamba-2 and Phi-3."""
    x = f64(x)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * f64(weight)


def gemma_rms_norm(x, weight, eps):
    """Gemma's RMSNorm, HF ``Gemma2RMSNorm.forward``: ``x / sqrt(mean(x**2) + eps) *
    (1 + weight)``, the checkpoint storing the offset ``weight`` (zero-initialised)."""
    x = f64(x)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + f64(weight))


# ---------------------------------------------------------------- RoPE


def rope_tables(head_dim: int, max_pos: int, theta: float):
    """RoFormer (Su et al. 2021) tables as HF ``LlamaRotaryEmbedding`` builds them:
    ``inv_freq = theta ** (-arange(0, d, 2) / d)``, ``freqs = outer(t, inv_freq)``,
    ``emb = cat(freqs, freqs)``; returns (cos, sin), each (max_pos, head_dim) f32."""
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    freqs = np.outer(np.arange(max_pos, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def rotate_half(x):
    """HF ``rotate_half``: ``cat(-x[..., d/2:], x[..., :d/2])``."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos_t, sin_t, pos):
    """HF ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` with cos/sin the
    table rows at the token's position (one decode token: ``x`` is
    ``(..., heads, head_dim)``, every head rotated by the same row)."""
    p = _scalar(pos)
    cos, sin = f64(cos_t)[p], f64(sin_t)[p]
    x = f64(x)
    return x * cos + rotate_half(x) * sin


# ---------------------------------------------------------------- attention


def decode_attention(q, keys, values, scale, softcap=None):
    """Scaled dot-product attention of one query token (Vaswani et al. 2017) with
    grouped-query heads (Ainslie et al. 2023), HF ``eager_attention_forward``: each
    KV head serves ``n_q / n_kv`` consecutive query heads (``repeat_kv``),
    ``softmax(q k^T * scale) v``. With ``softcap`` the logits are first soft-capped
    ``softcap * tanh(logits / softcap)`` (Gemma-2).

    q: (n_q, d); keys, values: (len, n_kv, d[v]). Returns (n_q, d_v)."""
    q, keys, values = f64(q), f64(keys), f64(values)
    n_q, n_kv = q.shape[0], keys.shape[1]
    group = n_q // n_kv
    k = np.repeat(keys, group, axis=1)  # (len, n_q, d): head h reads kv head h // group
    v = np.repeat(values, group, axis=1)
    logits = np.einsum("hd,thd->ht", q, k) * scale
    if softcap is not None:
        logits = softcap * np.tanh(logits / softcap)
    probs = _softmax(logits, -1)
    return np.einsum("ht,thd->hd", probs, v)


def _write_row(cache, row, new):
    """The cache (1, len, heads, d) with row ``row`` replaced by ``new`` (1, 1, heads, d)."""
    out = np.array(cache, copy=True)
    out[:, _scalar(row)] = np.asarray(new).reshape(out.shape[2:]).astype(out.dtype)
    return out


def _bf16(x):
    """A value stored into a bf16 cache (the cache's own dtype)."""
    import ml_dtypes

    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------- Llama-3


def llama_qkv_rope(h, w_q, w_k, w_v, cos_t, sin_t, pos, *, n_q=32, n_kv=8, head_dim=128):
    """HF ``LlamaAttention.forward`` up to the rotary embedding: ``q/k/v_proj``, the
    view to (heads, head_dim), ``apply_rotary_pos_emb`` on q and k at ``pos``.
    Returns q_rot (1, 1, n_q, d), k_rot and v (1, 1, n_kv, d)."""
    q = _matvec(h, w_q).reshape(n_q, head_dim)
    k = _matvec(h, w_k).reshape(n_kv, head_dim)
    v = _matvec(h, w_v).reshape(n_kv, head_dim)
    q_rot = apply_rope(q, cos_t, sin_t, pos)
    k_rot = apply_rope(k, cos_t, sin_t, pos)
    return (q_rot.reshape(1, 1, n_q, head_dim), k_rot.reshape(1, 1, n_kv, head_dim),
            v.reshape(1, 1, n_kv, head_dim))


def llama_attention(h, w_q, w_k, w_v, w_o, cos_t, sin_t, pos, n_new, k_cache, v_cache, *,
                    n_q=32, n_kv=8, head_dim=128):
    """One decode step of HF ``LlamaAttention`` with a KV cache: q/k/v projections,
    RoPE at ``pos``, the new key/value stored at cache row ``pos`` (``Cache.update``,
    in the cache's dtype), GQA attention over the cache with scale 1/sqrt(head_dim),
    ``o_proj``. Returns (out, k_cache', v_cache')."""
    assert _scalar(n_new) == 1, "one decode token"
    q, k, v = llama_qkv_rope(h, w_q, w_k, w_v, cos_t, sin_t, pos, n_q=n_q, n_kv=n_kv,
                             head_dim=head_dim)
    k_all = _write_row(k_cache, pos, _bf16(k))
    v_all = _write_row(v_cache, pos, _bf16(v))
    ctx = decode_attention(q.reshape(n_q, head_dim), k_all[0], v_all[0], head_dim ** -0.5)
    return _matvec(ctx.reshape(1, -1), w_o), k_all, v_all


def swiglu_mlp(h, w_gate, w_up, w_down):
    """SwiGLU feed-forward (Shazeer 2020), HF ``LlamaMLP.forward``:
    ``down_proj(silu(gate_proj(x)) * up_proj(x))``. Also DeepSeek-V3's dense MLP and
    each Qwen3-MoE expert."""
    return _matvec(_silu(_matvec(h, w_gate)) * _matvec(h, w_up), w_down)


def llama_decoder_layer(x, attn_norm, mlp_norm, w_q, w_k, w_v, w_o, w_gate, w_up, w_down,
                        cos_t, sin_t, pos, n_new, k_cache, v_cache, *, eps=1e-5):
    """HF ``LlamaDecoderLayer.forward`` (pre-norm residual): ``h = x +
    attn(rms(x))``, ``out = h + mlp(rms(h))``. Returns (out, k_cache', v_cache')."""
    attn, k_all, v_all = llama_attention(rms_norm(x, attn_norm, eps), w_q, w_k, w_v, w_o,
                                         cos_t, sin_t, pos, n_new, k_cache, v_cache)
    h = f64(x) + attn
    return h + swiglu_mlp(rms_norm(h, mlp_norm, eps), w_gate, w_up, w_down), k_all, v_all


# ---------------------------------------------------------------- Qwen3-MoE


def qwen3_attention(h, w_q, w_k, w_v, w_o, q_norm, k_norm, cos_t, sin_t, pos, n_new,
                    k_cache, v_cache, *, n_q=32, n_kv=4, head_dim=128, eps=1e-6):
    """HF ``Qwen3MoeAttention.forward``, one decode step: q/k/v projections, the
    per-head RMSNorm of q and k over head_dim (``q_norm`` / ``k_norm``, before RoPE),
    RoPE at ``pos``, cache row ``pos`` written, GQA attention (scale 1/sqrt(d)),
    ``o_proj``. Returns (out, k_cache', v_cache')."""
    assert _scalar(n_new) == 1
    q = rms_norm(_matvec(h, w_q).reshape(n_q, head_dim), q_norm, eps)
    k = rms_norm(_matvec(h, w_k).reshape(n_kv, head_dim), k_norm, eps)
    v = _matvec(h, w_v).reshape(n_kv, head_dim)
    q, k = apply_rope(q, cos_t, sin_t, pos), apply_rope(k, cos_t, sin_t, pos)
    k_all = _write_row(k_cache, pos, _bf16(k))
    v_all = _write_row(v_cache, pos, _bf16(v))
    ctx = decode_attention(q, k_all[0], v_all[0], head_dim ** -0.5)
    return _matvec(ctx.reshape(1, -1), w_o), k_all, v_all


def qwen3_router(h, w_router, *, top_k=8):
    """The router of HF ``Qwen3MoeSparseMoeBlock.forward``: ``softmax(gate(x))`` over
    the experts, ``topk`` (largest first), renormalised over the chosen k
    (``norm_topk_prob=True``). Returns (weights (1, k), expert ids (k,) int64)."""
    probs = _softmax(_matvec(h, w_router), -1)[0]
    ids = np.argsort(-probs, kind="stable")[:top_k]
    chosen = probs[ids]
    return (chosen / chosen.sum()).reshape(1, top_k), ids.astype(np.int64)


def qwen3_routed_experts(h, weights, ids, w_gate_e, w_up_e, w_down_e):
    """The expert sum of HF ``Qwen3MoeSparseMoeBlock.forward``: each chosen expert's
    SwiGLU MLP (``Qwen3MoeMLP``) on the token, scaled by its routing weight, summed."""
    out = np.zeros((1, np.asarray(w_down_e).shape[-1]))
    for j, e in enumerate(np.asarray(ids).reshape(-1)):
        out += f64(weights)[0, j] * swiglu_mlp(h, w_gate_e[e], w_up_e[e], w_down_e[e])
    return out


def qwen2_shared_expert(h, w_gate_s, w_up_s, w_down_s, w_shared_gate):
    """The shared expert of HF ``Qwen2MoeSparseMoeBlock.forward``: a SwiGLU MLP gated
    by ``sigmoid(shared_expert_gate(x))`` (one scalar per token)."""
    return swiglu_mlp(h, w_gate_s, w_up_s, w_down_s) * _sigmoid(_matvec(h, w_shared_gate))


def qwen3_moe(h, w_router, w_gate_e, w_up_e, w_down_e, *, top_k=8):
    """HF ``Qwen3MoeSparseMoeBlock.forward``: the routed experts (``qwen3_router`` +
    ``qwen3_routed_experts``); Qwen3-30B-A3B has no shared expert."""
    weights, ids = qwen3_router(h, w_router, top_k=top_k)
    return qwen3_routed_experts(h, weights, ids, w_gate_e, w_up_e, w_down_e)


def qwen3_decoder_layer(x, attn_norm, mlp_norm, w_q, w_k, w_v, w_o, q_norm, k_norm, w_router,
                        w_gate_e, w_up_e, w_down_e, cos_t, sin_t, pos, n_new, k_cache, v_cache,
                        *, eps=1e-6):
    """HF ``Qwen3MoeDecoderLayer.forward`` (pre-norm residual): ``h = x +
    attn(rms(x))``, ``out = h + moe(rms(h))``. Returns (out, k_cache', v_cache')."""
    attn, k_all, v_all = qwen3_attention(rms_norm(x, attn_norm, eps), w_q, w_k, w_v, w_o, q_norm,
                                         k_norm, cos_t, sin_t, pos, n_new, k_cache, v_cache)
    h = f64(x) + attn
    return h + qwen3_moe(rms_norm(h, mlp_norm, eps), w_router, w_gate_e, w_up_e, w_down_e), k_all, v_all


# ---------------------------------------------------------------- DeepSeek-V3 MLA


def mla_q_proj(h, w_dq, q_a_norm, w_uq_nope, w_uq_rope, *, n_heads=128, nope=128, rope=64,
               eps=1e-6):
    """MLA's query path (DeepSeek-V2 paper §2.1.2, eq. 12-13; HF
    ``DeepseekV3Attention.forward``): ``q_b_proj(q_a_layernorm(q_a_proj(x)))`` split per
    head into the no-position part and the decoupled RoPE part (``w_uq_nope`` /
    ``w_uq_rope`` are those column groups of ``q_b_proj``). Returns q_nope (heads, 1,
    nope) and q_pe (1, 1, heads, rope), before RoPE."""
    c_q = rms_norm(_matvec(h, w_dq), q_a_norm, eps)
    q_nope = _matvec(c_q, w_uq_nope).reshape(n_heads, 1, nope)
    q_pe = _matvec(c_q, w_uq_rope).reshape(1, 1, n_heads, rope)
    return q_nope, q_pe


def deepseek_v3_softmax_scale(nope=128, rope=64, factor=40.0, mscale_all_dim=1.0):
    """DeepSeek-V3's attention scale (HF ``DeepseekV3Attention.__init__``; the official
    ``inference/model.py`` ``MLA.__init__``): ``(nope + rope) ** -0.5`` times
    ``mscale ** 2``, the YaRN attention factor ``mscale = 0.1 * mscale_all_dim *
    ln(factor) + 1`` of its config (``rope_scaling``: yarn, factor 40, mscale_all_dim
    1): 192 ** -0.5 * 1.3689 ** 2."""
    mscale = 0.1 * mscale_all_dim * np.log(factor) + 1.0
    return (nope + rope) ** -0.5 * mscale * mscale


def mla_attention(h, w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv, kv_a_norm, w_kr, w_uk, w_uv,
                  w_o, cos_t, sin_t, pos, n_new, ckv_cache, kpe_cache, *, n_heads=128, nope=128,
                  rope=64, v_dim=128, eps=1e-6, softmax_scale=None):
    """Multi-head Latent Attention, one decode step, in the paper's NON-absorbed form
    (DeepSeek-V2 §2.1.2-2.1.3, eq. 9-19; HF ``DeepseekV3Attention.forward``): the
    latent ``c_kv = kv_a_layernorm(x W_dkv)`` and the shared decoupled key
    ``k_pe = RoPE(x W_kr)`` are cached; each head's key is ``[c_kv W_uk^h, k_pe]``, its
    value ``c_kv W_uv^h``, its query ``[q_nope^h, RoPE(q_pe^h)]``; softmax scale
    1/sqrt(nope + rope); heads concatenated through ``o_proj``. (The program runs
    the weight-absorbed form; the two agree in exact arithmetic.) RoPE is
    rotate-half here: HF's DeepSeek de-interleaves the rope dims first, which is a
    fixed permutation of the ``w_kr`` / ``w_uq_rope`` columns done at conversion.
    Returns (out, ckv_cache', kpe_cache')."""
    assert _scalar(n_new) == 1
    q_nope, q_pe = mla_q_proj(h, w_dq, q_a_norm, w_uq_nope, w_uq_rope, n_heads=n_heads,
                              nope=nope, rope=rope, eps=eps)
    c_kv = rms_norm(_matvec(h, w_dkv), kv_a_norm, eps)  # (1, kv_rank)
    k_pe = apply_rope(_matvec(h, w_kr), cos_t, sin_t, pos)  # (1, rope)
    q_pe = apply_rope(q_pe.reshape(n_heads, rope), cos_t, sin_t, pos)  # (heads, rope)
    ckv_all = _write_row(ckv_cache, pos, _bf16(c_kv))
    kpe_all = _write_row(kpe_cache, pos, _bf16(k_pe))
    latent = f64(ckv_all)[0, :, 0, :]  # (len, kv_rank)
    k_rope = f64(kpe_all)[0, :, 0, :]  # (len, rope)
    w_uk, w_uv = f64(w_uk), f64(w_uv)  # (heads, nope, rank), (heads, rank, v)
    k_nope = np.einsum("tr,hnr->thn", latent, w_uk)  # (len, heads, nope)
    values = np.einsum("tr,hrv->thv", latent, w_uv)  # (len, heads, v)
    keys = np.concatenate([k_nope, np.broadcast_to(k_rope[:, None, :], k_nope.shape[:2] + (rope,))],
                          axis=-1)
    q = np.concatenate([q_nope.reshape(n_heads, nope), q_pe], axis=-1)
    if softmax_scale is None:
        softmax_scale = deepseek_v3_softmax_scale(nope, rope)
    ctx = decode_attention(q, keys, values, softmax_scale)  # (heads, v)
    return _matvec(ctx.reshape(1, n_heads * v_dim), w_o), ckv_all, kpe_all


def deepseek_v3_decoder_layer(x, attn_norm, mlp_norm, w_dq, q_a_norm, w_uq_nope, w_uq_rope, w_dkv,
                              kv_a_norm, w_kr, w_uk, w_uv, w_o, w_gate, w_up, w_down, cos_t, sin_t,
                              pos, n_new, ckv_cache, kpe_cache, *, eps=1e-6, softmax_scale=None):
    """HF ``DeepseekV3DecoderLayer.forward`` of a dense layer (the first
    ``first_k_dense_replace`` layers): ``h = x + mla(rms(x))``, ``out = h + mlp(rms(h))``.
    Returns (out, ckv_cache', kpe_cache')."""
    attn, ckv_all, kpe_all = mla_attention(rms_norm(x, attn_norm, eps), w_dq, q_a_norm, w_uq_nope,
                                           w_uq_rope, w_dkv, kv_a_norm, w_kr, w_uk, w_uv, w_o, cos_t,
                                           sin_t, pos, n_new, ckv_cache, kpe_cache,
                                           softmax_scale=softmax_scale)
    h = f64(x) + attn
    return h + swiglu_mlp(rms_norm(h, mlp_norm, eps), w_gate, w_up, w_down), ckv_all, kpe_all


# ---------------------------------------------------------------- Gemma-2


def gelu_tanh(x):
    """GELU, tanh approximation (Hendrycks & Gimpel 2016; HF ``gelu_pytorch_tanh``):
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def geglu_mlp(h, w_gate, w_up, w_down):
    """GeGLU feed-forward (Shazeer 2020), HF ``Gemma2MLP.forward`` with
    ``hidden_activation="gelu_pytorch_tanh"``: ``down(gelu_tanh(gate(x)) * up(x))``."""
    return _matvec(gelu_tanh(_matvec(h, w_gate)) * _matvec(h, w_up), w_down)


def gemma2_attention(h, w_q, w_k, w_v, w_o, cos_t, sin_t, pos, slot, n_new, k_cache, v_cache, *,
                     n_q=16, n_kv=8, head_dim=256, query_pre_attn_scalar=256, softcap=50.0):
    """HF ``Gemma2Attention.forward``, one decode step: projections, RoPE at ``pos``,
    the new key/value stored at cache row ``slot`` (``slot = pos mod window`` for a
    sliding layer's ring buffer, which then holds exactly the last ``window``
    positions; ``pos`` for a global layer), GQA attention with scale
    ``query_pre_attn_scalar ** -0.5`` and logits soft-capped at ``softcap``
    (``attn_logit_softcapping``), ``o_proj``. Returns (out, k_cache', v_cache')."""
    assert _scalar(n_new) == 1
    q = _matvec(h, w_q).reshape(n_q, head_dim)
    k = _matvec(h, w_k).reshape(n_kv, head_dim)
    v = _matvec(h, w_v).reshape(n_kv, head_dim)
    q, k = apply_rope(q, cos_t, sin_t, pos), apply_rope(k, cos_t, sin_t, pos)
    k_all = _write_row(k_cache, slot, _bf16(k))
    v_all = _write_row(v_cache, slot, _bf16(v))
    ctx = decode_attention(q, k_all[0], v_all[0], query_pre_attn_scalar ** -0.5, softcap=softcap)
    return _matvec(ctx.reshape(1, -1), w_o), k_all, v_all


def gemma2_decoder_layer(x, pre_attn, post_attn, pre_ffw, post_ffw, w_q, w_k, w_v, w_o, w_gate,
                         w_up, w_down, cos_t, sin_t, pos, slot, n_new, k_cache, v_cache, *,
                         eps=1e-6):
    """HF ``Gemma2DecoderLayer.forward`` (sandwich norms): ``h = x +
    post_attention_layernorm(attn(input_layernorm(x)))``, ``out = h +
    post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))``; the four norm
    weights are the checkpoint's offsets (``gemma_rms_norm``)."""
    attn, k_all, v_all = gemma2_attention(gemma_rms_norm(x, pre_attn, eps), w_q, w_k, w_v, w_o,
                                          cos_t, sin_t, pos, slot, n_new, k_cache, v_cache)
    h = f64(x) + gemma_rms_norm(attn, post_attn, eps)
    ffw = geglu_mlp(gemma_rms_norm(h, pre_ffw, eps), w_gate, w_up, w_down)
    return h + gemma_rms_norm(ffw, post_ffw, eps), k_all, v_all


# ---------------------------------------------------------------- Mamba-2


def mamba2_conv_step(xbc, conv_state, conv_w, conv_b):
    """The decode branch of the depthwise causal conv1d of HF ``Mamba2Mixer.torch_forward``
    (``cache_params`` given): the state window shifts left by one and takes the new
    ``xBC`` column, ``sum(state * conv1d.weight, over the window) + bias``, then
    SiLU. Our layout: state (1, d_conv, channels), weight (d_conv, channels) (HF's
    (channels, 1, d_conv) transposed). Returns (activated (1, channels), new state)."""
    state = np.asarray(conv_state)
    shifted = np.concatenate([state[:, 1:], np.asarray(xbc).reshape(1, 1, -1)], axis=1)
    mixed = np.sum(f64(shifted) * f64(conv_w)[None], axis=1) + f64(conv_b)
    return _silu(mixed), shifted


def mamba2_mixer(h, conv_state, ssm_state, w_z, w_xbc, w_dt, conv_w, conv_b, dt_bias, a_log,
                 d_skip, gate_norm, w_out, *, n_heads=80, head_p=64, d_state=128, eps=1e-5):
    """One recurrent decode step of the Mamba-2 mixer (Dao & Gu 2024, "Transformers
    are SSMs", the SSD recurrence; HF ``Mamba2Mixer.torch_forward`` with a cache, one
    group): ``in_proj`` gives z, xBC, dt; xBC through the conv step; split into x
    (heads, P), B, C (d_state, shared by all heads); ``dt = softplus(dt + dt_bias)``,
    ``A = -exp(A_log)``; ``h' = exp(dt A) h + dt x B^T``; ``y = h' C + D x``; the gated
    RMSNorm ``MambaRMSNormGated`` (``rms(y * silu(z)) * weight``); ``out_proj``.
    Returns (out, conv_state', ssm_state')."""
    d_inner = n_heads * head_p
    xbc_act, conv_new = mamba2_conv_step(_matvec(h, w_xbc), conv_state, conv_w, conv_b)
    xbc_act = xbc_act[0]
    z = _matvec(h, w_z)[0]
    dt = _softplus(_matvec(h, w_dt)[0] + f64(dt_bias))  # (heads,)
    x = xbc_act[:d_inner].reshape(n_heads, head_p)
    b = xbc_act[d_inner:d_inner + d_state]
    c = xbc_act[d_inner + d_state:d_inner + 2 * d_state]
    a = -np.exp(f64(a_log))
    state = (f64(ssm_state)[0] * np.exp(dt * a)[:, None, None]
             + dt[:, None, None] * x[:, :, None] * b[None, None, :])
    y = state @ c + f64(d_skip).reshape(n_heads, 1) * x  # (heads, P)
    gated = y.reshape(1, d_inner) * _silu(z)[None]
    out = _matvec(rms_norm(gated, gate_norm, eps), w_out)
    return out, conv_new, state[None]


def mamba2_prefill_scan(x_seq, dt_seq, b_seq, c_seq, ssm_state, a_log):
    """The SSD recurrence over a prompt (Dao & Gu 2024 §3, the linear-time recurrent
    form that ``ssd_minimal`` / the chunked scan compute): for each t,
    ``h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T``, ``y_t = h_t C_t``, with
    ``A = -exp(A_log)`` per head and dt already softplus-ed. (D skip and gating are the
    mixer's.) Returns (y (1, T, heads, P), final state (1, heads, P, N))."""
    x, dt, b, c = f64(x_seq)[0], f64(dt_seq)[0], f64(b_seq)[0], f64(c_seq)[0]
    a = -np.exp(f64(a_log))
    state = f64(ssm_state)[0]
    ys = np.zeros(x.shape)
    for t in range(x.shape[0]):
        state = (state * np.exp(dt[t] * a)[:, None, None]
                 + (dt[t][:, None] * x[t])[:, :, None] * b[t][None, None, :])
        ys[t] = state @ c[t]
    return ys[None], state[None]


def mamba2_decoder_layer(x, conv_state, ssm_state, norm, w_z, w_xbc, w_dt, conv_w, conv_b,
                         dt_bias, a_log, d_skip, gate_norm, w_out, *, eps=1e-5):
    """HF ``Mamba2Block.forward``: ``x + mixer(rms(x))``. Returns (out, conv', ssm')."""
    out, conv_new, state = mamba2_mixer(rms_norm(x, norm, eps), conv_state, ssm_state, w_z, w_xbc,
                                        w_dt, conv_w, conv_b, dt_bias, a_log, d_skip, gate_norm,
                                        w_out)
    return f64(x) + out, conv_new, state


# ---------------------------------------------------------------- Phi-3


def phi3_qkv_rope(h, w_qkv, cos_t, sin_t, pos, *, n_heads=32, head_dim=96):
    """HF ``Phi3Attention.forward`` up to RoPE: the fused ``qkv_proj`` output sliced
    ``[:q], [q:q+kv], [q+kv:]`` (q, k, v), viewed per head, RoPE on q and k at
    ``pos``. Returns q_rot, k_rot, v, each (1, 1, heads, head_dim)."""
    qkv = _matvec(h, w_qkv)[0]
    d = n_heads * head_dim
    q, k, v = (qkv[i * d:(i + 1) * d].reshape(n_heads, head_dim) for i in range(3))
    shape = (1, 1, n_heads, head_dim)
    return (apply_rope(q, cos_t, sin_t, pos).reshape(shape),
            apply_rope(k, cos_t, sin_t, pos).reshape(shape), v.reshape(shape))


def phi3_attention(h, w_qkv, w_o, cos_t, sin_t, pos, n_new, k_cache, v_cache, *, n_heads=32,
                   head_dim=96):
    """One decode step of HF ``Phi3Attention``: fused QKV + RoPE, cache row ``pos``
    written, multi-head attention (n_kv = n_q) with scale 1/sqrt(head_dim),
    ``o_proj``. Returns (out, k_cache', v_cache')."""
    assert _scalar(n_new) == 1
    q, k, v = phi3_qkv_rope(h, w_qkv, cos_t, sin_t, pos, n_heads=n_heads, head_dim=head_dim)
    k_all = _write_row(k_cache, pos, _bf16(k))
    v_all = _write_row(v_cache, pos, _bf16(v))
    ctx = decode_attention(q.reshape(n_heads, head_dim), k_all[0], v_all[0], head_dim ** -0.5)
    return _matvec(ctx.reshape(1, -1), w_o), k_all, v_all


def phi3_mlp(h, w_gate_up, w_down):
    """HF ``Phi3MLP.forward``: ``gate, up = gate_up_proj(x).chunk(2)``,
    ``down_proj(up * silu(gate))``."""
    gate_up = _matvec(h, w_gate_up)
    half = gate_up.shape[-1] // 2
    return _matvec(gate_up[:, half:] * _silu(gate_up[:, :half]), w_down)


def phi3_decoder_layer(x, attn_norm, mlp_norm, w_qkv, w_o, w_gate_up, w_down, cos_t, sin_t, pos,
                       n_new, k_cache, v_cache, *, eps=1e-5):
    """HF ``Phi3DecoderLayer.forward`` (pre-norm residual, dropout off)."""
    attn, k_all, v_all = phi3_attention(rms_norm(x, attn_norm, eps), w_qkv, w_o, cos_t, sin_t,
                                        pos, n_new, k_cache, v_cache)
    h = f64(x) + attn
    return h + phi3_mlp(rms_norm(h, mlp_norm, eps), w_gate_up, w_down), k_all, v_all


# ---------------------------------------------------------------- embeddings and heads


def embed(table, token):
    """``nn.Embedding``: the table's row of each token id."""
    return f64(np.asarray(table)[np.asarray(token).reshape(-1)])


def gemma2_embed(table, token, *, d_model=3584):
    """Gemma's scaled embedding (Gemma report §2; HF ``Gemma2Model.forward``): the
    table row times ``sqrt(d_model)``. (HF rounds the normaliser to the model dtype
    first, 59.87 -> 59.75 in bf16; the paper's factor is the exact square root, used
    here: the two differ by half a bf16 unit.)"""
    return embed(table, token) * np.sqrt(d_model)


def lm_head(h, final_norm, w_vocab, *, eps):
    """HF ``LlamaForCausalLM``'s head: the final RMSNorm (``model.norm``), then
    ``lm_head``; the logits in float (``logits.float()``)."""
    return _matvec(rms_norm(h, final_norm, eps), w_vocab)


def gemma2_lm_head(h, final_norm, w_vocab, *, eps=1e-6, softcap=30.0):
    """HF ``Gemma2ForCausalLM.forward``: the final ``Gemma2RMSNorm`` (``1 + weight``),
    ``lm_head``, then the final logit soft-cap ``softcap * tanh(logits / softcap)``
    (``final_logit_softcapping = 30``)."""
    logits = _matvec(gemma_rms_norm(h, final_norm, eps), w_vocab)
    return softcap * np.tanh(logits / softcap)
