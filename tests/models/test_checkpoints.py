"""Hugging Face checkpoint directories in (issue 39 item 2), without torch: a
checkpoint written here with safetensors' numpy writer (bf16, two shards and
their index), read through the model file's mapping, equals the same weights
given by name; config.json is held against the file's constants; reduced
copies keep the placement's divisibility rules."""
from __future__ import annotations

import json
import re

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from tilefoundry.errors import EvaluationError, UsageError
from tilefoundry.execution import run
from tilefoundry.models import model_named, reduced
from tilefoundry.models.reduce_config import constants

TINY = {"vocab_size": 256, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "intermediate_size": 128, "num_hidden_layers": 2, "rms_norm_eps": 1e-5,
        "max_position_embeddings": 64, "rope_theta": 500000.0, "model_type": "llama"}
SHAPES = {"input_layernorm": (64,), "post_attention_layernorm": (64,), "self_attn.q_proj": (64, 64),
          "self_attn.k_proj": (32, 64), "self_attn.v_proj": (32, 64), "self_attn.o_proj": (64, 64),
          "mlp.gate_proj": (128, 64), "mlp.up_proj": (128, 64), "mlp.down_proj": (64, 128)}


def _write(folder, config: dict) -> dict:
    """A two-shard bf16 checkpoint of the tiny Llama; returns its tensors."""
    rng = np.random.default_rng(0)
    tensors = {}
    for layer in range(2):
        for name, shape in SHAPES.items():
            tensors[f"model.layers.{layer}.{name}.weight"] = (rng.standard_normal(shape) * 0.2).astype(
                ml_dtypes.bfloat16)
    tensors["model.embed_tokens.weight"] = rng.standard_normal((256, 64)).astype(ml_dtypes.bfloat16)
    tensors["model.norm.weight"] = np.ones(64, ml_dtypes.bfloat16)
    tensors["lm_head.weight"] = (rng.standard_normal((256, 64)) * 0.2).astype(ml_dtypes.bfloat16)
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, keys in shards.items():
        save_file({k: tensors[k] for k in keys}, str(folder / shard))
    index = {"weight_map": {k: shard for shard, keys in shards.items() for k in keys}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "config.json").write_text(json.dumps(config))
    return tensors


def _source(selector: str) -> str:
    return f"{model_named('llama3-8b').source}:{selector}"


INPUTS = {"pos": np.array([5], np.int32), "n_new": np.array([1], np.int32)}


def test_issue39_a_checkpoint_directory_reads_by_the_mapping(tmp_path):
    tensors = _write(tmp_path, TINY)
    from_dir = run(_source("Llama3_8B.layer1"), weights=tmp_path, dims={"ctx_len": 32}, inputs=INPUTS)
    # the same layer on the reduced copy, its weights given by name: the mapping transposes
    small = reduced("llama3-8b", D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, FFN=128, VOCAB=256, MAX_POS=64,
                    LAYERS=2)
    ours = {"attn_norm": "input_layernorm", "mlp_norm": "post_attention_layernorm", "w_q": "self_attn.q_proj",
            "w_k": "self_attn.k_proj", "w_v": "self_attn.v_proj", "w_o": "self_attn.o_proj",
            "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj", "w_down": "mlp.down_proj"}
    weights = {k: tensors[f"model.layers.1.{v}.weight"] for k, v in ours.items()}
    weights = {k: (w if w.ndim == 1 else np.ascontiguousarray(w.T)) for k, w in weights.items()}
    from tilefoundry.models.checkpoints import rope_tables

    cos_t, sin_t = rope_tables(TINY, 64, 16)
    by_name = run(f"{small}:Llama3_8B.layer1", weights=weights, dims={"ctx_len": 32},
                  inputs={**INPUTS, "cos_t": cos_t, "sin_t": sin_t})
    assert set(from_dir) == set(by_name)
    for name in by_name:
        assert np.array_equal(np.asarray(from_dir[name], np.float32), np.asarray(by_name[name], np.float32)), name


