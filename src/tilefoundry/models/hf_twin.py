"""transformers as a twin: ``check --against hf:<model> --weights DIR`` (issue 39).

The twin runs the ``transformers`` module of the same architecture on the same
checkpoint (``from_pretrained(DIR)``, eager attention) and the same cache, and
returns what the selection returns:

- a layer (``Root.layerN``): the HF decoder layer N of the loaded model, its
  RoPE from the model's own rotary embedding, over a cache holding the rows
  the layer may attend (positions ``0 .. pos - 1``; a sliding layer only the
  last ``sliding_window - 1`` of them, transformers' rule ``kv > q - window``);
  it returns the hidden state and our caches with the new row written where
  the program writes it (``pos``, or ``slot`` of a ring buffer);
- the whole decode step (``Root``, entry ``decode_step``): the HF causal LM on
  ``token`` at ``pos`` over every layer's cache (positions in order; a ring
  buffer's older positions are zeros, which transformers' own sliding mask
  hides), returning the f32 logits.

The model runs in the checkpoint's float dtype where our program is bf16 and
in f32 where it is an f32 copy (``reduced(..., dtype="f32")``). torch and
transformers are the optional extra ``hf`` (``pip install 'tilefoundry[hf]'``);
without them the twin is refused in one line.
"""
from __future__ import annotations

import numpy as np

from tilefoundry.errors import EvaluationError, UsageError

__all__ = ["HF_MODULES", "HFTwin", "hf_twin"]

#: zoo model -> the transformers module the twin runs (docs/models.md)
HF_MODULES = {
    "llama3-8b": "LlamaDecoderLayer / LlamaForCausalLM",
    "gemma2-9b": "Gemma2DecoderLayer / Gemma2ForCausalLM",
    "phi3-mini": "Phi3DecoderLayer / Phi3ForCausalLM",
    "qwen3-moe": "Qwen3MoeDecoderLayer / Qwen3MoeForCausalLM",
    "deepseek-v3-mla": "DeepseekV3DecoderLayer (DeepseekV3Attention, DeepseekV3MoE) / DeepseekV3ForCausalLM",
    "mamba2-2.7b": "Mamba2Block (Mamba2Mixer) / Mamba2ForCausalLM",
}
#: models with recurrent states (a conv window and an SSM state) instead of a KV cache
_RECURRENT = {"mamba2-2.7b"}
#: per model: the decode step's cache input names by layer kind
_CACHES = {
    "gemma2-9b": {"sliding": ("k_win", "v_win"), "full": ("k_glob", "v_glob")},
}
#: per model whose caches are not k/v: (a layer's cache names, the decode step's); DeepSeek's
#: MLA caches the normalised latent and the rotated RoPE key, as transformers' cache does
_CACHE_NAMES = {
    "deepseek-v3-mla": (("ckv_cache", "kpe_cache"), ("ckv_caches", "kpe_caches")),
}
_KV_NAMES = (("k_cache", "v_cache"), ("k_caches", "v_caches"))


def _torch():
    try:
        import torch
        import transformers
    except ImportError:
        raise UsageError("--against hf:MODEL runs transformers: install the extra "
                         "(pip install 'tilefoundry[hf]', torch and transformers)") from None
    return torch, transformers


def hf_twin(against: str, selection, weights):
    """The twin ``hf:<model>`` for ``selection`` on checkpoint ``weights``: a
    callable over the program's arguments by name (the execution wraps it)."""
    from tilefoundry.models import model_named
    from tilefoundry.models.checkpoints import is_checkpoint_dir, open_checkpoint

    name = against[3:]
    if name not in HF_MODULES:
        known = ", ".join(f"hf:{m}" for m in HF_MODULES)
        try:
            model_named(name)
        except KeyError:
            raise UsageError(f"check: --against {against}: no zoo model {name!r}; twins: {known}") from None
        raise UsageError(f"check: --against {against}: {name} has no transformers twin yet; twins: {known}")
    if not is_checkpoint_dir(weights):
        raise UsageError(f"check: --against {against} runs transformers on a checkpoint: give "
                         "--weights DIR (the directory save_pretrained writes)")
    _torch()
    opened = open_checkpoint(selection, weights)
    if opened.model.name != name:
        raise UsageError(f"check: --against {against}: the selection is {opened.model.name}'s")
    return HFTwin(name, opened)


_LOADED: dict = {}


def _loaded(directory: str, dtype):
    """The checkpoint's causal LM in ``dtype``, eager attention, loaded once per
    process (the tests hold several selections against one checkpoint)."""
    import os

    torch, transformers = _torch()
    key = (os.path.realpath(directory), os.stat(os.path.join(directory, "config.json")).st_mtime_ns, dtype)
    if key not in _LOADED:
        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=dtype,
                                                                  attn_implementation="eager")
        _LOADED[key] = model.eval()
    return _LOADED[key]


