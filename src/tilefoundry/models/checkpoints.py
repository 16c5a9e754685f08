"""Hugging Face checkpoints in (``run``/``check --weights DIR``, issue 39).

A checkpoint directory holds ``config.json`` and the weights in safetensors
files: one ``model.safetensors``, or shards that ``model.safetensors.index.json``
lists. Each zoo model file states how its weights are read from one
(docs/models.md, "Checkpoints"):

- ``HF_MODEL_TYPE``: the ``model_type`` its config.json must state;
- ``HF_CONFIG``: config.json field -> the constant it must equal. A field that
  differs is refused in one line naming it, unless every differing size is
  smaller than the published one: then the selection runs on a reduced copy of
  the file taking the checkpoint's config (``tilefoundry.models.reduced``);
- ``HF_FIXED``: config.json field -> the value it must hold exactly (a routing rule,
  a layer pattern the file models); another value is refused naming the field.
  ``rope_scaling.X`` names field X of the RoPE scaling object (``rope_scaling``, or
  transformers 5's ``rope_parameters``; its ``type`` is "default" where there is none);
- ``HF_LAYER_WEIGHTS`` / ``HF_ROOT_WEIGHTS``: our weight -> (checkpoint name, reading).
  A reading is a sequence of steps: ``T`` transposes a Linear's (out, in) to our
  (in, out); ``rows(a, b)`` keeps rows a..b (constant expressions) of a fused
  weight, ``heads_rows(h, a, b)`` rows a..b of each of h equal head blocks (a fused
  per-head projection: DeepSeek's q_b_proj, kv_b_proj); ``stack`` reads ``{e}`` = 0 ..
  EXPERTS-1 and stacks them on a new first axis; ``deinterleave(n)`` reorders the last
  n output rows from RoPE pairs (2i, 2i + 1) to halves (i, n/2 + i), the order our
  ``tf.rope`` rotates (``heads_deinterleave(h, n)``: in each head block);
  ``reshape(...)`` / ``transpose(...)`` lay an array out as numpy's do.
  Every array is cast to its parameter's dtype; a weight with a converter
  (Gemma-2's norms: ``1 + w``) is stored raw and converted by the execution.

RoPE tables (``cos_t``, ``sin_t``) are inputs built from the config's
``rope_theta`` where the caller gives none.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilefoundry.errors import EvaluationError, UsageError

__all__ = ["Checkpoint", "is_checkpoint_dir", "open_checkpoint", "read_checkpoint", "rope_tables"]

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


def is_checkpoint_dir(value) -> bool:
    return isinstance(value, (str, os.PathLike)) and os.path.isdir(os.fspath(value))


def read_checkpoint(directory) -> tuple[dict, dict]:
    """(config, name -> array) of a checkpoint directory."""
    import ml_dtypes  # noqa: F401  (registers 'bfloat16' with numpy: safetensors' numpy reader names it)

    try:  # execute's reader of one tensor file (moved to its own module by the check work)
        from tilefoundry.execute.tensor_files import read_tensor_file
    except ImportError:
        from tilefoundry.execute.inputs import read_tensor_file

    folder = Path(directory)
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise EvaluationError(f"{folder}: no config.json; a checkpoint directory holds config.json and "
                              "its safetensors files (save_pretrained writes both)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvaluationError(f"{config_path}: not a readable JSON file ({exc})") from None
    if not isinstance(config, dict):
        raise EvaluationError(f"{config_path}: a {type(config).__name__}, not the object of fields "
                              "save_pretrained writes")
    if (folder / INDEX).is_file():
        try:
            weight_map = json.loads((folder / INDEX).read_text(encoding="utf-8"))["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EvaluationError(f"{folder / INDEX}: no readable weight_map ({exc})") from None
        shards = _shards(folder, weight_map)
    elif (folder / SINGLE).is_file():
        shards = [SINGLE]
    else:
        raise EvaluationError(f"{folder}: neither {SINGLE} nor {INDEX}; give the directory save_pretrained wrote")
    tensors: dict = {}
    for shard in shards:
        tensors.update(read_tensor_file(str(folder / shard)))
    return config, tensors


def _shards(folder: Path, weight_map) -> list[str]:
    """The shard files an index's weight_map names: each a ``.safetensors`` file
    directly in the checkpoint's folder (a name with a path, or one that is not a
    regular file there, is refused: reading it could read anything)."""
    where = folder / INDEX
    if not isinstance(weight_map, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in weight_map.items()):
        raise EvaluationError(f"{where}: weight_map is not a table of tensor name -> shard file name")
    shards = sorted(set(weight_map.values()))
    for shard in shards:
        if Path(shard).name != shard or not shard.endswith(".safetensors") or not (folder / shard).is_file():
            raise EvaluationError(f"{where}: shard {shard!r} is not a .safetensors file in {folder}; the "
                                  "index names the shards save_pretrained wrote beside it")
    return shards


# ------------------------------------------------------------- the model's file


def _zoo_model_of(selection: str):
    """(zoo model, its file's path, selector) of a ``file.py:Selector`` naming a
    zoo model file (by its file name), or None."""
    from tilefoundry.dsl.loader import split_source
    from tilefoundry.models import MODELS

    if not isinstance(selection, str):
        return None
    path, selector = split_source(selection)
    name = Path(path).name
    for model in MODELS:
        if name == model.file or re.fullmatch(rf"reduced_{re.escape(model.file[:-3])}_[0-9a-f]+\.py", name):
            return model, Path(path), selector
    return None


#: config.json fields transformers 5 writes under another name (its attribute maps)
_ALIASES = {"num_experts": "num_local_experts"}


def _config_value(config: dict, field_name: str):
    if field_name.startswith("rope_scaling."):  # a field of the RoPE scaling object
        key = field_name.split(".", 1)[1]
        scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
        if not isinstance(scaling, dict):
            return None
        if key == "type":  # transformers 5 names it rope_type; none is plain RoPE
            return scaling.get("rope_type", scaling.get("type", "default"))
        return scaling.get(key)
    value = config.get(field_name)
    if value is None and field_name in _ALIASES:
        value = config.get(_ALIASES[field_name])
    if value is None and field_name == "rope_theta":  # transformers 5 keeps it in rope_parameters
        parameters = config.get("rope_parameters")
        value = parameters.get("rope_theta") if isinstance(parameters, dict) else None
    return value


def _reduced_dims(model, published: dict, config: dict, where: str) -> dict:
    """The constants config.json sets apart from the published ones; refused
    where a size is larger than published or the architecture differs."""
    expected = published.get("HF_MODEL_TYPE")
    if expected is not None and config.get("model_type") != expected:
        raise EvaluationError(f"{where}: model_type is {config.get('model_type')!r}, {model.name} reads "
                              f"a {expected!r} checkpoint")
    for field_name, value in published.get("HF_FIXED", {}).items():
        found = _config_value(config, field_name)
        if found is not None and found != value:
            raise EvaluationError(f"{where}: {field_name} = {found!r} where {model.name} models "
                                  f"{field_name} = {value!r} ({model.file} HF_FIXED); give a checkpoint "
                                  f"with {field_name} = {value!r}")
    dims = {}
    for field_name, constant in published.get("HF_CONFIG", {}).items():
        value = _config_value(config, field_name)
        if value is None or value == published[constant]:
            continue
        mine = published[constant]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf") \
                or (isinstance(mine, int) and not isinstance(value, int)):
            kind = "an integer" if isinstance(mine, int) else "a number"
            raise EvaluationError(f"{where}: {field_name} = {value!r} is not {kind} above 0 "
                                  f"({model.file} states {constant} = {mine!r})")
        if isinstance(mine, int) and value > mine:
            raise EvaluationError(f"{where}: {field_name} = {value!r} where {model.name} states "
                                  f"{constant} = {mine!r} ({model.file}); only a smaller config runs "
                                  "(a reduced copy)")
        dims[constant] = type(mine)(value)
    return dims


# ------------------------------------------------------------- readings


def _evaluate(expression: str, env: dict) -> int:
    return int(eval(expression, {"max": max, "min": min}, dict(env)))


def _read(tensors: dict, name: str, reading: str, env: dict, where: str):
    steps = [s.strip() for s in reading.split(";") if s.strip()]
    if "stack" in steps:
        count = int(env["EXPERTS"])
        arrays = [_read(tensors, name.replace("{e}", str(e)), ";".join(s for s in steps if s != "stack"), env, where)
                  for e in range(count)]
        return np.stack(arrays)
    if name not in tensors:
        raise EvaluationError(f"{where}: the checkpoint has no tensor '{name}'")
    member = tensors[name]
    # execute's reader gives each member lazily (``load()``), an older one the array
    array = np.asarray(member.load() if hasattr(member, "load") else member)
    for step in steps:
        if step == "T":
            array = array.T
        elif step.startswith("rows(") and step.endswith(")"):
            start, stop = (_evaluate(part, env) for part in step[5:-1].split(","))
            array = array[start:stop]
        elif step.startswith("deinterleave(") and step.endswith(")"):
            width = _evaluate(step[13:-1], env)
            array = _deinterleave(array, width)
        elif step.startswith("heads_deinterleave(") and step.endswith(")"):
            heads, width = (_evaluate(part, env) for part in step[19:-1].split(","))
            array = _heads_deinterleave(array, heads, width)
        elif step.startswith("heads_rows(") and step.endswith(")"):
            heads, start, stop = (_evaluate(part, env) for part in step[11:-1].split(","))
            array = np.concatenate([block[start:stop] for block in np.split(array, heads)])
        elif step.startswith("reshape(") and step.endswith(")"):
            array = array.reshape(tuple(_evaluate(part, env) for part in step[8:-1].split(",")))
        elif step.startswith("transpose(") and step.endswith(")"):
            array = np.transpose(array, tuple(_evaluate(part, env) for part in step[10:-1].split(",")))
        else:
            raise UsageError(f"{where}: reading step {step!r} of '{name}' is not one of T, rows(a, b), "
                             "heads_rows(h, a, b), stack, deinterleave(n), heads_deinterleave(h, n), "
                             "reshape(...), transpose(...)")
    return array


def _deinterleave(array, width: int):
    """The last ``width`` rows (a Linear's output features: RoPE pairs 2i, 2i + 1)
    reordered to halves: our ``tf.rope`` rotates feature i with i + width/2."""
    order = np.concatenate([np.arange(0, width, 2), np.arange(1, width, 2)])
    head, tail = array[: array.shape[0] - width], array[array.shape[0] - width:]
    return np.concatenate([head, tail[order]])


def _heads_deinterleave(array, heads: int, width: int):
    """Per head of rows (``heads`` blocks of equal size), the last ``width`` rows
    de-interleaved as ``_deinterleave`` does."""
    blocks = np.split(array, heads)
    return np.concatenate([_deinterleave(block, width) for block in blocks])


def _cast(array, dtype_name: str):
    """``array`` in the parameter's dtype (a float through f32: exact for bf16/f16)."""
    from tilefoundry.ir.dtype import DType
    from tilefoundry.semantics.op_numerics import numpy_dtype

    target = numpy_dtype(DType.from_name(dtype_name))
    if array.dtype == target:
        return array
    if array.dtype.kind == "f" or array.dtype.name == "bfloat16":
        array = array.astype(np.float32)
    return array.astype(target)


def _rope_scaling(config: dict) -> dict:
    """The config's RoPE scaling parameters (rope_scaling, or transformers 5's
    rope_parameters), {} for plain RoPE."""
    found = config.get("rope_scaling") or config.get("rope_parameters") or {}
    if not isinstance(found, dict):
        raise EvaluationError(f"config.json: rope_scaling is {found!r}, not an object of RoPE parameters")
    kind = found.get("rope_type", found.get("type", "default"))
    return found if kind not in (None, "default") else {}


def _yarn(inv_freq, scaling: dict, theta: float, width: int, max_pos) -> tuple:
    """YaRN (arXiv 2309.00071; DeepSeek-V3's rope_scaling): each frequency blended
    between itself (extrapolation) and itself / factor (interpolation) by a linear ramp
    over the dimensions whose wavelength, at original_max_position_embeddings, lies
    between beta_fast and beta_slow rotations; cos and sin scaled by the attention
    factor mscale(factor, mscale) / mscale(factor, mscale_all_dim)."""
    original = float(scaling["original_max_position_embeddings"])
    factor = float(scaling.get("factor") or (float(max_pos) / original))

    def mscale(value):
        return 1.0 if factor <= 1 else 0.1 * float(value) * math.log(factor) + 1.0

    def dimension(rotations):  # the dimension whose wavelength makes `rotations` turns
        return width * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low = max(math.floor(dimension(scaling.get("beta_fast") or 32)), 0)
    high = min(math.ceil(dimension(scaling.get("beta_slow") or 1)), width - 1)
    ramp = np.clip((np.arange(width // 2) - low) / ((high - low) or 0.001), 0.0, 1.0)
    blended = inv_freq / factor * ramp + inv_freq * (1.0 - ramp)
    if scaling.get("attention_factor") is not None:
        attention = float(scaling["attention_factor"])
    elif scaling.get("mscale") and scaling.get("mscale_all_dim"):
        attention = mscale(scaling["mscale"]) / mscale(scaling["mscale_all_dim"])
    else:
        attention = mscale(1.0)
    return blended, attention


def rope_tables(config: dict, rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin tables (rows x width, f32) of the half-rotation RoPE that
    transformers' rotate_half applies: feature i and i + width/2 share the
    frequency theta^(-2i/width) (YaRN-scaled where the config's rope scaling is yarn;
    another scaling is refused)."""
    theta = _config_value(config, "rope_theta") or 10000.0
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 1.0 < theta < float("inf"):
        raise EvaluationError(f"config.json: rope_theta = {theta!r} is not a RoPE base above 1")
    theta = float(theta)
    inv_freq = 1.0 / theta ** (np.arange(0, width, 2, dtype=np.float64) / width)
    scaling, attention = _rope_scaling(config), 1.0
    if scaling:
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind != "yarn":
            raise EvaluationError(f"config.json: rope scaling {kind!r}: the RoPE tables are built for plain "
                                  "RoPE and YaRN; give cos_t and sin_t as inputs")
        try:
            inv_freq, attention = _yarn(inv_freq, scaling, theta, width, config.get("max_position_embeddings"))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise EvaluationError(f"config.json: the yarn rope scaling {scaling!r} is not one YaRN reads "
                                  f"(original_max_position_embeddings and a positive factor; {exc!r})") from None
    angles = np.outer(np.arange(rows, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    return (np.cos(angles) * attention).astype(np.float32), (np.sin(angles) * attention).astype(np.float32)


@dataclass
class Checkpoint:
    """One checkpoint directory opened for one selection."""

    directory: str
    config: dict
    tensors: dict
    model: object
    selection: str  # what runs: the zoo file's own selection, or a reduced copy's
    selector: str
    constants: dict = field(default_factory=dict)

    @property
    def layer_index(self) -> int | None:
        """The layer a ``Root.layerN[.fn]`` selection names."""
        parts = self.selector.split(".")
        match = re.fullmatch(r"layer([0-9]+)", parts[1]) if len(parts) > 1 else None
        return int(match.group(1)) if match else None

    def _reading(self, name: str):
        layer_weights = self.constants.get("HF_LAYER_WEIGHTS", {})
        root_weights = self.constants.get("HF_ROOT_WEIGHTS", {})
        match = re.fullmatch(r"layer([0-9]+)\.(\w+)", name)
        if match and match.group(2) in layer_weights:
            checkpoint_name, reading = layer_weights[match.group(2)]
            return checkpoint_name.replace("{i}", match.group(1)), reading
        if name in root_weights and self.layer_index is None:
            return root_weights[name]
        if name in layer_weights and self.layer_index is not None:
            checkpoint_name, reading = layer_weights[name]
            return checkpoint_name.replace("{i}", str(self.layer_index)), reading
        raise EvaluationError(f"{self.directory}: no checkpoint tensor maps to weight '{name}' of "
                              f"{self.selector} ({self.model.file} maps "
                              f"{', '.join(sorted(layer_weights))} of a layer and "
                              f"{', '.join(sorted(root_weights))} of the root); run the layer or the decode step")

    def weights(self, names) -> dict:
        """name -> array for each (name, dtype name) weight of the selection."""
        arrays = {}
        for name, dtype_name in names:
            checkpoint_name, reading = self._reading(name)
            if checkpoint_name not in self.tensors and checkpoint_name == "lm_head.weight" \
                    and self.config.get("tie_word_embeddings"):
                checkpoint_name = "model.embed_tokens.weight"  # a tied head reads the embedding
            array = _read(self.tensors, checkpoint_name, reading, self.constants, self.directory)
            arrays[name] = _cast(array, dtype_name)
        return arrays

    def tables(self, params) -> dict:
        """The RoPE tables among ``params`` ((name, shape) pairs), from the config."""
        found = {}
        shapes = dict(params)
        if "cos_t" in shapes and "sin_t" in shapes:
            rows, width = shapes["cos_t"]
            found["cos_t"], found["sin_t"] = rope_tables(self.config, rows, width)
        return found


def open_checkpoint(selection, directory) -> Checkpoint:
    """The checkpoint in ``directory`` opened for ``selection`` (a zoo model
    file's ``file.py:Selector``), on a reduced copy where the config is smaller."""
    from tilefoundry.models import reduced
    from tilefoundry.models.reduce_config import constants

    found = _zoo_model_of(selection)
    if found is None:
        raise UsageError(f"--weights {directory}: a checkpoint directory is read by a zoo model file's "
                         f"mapping (tilefoundry models); {selection!r} names none")
    model, path, selector = found
    config, tensors = read_checkpoint(directory)
    published = constants(path.read_text(encoding="utf-8"))
    if "HF_LAYER_WEIGHTS" not in published:
        raise UsageError(f"--weights {directory}: {model.file} states no checkpoint mapping yet")
    where = f"{directory}/config.json"
    if _reduced_dims(model, published, config, where):
        # the sizes are held against the published file, the copy is built from it
        text = path.read_text(encoding="utf-8")
        dims = _reduced_dims(model, constants(model.source.read_text(encoding="utf-8")), config, where)
        path = reduced(model.name, dtype="f32" if '"bf16"' not in text else None, **dims)
        published = constants(path.read_text(encoding="utf-8"))
    return Checkpoint(os.fspath(directory), config, tensors, model, f"{path}:{selector}", selector, published)



def _parameters(function, promoted) -> list:
    from tilefoundry.execute.inputs import parameter_names

    return [(name, tuple(int(e) for e in param.type.shape), param.type.dtype.name, is_weight)
            for param, name, is_weight in parameter_names(function, promoted)]


def _inputs_for(self: Checkpoint, function, promoted) -> dict:
    """The inputs the checkpoint's config gives a view (its RoPE tables)."""
    return self.tables([(name, shape) for name, shape, _, weight in _parameters(function, promoted) if not weight])


def _weights_for(self: Checkpoint, function, promoted) -> dict:
    """Every weight of a view, read from the checkpoint by the model's mapping."""
    return self.weights([(name, dtype) for name, _, dtype, weight in _parameters(function, promoted) if weight])


Checkpoint.inputs_for = _inputs_for
Checkpoint.weights_for = _weights_for


def checkpoint_dims(name: str, directory) -> dict:
    """The constants of zoo model ``name`` that the checkpoint's config.json sets
    apart from the published ones (what ``reduced`` takes to run it)."""
    from tilefoundry.models import model_named
    from tilefoundry.models.reduce_config import constants

    model = model_named(name)
    config = _read_config(directory)
    return _reduced_dims(model, constants(model.source.read_text(encoding="utf-8")), config,
                         f"{directory}/config.json")


def _read_config(directory) -> dict:
    path = Path(directory) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvaluationError(f"{path}: not a readable JSON file ({exc})") from None