def test_issue39_rope_tables_are_the_half_rotation_of_rope_theta():
    cos_t, sin_t = rope_tables_of(8, 4, 100.0)
    # feature i and i + 2 share the frequency 100^(-2i/4): at position 3, i = 1: 3 / 10
    assert cos_t[3, 1] == pytest.approx(np.cos(0.3)) and cos_t[3, 3] == pytest.approx(np.cos(0.3))
    assert sin_t[3, 0] == pytest.approx(np.sin(3.0))


def rope_tables_of(rows, width, theta):
    from tilefoundry.models.checkpoints import rope_tables

    return rope_tables({"rope_theta": theta}, rows, width)


def test_issue39_a_larger_config_is_refused_naming_the_field(tmp_path):
    _write(tmp_path, {**TINY, "hidden_size": 8192})
    with pytest.raises(EvaluationError, match=r"config.json: hidden_size = 8192 where llama3-8b states "
                                              r"D_MODEL = 4096 \(llama3_8b.py\)"):
        run(_source("Llama3_8B.layer0"), weights=tmp_path, dims={"ctx_len": 32})


def test_issue39_another_architecture_is_refused(tmp_path):
    _write(tmp_path, {**TINY, "model_type": "gemma2"})
    with pytest.raises(EvaluationError, match="model_type is 'gemma2', llama3-8b reads a 'llama' checkpoint"):
        run(_source("Llama3_8B.layer0"), weights=tmp_path, dims={"ctx_len": 32})


def test_issue39_reduced_keeps_the_placement_divisible():
    path = reduced("llama3-8b", D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, FFN=96, VOCAB=200, MAX_POS=64)
    found = constants(path.read_text())
    # CTAS divides 64, 96, 200 (8 | 200, 16 does not), and every K tile its K
    assert found["CTAS"] == 8
    assert found["DOWN_TK"] == 32 and 96 % found["DOWN_TK"] == 0
    assert re.search(r"^FFN = 96$", path.read_text(), re.M)


def test_issue39_reduced_refuses_a_broken_rule():
    with pytest.raises(UsageError, match=r"breaks 'N_Q % N_KV == 0'"):
        reduced("llama3-8b", N_Q=3, N_KV=2)


def test_issue39_deepseek_rope_rows_are_deinterleaved_per_head():
    """DeepSeek-V3's q_b_proj holds per head [nope | rope] rows, the rope rows in
    interleaved pairs (2i, 2i + 1): the mapping's reading keeps each head's rope rows
    and reorders them to halves (i, i + n/2), then transposes."""
    from tilefoundry.models.checkpoints import _read

    heads, nope, rope, rank = 2, 3, 4, 5
    weight = np.arange(heads * (nope + rope) * rank, dtype=np.float32).reshape(heads * (nope + rope), rank)
    env = {"N_HEADS": heads, "NOPE_DIM": nope, "ROPE_DIM": rope}
    found = _read({"q": weight}, "q", "heads_rows(N_HEADS, NOPE_DIM, NOPE_DIM + ROPE_DIM); "
                  "heads_deinterleave(N_HEADS, ROPE_DIM); T", env, "here")
    # head h's rope rows start at h * 7 + 3; pairs (0, 1), (2, 3) -> order 0, 2, 1, 3
    rows = [h * (nope + rope) + nope + i for h in range(heads) for i in (0, 2, 1, 3)]
    assert np.array_equal(found, weight[rows].T)