class HFTwin:
    """Called with the program's arguments by name and its output names."""

    by_name = True

    def __init__(self, name: str, opened):
        self.name = name
        self.opened = opened
        self._models: dict = {}

    # ------------------------------------------------------------ the model

    def _model(self, dtype):
        return _loaded(self.opened.directory, dtype)

    def __call__(self, arguments: dict, names: list) -> dict:
        torch, _ = _torch()
        floats = [a for a in arguments.values() if np.asarray(a).dtype.kind == "f" or a.dtype.name == "bfloat16"]
        bf16 = any(np.asarray(a).dtype.name == "bfloat16" for a in floats)
        model = self._model(torch.bfloat16 if bf16 else torch.float32)
        n_new = arguments.get("n_new")
        if n_new is not None and int(np.asarray(n_new).reshape(-1)[0]) != 1:
            raise EvaluationError(f"--against hf:{self.name}: a decode step writes one row; give n_new = 1")
        with torch.no_grad():
            if "token" in arguments:
                if self.name in _RECURRENT:
                    return _recurrent_step(torch, model, arguments, names)
                return self._decode_step(torch, model, arguments, names)
            if self.opened.layer_index is None or len(self.opened.selector.split(".")) != 2:
                raise UsageError(f"--against hf:{self.name}: the twin runs a layer (Root.layerN) or the "
                                 f"decode step (Root); {self.opened.selector} is a kernel")
            if self.name in _RECURRENT:
                return _recurrent_layer(torch, model, self.opened.layer_index, arguments, names)
            return self._layer(torch, model, arguments, names)

    # ------------------------------------------------------------ helpers

    def _sliding(self, model, index: int) -> int | None:
        config = model.config
        window = getattr(config, "sliding_window", None)
        types = getattr(config, "layer_types", None)
        if window is None:
            return None
        if types is not None and types[index] != "sliding_attention":
            return None
        return int(window)

    def _past(self, torch, model, index: int, cache, pos: int, slot_of, *, trim: bool):
        """Rows (positions, n_kv, head_dim) of positions 0 .. pos - 1 the layer may
        attend, from ``cache`` (ours: 1, capacity, n_kv, head_dim); a sliding
        layer's older positions are zeros, or left out where ``trim`` (no mask)."""
        window = self._sliding(model, index)
        rows = np.zeros((pos,) + cache.shape[2:], dtype=np.float32)
        first = 0 if window is None else max(0, pos - window + 1)
        for p in range(first, pos):
            rows[p] = np.asarray(cache[0, slot_of(p)], dtype=np.float32)
        return rows[first:] if trim else rows

    def _torch_rows(self, torch, rows, dtype):
        return torch.from_numpy(np.ascontiguousarray(rows.transpose(1, 0, 2)[None])).to(dtype)

    def _cache(self, torch, model, pasts: dict):
        from transformers import DynamicCache

        count = model.config.num_hidden_layers
        data = []
        for index in range(count):
            if index in pasts and pasts[index][0].shape[2] > 0:
                data.append(pasts[index])
            else:
                data.append((None, None))
        return DynamicCache(ddp_cache_data=data)

    # ------------------------------------------------------------ a layer

    def _layer(self, torch, model, arguments: dict, names: list) -> dict:
        index = self.opened.layer_index
        dtype = model.dtype
        pos = int(np.asarray(arguments["pos"]).reshape(-1)[0])
        write = int(np.asarray(arguments.get("slot", arguments["pos"])).reshape(-1)[0])
        k_name, v_name = _CACHE_NAMES.get(self.name, _KV_NAMES)[0]
        k_cache, v_cache = np.asarray(arguments[k_name]), np.asarray(arguments[v_name])
        capacity = k_cache.shape[1]
        ring = write != pos or capacity < pos + 1

        def slot_of(p):
            return p % capacity if ring else p

        keys = self._past(torch, model, index, k_cache, pos, slot_of, trim=True)
        values = self._past(torch, model, index, v_cache, pos, slot_of, trim=True)
        pasts = {index: (self._torch_rows(torch, keys, dtype), self._torch_rows(torch, values, dtype))}
        cache = self._cache(torch, model, pasts)
        x = torch.from_numpy(np.asarray(arguments["x"], dtype=np.float32)).to(dtype)[None]
        position = torch.tensor([[pos]])
        embeddings = model.model.rotary_emb(x, position)
        layer = model.model.layers[index]
        out = layer(x, attention_mask=None, position_ids=position, cache=cache, use_cache=True,
                    position_embeddings=embeddings, cache_position=torch.tensor([pos]))
        hidden = out[0] if isinstance(out, tuple) else out
        layer_cache = cache.layers[index]
        new_k = layer_cache.keys[0, :, -1].float().numpy()
        new_v = layer_cache.values[0, :, -1].float().numpy()
        k_all, v_all = k_cache.copy(), v_cache.copy()
        k_all[0, write] = new_k.astype(k_all.dtype)
        v_all[0, write] = new_v.astype(v_all.dtype)
        results = [hidden[0].float().numpy(), k_all, v_all]
        return dict(zip(names, results))

    # ------------------------------------------------------------ the decode step

    def _decode_step(self, torch, model, arguments: dict, names: list) -> dict:
        dtype = model.dtype
        pos = int(np.asarray(arguments["pos"]).reshape(-1)[0])
        count = model.config.num_hidden_layers
        pasts = {}
        kinds = _CACHES.get(self.name)
        seen = {"sliding": 0, "full": 0}
        for index in range(count):
            if kinds is None:
                k_name, v_name = _CACHE_NAMES.get(self.name, _KV_NAMES)[1]
                k, v, i = arguments[k_name], arguments[v_name], index
            else:
                kind = "sliding" if self._sliding(model, index) is not None else "full"
                k_name, v_name = kinds[kind]
                k, v, i = arguments[k_name], arguments[v_name], seen[kind]
                seen[kind] += 1
            k_layer, v_layer = np.asarray(k)[i], np.asarray(v)[i]
            capacity = k_layer.shape[1]

            def slot_of(p, capacity=capacity):
                return p % capacity

            keys = self._past(torch, model, index, k_layer, pos, slot_of, trim=False)
            values = self._past(torch, model, index, v_layer, pos, slot_of, trim=False)
            pasts[index] = (self._torch_rows(torch, keys, dtype), self._torch_rows(torch, values, dtype))
        cache = self._cache(torch, model, pasts)
        token = torch.tensor([[int(np.asarray(arguments["token"]).reshape(-1)[0])]])
        import inspect

        # transformers 5 renames past_key_values to cache (the old name warns until 5.40)
        key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        out = model(input_ids=token, position_ids=torch.tensor([[pos]]), cache_position=torch.tensor([pos]),
                    use_cache=True, **{key: cache})
        logits = out.logits[0].float().numpy()
        return dict(zip(names, [logits]))



