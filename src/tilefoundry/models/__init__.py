"""TileFoundry's own model zoo: decode-step layers of published LLM architectures,
written in the authoring DSL and shipped with the package.

Each model file is a complete program: a layer Module whose kernels are `@func`s
calling siblings defined above them, a root Module holding
``layers = tuple(Layer.renamed(f"layer{i}") for i in range(LAYERS))`` plus
`embed` / `lm_head`, weights as ``ConstTensor`` parameters, the config as
module-level constants and one DimVar ``ctx_len``. ``MODELS`` describes them; every
entry's ``selections`` is what ``tilefoundry analyze`` can be pointed at, with the
``--dim`` bindings that selection needs (``tilefoundry models --json``).

Importing this package does not import any model file (that runs the DSL).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["CTX_LEN", "MODELS", "Selection", "ZooModel", "model_named", "models_dir"]

#: the ``ctx_len`` binding every selection that states the DimVar is run at
CTX_LEN = 4096


def models_dir() -> Path:
    """The folder holding the model files (inside the installed package)."""
    return Path(__file__).resolve().parent


@dataclass(frozen=True)
class Selection:
    """One ``analyze`` selection: ``Root[.child][.function]`` and its dims."""

    selector: str
    dims: tuple[tuple[str, int], ...] = ()

    def dim_args(self) -> list[str]:
        """``["--dim", "NAME=V", ...]`` for the CLI."""
        args: list[str] = []
        for name, value in self.dims:
            args += ["--dim", f"{name}={value}"]
        return args

    def dim_map(self) -> dict[str, int] | None:
        """The ``dims=`` mapping for ``tilefoundry.analysis.analyze.analyze``."""
        return dict(self.dims) or None


@dataclass(frozen=True)
class ZooModel:
    """One model file of the zoo.

    Attributes:
        name: short name (``tilefoundry models`` lists it).
        file: the file's name inside this package.
        root: the root Module's name in that file.
        architecture: what the file models, in words.
        layers: how many renamed layer copies the root holds.
        root_functions: the root's own kernels (selected as ``Root.<fn>``).
        layer_functions: the layer Module's kernels, definition order.
        selections: every selection to analyse, with its dims.
    """

    name: str
    file: str
    root: str
    architecture: str
    layers: int
    root_functions: tuple[str, ...]
    layer_functions: tuple[str, ...]
    selections: tuple[Selection, ...]

    @property
    def source(self) -> Path:
        return models_dir() / self.file

    def source_arg(self, selection: Selection) -> str:
        """``path.py:Selector`` as ``analyze`` takes it."""
        return f"{self.source}:{selection.selector}"

    @property
    def functions(self) -> tuple[str, ...]:
        return self.root_functions + tuple(f"layer.{f}" for f in self.layer_functions)


_DIMS = (("ctx_len", CTX_LEN),)


def _model(name, file, root, architecture, layers, layer_functions, ctx_functions,
           root_functions=("embed", "lm_head"), layer_children=("layer0",), ctx_children=None):
    """Selections: the root's kernels, each listed layer child (its entry) and each of
    its kernels; a selection whose function states ``ctx_len`` gets ``--dim``."""
    ctx_children = layer_children if ctx_children is None else ctx_children
    selections = [Selection(f"{root}.{fn}") for fn in root_functions]
    for child in layer_children:
        dims_child = child in ctx_children
        entry_dims = _DIMS if dims_child and "decoder_layer" in ctx_functions else ()
        selections.append(Selection(f"{root}.{child}", entry_dims))
        for fn in layer_functions:
            selections.append(Selection(f"{root}.{child}.{fn}",
                                        _DIMS if dims_child and fn in ctx_functions else ()))
    return ZooModel(name, file, root, architecture, layers, tuple(root_functions),
                    tuple(layer_functions), tuple(selections))


MODELS: tuple[ZooModel, ...] = (
    _model("llama3-8b", "llama3_8b.py", "Llama3_8B",
           "Llama-3-8B decode: GQA + RoPE, SwiGLU, RMSNorm; placed online-softmax attention",
           2, ("rms", "qkv_rope", "attention", "attention_placed", "mlp", "decoder_layer"),
           ("attention", "attention_placed", "decoder_layer")),
    _model("qwen3-moe", "qwen3_moe.py", "Qwen3Moe",
           "Qwen3-30B-A3B decode: q/k-norm GQA; router softmax + top-k, routed + shared experts",
           2, ("rms", "attention", "router", "routed_experts", "shared_expert", "moe", "decoder_layer"),
           ("attention", "decoder_layer")),
    _model("deepseek-v3-mla", "deepseek_v3_mla.py", "DeepSeekV3",
           "DeepSeek-V3 decode: MLA (low-rank q/kv, decoupled RoPE, absorbed), dense SwiGLU",
           2, ("rms", "q_proj", "mla_attention", "mlp", "decoder_layer"),
           ("mla_attention", "decoder_layer")),
    _model("gemma2-9b", "gemma2_9b.py", "Gemma2_9B",
           "Gemma-2-9B decode: sliding-window / global layers, logit soft-capping, GeGLU",
           2, ("norm", "attention", "mlp", "decoder_layer"),
           ("attention", "decoder_layer"), layer_children=("layer0", "layer1"),
           ctx_children=("layer1",)),
    _model("mamba2-2.7b", "mamba2_2_7b.py", "Mamba2_2_7B",
           "Mamba-2 2.7B: conv1d + SSD recurrent state update (decode), recurrent prefill scan",
           2, ("rms", "conv_step", "mixer", "prefill_scan", "decoder_layer"),
           ("prefill_scan",)),
    _model("phi3-mini", "phi3_mini.py", "Phi3Mini",
           "Phi-3-mini decode: fused QKV / gate-up (tf.split), MHA; placed online-softmax attention",
           2, ("norm", "qkv_rope", "attention", "attention_placed", "mlp", "decoder_layer"),
           ("attention", "attention_placed", "decoder_layer")),
)


def model_named(name: str) -> ZooModel:
    for model in MODELS:
        if model.name == name:
            return model
    raise KeyError(f"no zoo model named {name!r}; models: {', '.join(m.name for m in MODELS)}")