def test_issue39_a_quantized_checkpoint_is_refused_naming_the_field(tmp_path):
    from tilefoundry.models.checkpoints import open_checkpoint

    config = {"model_type": "deepseek_v3", "quantization_config": {"quant_method": "fp8"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file({"x": np.zeros(1, np.float32)}, str(tmp_path / "model.safetensors"))
    source = f"{model_named('deepseek-v3-mla').source}:DeepSeekV3.layer0"
    with pytest.raises(EvaluationError, match=r"quantization_config = \{'quant_method': 'fp8'\} where "
                                              r"deepseek-v3-mla models quantization_config = None"):
        open_checkpoint(source, tmp_path)
    # the softmax scale carries V3's YaRN mscale: a checkpoint of plain RoPE is another model
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deepseek_v3"}))
    with pytest.raises(EvaluationError, match=r"rope_scaling.type = 'default' where deepseek-v3-mla models "
                                              r"rope_scaling.type = 'yarn'"):
        open_checkpoint(source, tmp_path)


def test_issue39_reduced_rederives_the_constants_that_follow():
    """Mamba-2's D_INNER = EXPAND * D_MODEL and P_SPLITS = PLACED_CTAS // HEAD_GROUPS
    follow the given sizes before the rules and requirements are held."""
    path = reduced("mamba2-2.7b", D_MODEL=64, HEAD_P=16, D_STATE=16, N_HEADS=8, VOCAB=256)
    found = constants(path.read_text())
    assert found["D_INNER"] == 128 and found["N_HEADS"] * found["HEAD_P"] == found["D_INNER"]
    assert found["HEAD_P"] % found["P_SPLITS"] == 0 and found["VOCAB_CTAS"] <= found["PLACED_CTAS"]


def test_issue39_a_rope_scaling_the_tables_do_not_build_is_refused():
    """RoPE tables are built for plain RoPE and YaRN; another scaling (Llama-3.1's
    llama3, linear) or a damaged one is refused in one line, never silently built
    as plain RoPE."""
    from tilefoundry.models.checkpoints import rope_tables

    with pytest.raises(EvaluationError, match="rope scaling 'llama3'"):
        rope_tables({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 8, 4)
    with pytest.raises(EvaluationError, match="original_max_position_embeddings"):
        rope_tables({"rope_scaling": {"type": "yarn", "factor": 40.0}}, 8, 4)


def test_issue39_yarn_tables_blend_the_frequencies():
    """YaRN at factor f: the highest frequency (dimension 0, many turns over the original
    context) is kept, the lowest (few turns) divided by f; cos and sin scaled by
    mscale(f, mscale) / mscale(f, mscale_all_dim) = 1 when the two are equal."""
    from tilefoundry.models.checkpoints import rope_tables

    scaling = {"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
               "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
    plain_cos, _ = rope_tables({"rope_theta": 10000.0}, 8, 64)
    cos_t, sin_t = rope_tables({"rope_theta": 10000.0, "rope_scaling": scaling}, 8, 64)
    inv_low = 10000.0 ** (-62 / 64)  # the last pair's frequency
    assert cos_t[5, 0] == pytest.approx(plain_cos[5, 0])
    assert cos_t[5, 31] == pytest.approx(np.cos(5 * inv_low / 40.0), abs=1e-6)
    assert np.max(np.abs(cos_t ** 2 + sin_t ** 2 - 1.0)) < 1e-5


def test_issue39_a_damaged_index_or_field_is_refused_in_one_line(tmp_path):
    """What the fuzz campaign found (issue 41): a weight_map that is not a table of
    names, a shard outside the folder (read without bound), a config field of another
    type; each is one EvaluationError naming what is wrong."""
    _write(tmp_path, TINY)
    index = tmp_path / "model.safetensors.index.json"
    for weight_map, match in (([1, 2], "weight_map is not a table"),
                              ({"model.norm.weight": "/dev/zero"}, "shard '/dev/zero' is not a .safetensors file"),
                              ({"model.norm.weight": "../config.json"}, "is not a .safetensors file")):
        index.write_text(json.dumps({"weight_map": weight_map}))
        with pytest.raises(EvaluationError, match=match):
            run(_source("Llama3_8B.layer0"), weights=tmp_path, dims={"ctx_len": 32})
    _write(tmp_path, {**TINY, "rms_norm_eps": "x"})
    with pytest.raises(EvaluationError, match=r"rms_norm_eps = 'x' is not a number above 0"):
        run(_source("Llama3_8B.layer0"), weights=tmp_path, dims={"ctx_len": 32})
    _write(tmp_path, {**TINY, "hidden_size": 0})
    with pytest.raises(EvaluationError, match=r"hidden_size = 0 is not an integer above 0"):
        run(_source("Llama3_8B.layer0"), weights=tmp_path, dims={"ctx_len": 32})