# ------------------------------------------------------------ recurrent models (Mamba-2)


def _recurrent_cache(torch, model, states: dict):
    """transformers' cache holding, for each layer index, our (conv window, SSM state):
    the conv window ours (1, D_CONV, CONV_CH) is transformers' (1, CONV_CH, D_CONV)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    for index, (conv, ssm) in states.items():
        conv_t = torch.from_numpy(np.ascontiguousarray(np.asarray(conv, np.float32).transpose(0, 2, 1)))
        ssm_t = torch.from_numpy(np.ascontiguousarray(np.asarray(ssm, np.float32)))
        layer = cache.layers[index]
        layer.lazy_initialization(conv_states=conv_t.to(model.dtype), recurrent_states=ssm_t)
        layer.conv_states[0].copy_(conv_t)
        layer.recurrent_states[0].copy_(ssm_t)
        layer.has_previous_state[0] = True
    return cache


def _recurrent_layer(torch, model, index: int, arguments: dict, names: list) -> dict:
    """Block `index` on one token over our states; returns the hidden state and the
    updated states in our layouts."""
    cache = _recurrent_cache(torch, model, {index: (arguments["conv_state"], arguments["ssm_state"])})
    x = torch.from_numpy(np.asarray(arguments["x"], dtype=np.float32)).to(model.dtype)[None]
    hidden = model.backbone.layers[index](x, cache=cache)
    layer = cache.layers[index]
    conv = layer.conv_states[0].float().numpy().transpose(0, 2, 1)
    ssm = layer.recurrent_states[0].float().numpy()
    conv_dtype = np.asarray(arguments["conv_state"]).dtype
    results = [hidden[0].float().numpy(), conv.astype(conv_dtype), ssm.astype(np.float32)]
    return dict(zip(names, results))


def _recurrent_step(torch, model, arguments: dict, names: list) -> dict:
    """The causal LM on `token` over every layer's states: the f32 logits."""
    conv, ssm = np.asarray(arguments["conv_states"]), np.asarray(arguments["ssm_states"])
    cache = _recurrent_cache(torch, model, {i: (conv[i], ssm[i]) for i in range(model.config.num_hidden_layers)})
    token = torch.tensor([[int(np.asarray(arguments["token"]).reshape(-1)[0])]])
    out = model(input_ids=token, cache=cache, use_cache=True)
    return dict(zip(names, [out.logits[0].float().numpy()]))
