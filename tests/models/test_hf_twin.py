"""The zoo held against transformers (issue 39 item 3): ``check --against
hf:<model> --weights DIR`` on tiny random checkpoints that ``save_pretrained``
writes, for the logical and the placed layer and the whole decode step of two
layers, at positions 0, a middle one, the last of the cache and past every
sliding window (Gemma-2's ring of 16, Phi-3's window of 7).

Bounds (the issue's): 1e-4 for an f32 copy of the program (``reduced(...,
dtype="f32")``) against the model in f32, 2e-2 for the bf16 program against
the model in bf16. The f32 checkpoints are drawn with weights of order
1/sqrt(fan-in) (``initializer_range``), so attention and MLP move the residual
stream by order one: a wrong mask or norm is seen (the tests at the end break
each on purpose).

Needs the ``hf`` extra (torch, transformers); skipped without it.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the hf extra (torch, transformers) is not installed")
transformers = pytest.importorskip("transformers", reason="the hf extra (torch, transformers) is not installed")

from tilefoundry.execution import check  # noqa: E402
from tilefoundry.models import model_named, reduced  # noqa: E402
from tilefoundry.models.checkpoints import checkpoint_dims  # noqa: E402

CTX = 32
POSITIONS = (0, 13, CTX - 1)  # 13 is past Phi-3's window, 31 past Gemma-2's ring
BOUNDS = {"f32": 1e-4, "bf16": 2e-2}
#: initializer_range: the f32 checkpoints about 1/sqrt(64) (the tiny models' fan-in), so
#: attention and MLP move the residual stream by order one and a wrong mask, slot or
#: norm is seen at 1e-4; the bf16 ones transformers' default, where two bf16 layers
#: that round at different points stay within 2e-2
SCALE = {"f32": 0.15, "bf16": 0.02}
TINY = dict(vocab_size=256, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            intermediate_size=128, num_hidden_layers=2, max_position_embeddings=64, tie_word_embeddings=False)
CONFIGS = {
    "llama3-8b": ("LlamaConfig", dict(TINY, rope_theta=500000.0, rms_norm_eps=1e-5)),
    "gemma2-9b": ("Gemma2Config", dict(TINY, sliding_window=16, query_pre_attn_scalar=16, rope_theta=10000.0,
                                       tie_word_embeddings=True)),
    "phi3-mini": ("Phi3Config", dict(TINY, vocab_size=192, num_key_value_heads=4, sliding_window=7,
                                     rope_theta=10000.0, rms_norm_eps=1e-5, pad_token_id=0, bos_token_id=1,
                                     eos_token_id=2)),
    "qwen3-moe": ("Qwen3MoeConfig", dict(TINY, moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2,
                                         norm_topk_prob=True, rope_theta=1000000.0, rms_norm_eps=1e-6)),
    # DeepSeek-V3 in small: layer 0 dense, layer 1 MoE (16 experts in 4 groups, 2 groups kept,
    # top 4), MLA of rank 32 / 16, YaRN RoPE as published (factor 40, mscale_all_dim 1)
    "deepseek-v3-mla": ("DeepseekV3Config", dict(
        vocab_size=256, hidden_size=64, num_attention_heads=4, num_key_value_heads=4, intermediate_size=128,
        moe_intermediate_size=32, n_routed_experts=16, num_experts_per_tok=4, n_group=4, topk_group=2,
        n_shared_experts=1, routed_scaling_factor=2.5, num_hidden_layers=2, first_k_dense_replace=1,
        q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
        max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "mscale": 1.0,
                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 32, "beta_slow": 1})),
    # Mamba-2 in small: d_inner 128 = 8 heads of 16, d_state 16, conv width 4
    "mamba2-2.7b": ("Mamba2Config", dict(vocab_size=256, hidden_size=64, state_size=16, expand=2, head_dim=16,
                                         num_heads=8, n_groups=1, conv_kernel=4, num_hidden_layers=2,
                                         tie_word_embeddings=False)),
}
#: models with no position: their conv window and SSM state are drawn from the seed
RECURRENT = {"mamba2-2.7b"}
ROOTS = {"llama3-8b": "Llama3_8B", "gemma2-9b": "Gemma2_9B", "phi3-mini": "Phi3Mini", "qwen3-moe": "Qwen3Moe",
         "deepseek-v3-mla": "DeepSeekV3", "mamba2-2.7b": "Mamba2_2_7B"}
#: router weights drawn this much larger than the rest: the tiny softmax routers' logits
#: then sit far apart, so a top-k choice is not a near tie that one rounding of bf16 could
#: flip (DeepSeek's sigmoid router as drawn: larger logits would saturate to equal scores)
ROUTER_SPREAD = {"qwen3-moe": 30.0}
#: (child or None for the decode step, placed)
SELECTIONS = ((("layer0",), False), (("layer0",), True), ((None,), False), ((None,), True))


def _save(folder, model: str, dtype: str) -> str:
    config_class, kwargs = CONFIGS[model]
    config = getattr(transformers, config_class)(**kwargs, initializer_range=SCALE[dtype])
    torch.manual_seed(0)
    network = getattr(transformers, config_class.replace("Config", "ForCausalLM"))(config)
    with torch.no_grad():  # norm weights away from their init (1, or Gemma's 0)
        for name, weight in network.named_parameters():
            if "norm" in name:
                weight.add_(torch.randn_like(weight) * 0.1)
            if name.endswith("mlp.gate.weight"):
                weight.mul_(ROUTER_SPREAD.get(model, 1.0))
        for name, buffer in network.named_buffers():  # DeepSeek's routing bias, zero at init
            if name.endswith("e_score_correction_bias"):
                buffer.copy_(torch.randn_like(buffer) * 0.1)
    network = network.to(torch.bfloat16 if dtype == "bf16" else torch.float32)
    path = folder / f"{model}-{dtype}"
    network.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf")
    return {(m, d): _save(folder, m, d) for m in CONFIGS for d in BOUNDS}


def _program(model: str, dtype: str, directory: str, folder) -> str:
    """The file checked: the reduced copy the checkpoint's config asks for, in f32
    for the f32 checkpoint."""
    return str(reduced(model, dtype="f32" if dtype == "f32" else None, folder=folder,
                       **checkpoint_dims(model, directory)))


def _inputs(model: str, child, pos: int, seed: int) -> dict:
    inputs = {} if model in RECURRENT else {"pos": np.array([pos], np.int32), "n_new": np.array([1], np.int32)}
    if child is None:
        inputs["token"] = np.array([(7 * seed + 3) % 192], np.int64)
    if model == "gemma2-9b":  # the ring's slot (a global layer writes at pos)
        inputs["slot"] = np.array([pos if child == "layer1" else pos % 16], np.int32)
    return inputs


def _selector(model: str, child, placed: bool) -> str:
    root = ROOTS[model] + ("_H200" if placed else "")
    return f"{root}.{child}" if child else root


def _held(model, dtype, child, placed, checkpoints, folder, positions=POSITIONS):
    directory = checkpoints[(model, dtype)]
    source = _program(model, dtype, directory, folder)
    # Gemma-2's even layers are sliding (a static ring) and Mamba-2 has no cache: no ctx_len
    dims = None if (model == "gemma2-9b" and child == "layer0") or model in RECURRENT else {"ctx_len": CTX}
    found = []
    for seed, pos in enumerate(positions):
        results = check(f"{source}:{_selector(model, child, placed)}", against=f"hf:{model}", weights=directory,
                        dims=dims, inputs=_inputs(model, child, pos, seed), seed=seed,
                        rtol=BOUNDS[dtype], atol=BOUNDS[dtype])
        found.append((pos, results[0]))
    return found


CASES = [(m, d, c, p) for m in CONFIGS for d in BOUNDS for (c,), p in SELECTIONS]
CASES += [(m, d, "layer1", p) for m in ("gemma2-9b", "deepseek-v3-mla") for d in BOUNDS for p in (False, True)]


@pytest.mark.parametrize("model,dtype,child,placed", CASES,
                         ids=[f"{m}-{d}-{c or 'decode_step'}{'-placed' if p else ''}" for m, d, c, p in CASES])
def test_issue39_zoo_agrees_with_transformers(model, dtype, child, placed, checkpoints, tmp_path):
    for pos, result in _held(model, dtype, child, placed, checkpoints, tmp_path):
        assert result.verdicts and result.passed, (pos, [(v.name, v.max_abs, v.max_rel) for v in result.verdicts])


def test_issue39_a_wrong_window_is_seen(checkpoints, tmp_path):
    """Phi-3 attending to every row up to its position (the window's lower edge
    dropped) no longer agrees with transformers past the window."""
    directory = checkpoints[("phi3-mini", "f32")]
    text = open(_program("phi3-mini", "f32", directory, tmp_path), encoding="utf-8").read()
    broken = text.replace("> pos - tf.full_like(pos, WINDOW)", "> pos - tf.full_like(pos, MAX_POS)")
    assert broken != text
    source = tmp_path / "reduced_phi3_mini_0badc0de0000.py"
    source.write_text(broken, encoding="utf-8")
    results = check(f"{source}:Phi3Mini.layer0", against="hf:phi3-mini", weights=directory,
                    dims={"ctx_len": CTX}, inputs=_inputs("phi3-mini", "layer0", 13, 0),
                    rtol=BOUNDS["f32"], atol=BOUNDS["f32"])
    assert not results[0].verdicts[0].passed


def test_issue39_gemma_norms_are_converted(checkpoints, tmp_path):
    """Gemma-2's stored norm weights are offsets (1 + w): the layer's converters
    add the 1. Without them the layer disagrees with transformers."""
    directory = checkpoints[("gemma2-9b", "f32")]
    path = _program("gemma2-9b", "f32", directory, tmp_path)
    text = open(path, encoding="utf-8").read()
    broken = text.replace("return w_raw + 1.0", "return w_raw + 0.0")
    assert broken != text
    source = tmp_path / "reduced_gemma2_9b_0badc0de0000.py"
    source.write_text(broken, encoding="utf-8")
    results = check(f"{source}:Gemma2_9B.layer1", against="hf:gemma2-9b", weights=directory,
                    dims={"ctx_len": CTX}, inputs=_inputs("gemma2-9b", "layer1", 13, 0),
                    rtol=BOUNDS["f32"], atol=BOUNDS["f32"])
    assert not results[0].verdicts[0].passed


def test_issue39_the_twin_names_its_models():
    from tilefoundry.errors import UsageError
    from tilefoundry.models.hf_twin import HF_MODULES

    assert set(HF_MODULES) >= set(CONFIGS)
    with pytest.raises(UsageError, match="no zoo model 'nope'"):
        check(str(model_named("llama3-8b").source) + ":Llama3_8B.layer0", against="hf:nope", weights=".")


def test_issue39_deepseek_rope_needs_the_deinterleave(checkpoints, tmp_path):
    """DeepSeek-V3's checkpoint stores its RoPE rows as interleaved pairs; read without
    the mapping's de-interleave, the layer rotates the wrong feature pairs and no longer
    agrees with transformers."""
    directory = checkpoints[("deepseek-v3-mla", "f32")]
    text = open(_program("deepseek-v3-mla", "f32", directory, tmp_path), encoding="utf-8").read()
    broken = text.replace("; deinterleave(ROPE_DIM); T", "; T").replace(
        "; heads_deinterleave(N_HEADS, ROPE_DIM); T", "; T")
    assert broken.count("deinterleave") == text.count("deinterleave") - 2
    source = tmp_path / "reduced_deepseek_v3_mla_0badc0de0000.py"
    source.write_text(broken, encoding="utf-8")
    results = check(f"{source}:DeepSeekV3.layer0", against="hf:deepseek-v3-mla", weights=directory,
                    dims={"ctx_len": CTX}, inputs=_inputs("deepseek-v3-mla", "layer0", 13, 0),
                    rtol=BOUNDS["f32"], atol=BOUNDS["f32"])
    assert not results[0].verdicts[0].passed


#: (model, child or None for the decode step, placed): every attention with a KV cache
ATTENDED = [(m, c, p) for m in CONFIGS if m not in RECURRENT for c, p in (("layer0", True), (None, True))]
# (Llama-3's and Phi-3's logical layers call the logical attention since issue 42: it
# attends the whole cache under its mask, so they state no kv_len to bind)
ATTENDED += [("gemma2-9b", "layer1", True), ("deepseek-v3-mla", "layer1", True)]


@pytest.mark.parametrize("model,child,placed", ATTENDED,
                         ids=[f"{m}-{c or 'decode_step'}{'-placed' if p else ''}" for m, c, p in ATTENDED])
def test_issue39_kernels_visit_only_the_attended_blocks(model, child, placed, checkpoints, tmp_path):
    """Bound to the valid length (kv_len = pos + 1), the placed attentions walk only the
    cache blocks up to the position (Gemma-2's ring and Phi-3's window only theirs) and
    still agree with transformers at 0, a middle position and the last (f32)."""
    directory = checkpoints[(model, "f32")]
    source = _program(model, "f32", directory, tmp_path)
    for seed, pos in enumerate(POSITIONS):
        dims = {"kv_len": pos + 1}
        if not (model == "gemma2-9b" and child == "layer0"):
            dims["ctx_len"] = CTX
        results = check(f"{source}:{_selector(model, child, placed)}", against=f"hf:{model}", weights=directory,
                        dims=dims, inputs=_inputs(model, child, pos, seed), seed=seed,
                        rtol=BOUNDS["f32"], atol=BOUNDS["f32"])
        assert results[0].verdicts and results[0].passed, (pos, [(v.name, v.max_abs) for v in results[0].verdicts])


def test_issue39_a_position_past_the_attended_blocks_is_refused(checkpoints, tmp_path):
    """A step whose position lies past the blocks kv_len visits would skip valid rows:
    the run refuses it in one line naming the value and the range, never a silent
    wrong answer."""
    from tilefoundry.errors import EvaluationError

    directory = checkpoints[("llama3-8b", "f32")]
    source = _program("llama3-8b", "f32", directory, tmp_path)
    with pytest.raises(EvaluationError, match=r"index holds 31, outside the valid range \[0, \d+\)"):
        check(f"{source}:Llama3_8B_H200.layer0", against="hf:llama3-8b", weights=directory,
              dims={"ctx_len": CTX, "kv_len": 1}, inputs=_inputs("llama3-8b", "layer0", CTX - 1, 0))
