"""TileFoundry's own model zoo: decode steps of published LLM architectures,
written in the authoring DSL and shipped with the package.

Each model file is a complete program holding two kinds of roots:

- the logical root (``Llama3_8B``): the specification. A layer Module whose
  kernels are ``@func``s calling siblings defined above them, LAYERS renamed
  copies of it, ``embed``, ``lm_head`` and the whole-model ``decode_step``;
- the placed roots (``Llama3_8B_H200``, ``Llama3_8B_B200``): the same decode step
  with every kernel placed over the whole device as production decode kernels
  are (docs/models.md), checkable against the logical one (``check --against``).

Weights are ``ConstTensor`` parameters, the config (the published one, named in
``ZooModel.config``) module-level constants, one DimVar ``ctx_len``. ``MODELS``
describes them; every entry's ``selections`` is what ``tilefoundry analyze`` can be
pointed at, with the ``--dim`` bindings that selection needs (``tilefoundry models
--json``).

Importing this package does not import any model file (that runs the DSL).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tilefoundry.errors import SelectionError

__all__ = ["CTX_LEN", "KINDS", "MODELS", "PlacedRoot", "Selection", "ZooModel", "UnknownModel", "model_named", "models_dir",
           "reduced"]

#: the ``ctx_len`` binding every selection that states the DimVar is run at
CTX_LEN = 4096


def models_dir() -> Path:
    """The folder holding the model files (inside the installed package)."""
    return Path(__file__).resolve().parent


#: what a selection is: one kernel, one layer's entry, or the whole model's decode step
KINDS = ("kernel", "layer", "decode-step")


@dataclass(frozen=True)
class Selection:
    """One ``analyze`` selection: ``Root[.child][.function]``, its dims, what it
    is (one of ``KINDS``) and the target its root declares."""

    selector: str
    dims: tuple[tuple[str, int], ...] = ()
    kind: str = "kernel"
    target: str = "nvidia.h200_sxm"
    #: the smallest ctx_len the selection admits (a placed attention walks whole
    #: windows of KV_BLOCK * SPLITS cache rows)
    min_ctx: int = 1

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
class PlacedRoot:
    """A placed root of a model file: its name and the target it declares."""

    root: str
    target: str


@dataclass(frozen=True)
class ZooModel:
    """One model file of the zoo.

    Attributes:
        name: short name (``tilefoundry models`` lists it).
        file: the file's name inside this package.
        root: the root Module's name in that file.
        architecture: what the file models, in words.
        layers: how many layers every root holds (the published count).
        root_functions: the logical root's own kernels (selected as ``Root.<fn>``).
        layer_functions: the logical layer Module's kernels, definition order.
        selections: every selection to analyse, with its dims.
        config: the published configuration the constants are taken from.
        placed_roots: the placed roots, one per target.
        placed_functions: the placed layer Module's kernels, definition order.
        child_functions: (child, its kernels, its placed kernels) for each layer child of
            another kind than ``layer0`` (DeepSeek-V3's MoE layers).
    """

    name: str
    file: str
    root: str
    architecture: str
    layers: int
    root_functions: tuple[str, ...]
    layer_functions: tuple[str, ...]
    selections: tuple[Selection, ...]
    config: str = ""
    placed_roots: tuple[PlacedRoot, ...] = ()
    placed_functions: tuple[str, ...] = ()
    child_functions: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

    @property
    def logical_selections(self) -> tuple[Selection, ...]:
        """The selections of the logical root (the specification)."""
        return tuple(s for s in self.selections if s.selector.split(".")[0] == self.root)

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
#: the smallest ctx_len of every placed root (KV_BLOCK * SPLITS = 1024 in each model)
PLACED_MIN_CTX = 1024
#: the targets a placed root is built for, and the suffix of its name
TARGETS = {"nvidia.h100_sxm": "H100", "nvidia.h200_sxm": "H200", "nvidia.b200_sxm": "B200"}
#: the placed roots' own kernels, and the whole model's entry
PLACED_ROOT_FUNCTIONS = ("embed", "lm_head", "decode_step")


def _layer_selections(root, child, functions, ctx_functions, dims_child, target, skip=(), min_ctx=1):
    """``Root.child`` (the layer's entry) and ``Root.child.<fn>`` for every kernel but
    ``skip``; a selection whose function states ``ctx_len`` gets ``--dim``."""
    entry = _DIMS if dims_child and "decoder_layer" in ctx_functions else ()
    found = [Selection(f"{root}.{child}", entry, "layer", target, min_ctx)]
    for fn in functions:
        if fn in skip:
            continue
        dims = _DIMS if dims_child and fn in ctx_functions else ()
        found.append(Selection(f"{root}.{child}.{fn}", dims, "kernel", target, min_ctx))
    return found


def _model(name, file, root, architecture, layers, layer_functions, ctx_functions, *,
           config, placed_functions, placed_ctx, root_functions=("embed", "lm_head"),
           layer_children=("layer0",), ctx_children=None, placed_children=None,
           decode_dims=_DIMS, child_functions=None):
    """Selections: the logical root's kernels and each listed layer child (its entry and
    every kernel: ``child_functions[child]`` where the child is of another kind); then
    per target the placed root's decode step (the whole model), its embed and lm_head,
    and each placed layer child with its kernels."""
    kinds = child_functions or {}
    ctx_children = layer_children if ctx_children is None else ctx_children
    placed_children = layer_children if placed_children is None else placed_children
    selections = [Selection(f"{root}.{fn}") for fn in root_functions]
    for child in layer_children:
        functions = kinds.get(child, (layer_functions,))[0]
        selections += _layer_selections(root, child, functions, ctx_functions,
                                        child in ctx_children, "nvidia.h200_sxm")
    placed = tuple(PlacedRoot(f"{root}_{suffix}", target) for target, suffix in TARGETS.items())
    for proot in placed:
        if decode_dims is not None:
            selections.append(Selection(f"{proot.root}.decode_step", decode_dims, "decode-step", proot.target,
                                        PLACED_MIN_CTX))
        selections += [Selection(f"{proot.root}.{fn}", (), "kernel", proot.target, PLACED_MIN_CTX)
                       for fn in PLACED_ROOT_FUNCTIONS[:2]]
        for child in placed_children:
            # `Root.child` is the layer's entry: its kernel selection would repeat it
            functions = kinds.get(child, (None, placed_functions))[1]
            selections += _layer_selections(proot.root, child, functions, placed_ctx,
                                            child in ctx_children, proot.target, skip=("decoder_layer",),
                                            min_ctx=PLACED_MIN_CTX)
    return ZooModel(name, file, root, architecture, layers, tuple(root_functions),
                    tuple(layer_functions), tuple(selections), config, placed,
                    tuple(placed_functions),
                    tuple((child, tuple(f), tuple(p)) for child, (f, p) in kinds.items()))


MODELS: tuple[ZooModel, ...] = (
    _model("llama3-8b", "llama3_8b.py", "Llama3_8B",
           "Llama-3-8B decode: GQA + RoPE, SwiGLU, RMSNorm; placed: split-K flash decoding, GEMVs on all CTAs",
           32, ("rms", "qkv_rope", "attention", "attention_placed", "mlp", "decoder_layer"),
           ("attention", "attention_placed", "decoder_layer"),
           config="meta-llama/Meta-Llama-3-8B",
           placed_functions=("rms", "qkv", "decode_attention", "out_proj", "attention", "mlp",
                             "residual", "decoder_layer"),
           placed_ctx=("decode_attention", "attention", "decoder_layer")),
    _model("qwen3-moe", "qwen3_moe.py", "Qwen3Moe",
           "Qwen3-30B-A3B decode: q/k-norm GQA; router softmax + top-8 of 128 experts (normalised), "
           "no shared expert; placed: split-K flash decoding, experts one by one over all CTAs",
           48, ("rms", "attention", "router", "routed_experts", "moe", "decoder_layer"),
           ("attention", "decoder_layer"),
           config="Qwen/Qwen3-30B-A3B",
           placed_functions=("rms", "qkv", "decode_attention", "out_proj", "attention", "router",
                             "routed_experts", "residual", "moe", "decoder_layer"),
           placed_ctx=("decode_attention", "attention", "decoder_layer")),
    _model("qwen3-moe-shared", "qwen3_moe_shared.py", "Qwen3MoeShared",
           "Qwen3-30B-A3B shapes plus a Qwen2-MoE-style sigmoid-gated shared expert (a zoo variant, "
           "no published checkpoint); placed as qwen3-moe, the shared expert two GEMVs",
           48, ("rms", "attention", "router", "routed_experts", "shared_expert", "moe", "decoder_layer"),
           ("attention", "decoder_layer"),
           config="Qwen/Qwen3-30B-A3B plus a Qwen2-MoE-style shared expert (Qwen/Qwen1.5-MoE-A2.7B's block)",
           placed_functions=("rms", "qkv", "decode_attention", "out_proj", "attention", "router",
                             "routed_experts", "shared_expert", "residual", "moe", "decoder_layer"),
           placed_ctx=("decode_attention", "attention", "decoder_layer")),
    _model("deepseek-v3-mla", "deepseek_v3_mla.py", "DeepSeekV3",
           "DeepSeek-V3 decode: MLA (low-rank q/kv, decoupled RoPE, absorbed); 3 dense SwiGLU layers, "
           "58 MoE layers (256 experts, group-limited sigmoid top-8, 1 shared expert); placed: latent "
           "attention over head groups x sequence splits, experts one by one over all CTAs",
           61, ("rms", "q_proj", "mla_attention", "mlp", "decoder_layer"),
           ("mla_attention", "decoder_layer"), layer_children=("layer0", "layer3"),
           config="deepseek-ai/DeepSeek-V3",
           placed_functions=("rms", "down_proj", "q_absorbed", "latent_attention", "value_out",
                             "mla_attention", "residual", "mlp", "decoder_layer"),
           placed_ctx=("latent_attention", "mla_attention", "decoder_layer"), decode_dims=None,
           child_functions={"layer3": (("rms", "q_proj", "mla_attention", "router", "routed_experts",
                                        "shared_expert", "moe", "decoder_layer"),
                                       ("rms", "down_proj", "q_absorbed", "latent_attention", "value_out",
                                        "mla_attention", "residual", "router", "routed_experts",
                                        "shared_expert", "moe", "decoder_layer"))}),
    _model("gemma2-9b", "gemma2_9b.py", "Gemma2_9B",
           "Gemma-2-9B decode: sliding-window / global layers, logit soft-capping, GeGLU; "
           "placed: split-K flash decoding with the cap per block",
           42, ("norm", "attention", "mlp", "decoder_layer"),
           ("attention", "decoder_layer"), layer_children=("layer0", "layer1"),
           ctx_children=("layer1",), config="google/gemma-2-9b",
           placed_functions=("norm", "qkv", "decode_attention", "out_proj", "attention", "mlp",
                             "residual", "decoder_layer"),
           placed_ctx=("decode_attention", "attention", "decoder_layer")),
    _model("mamba2-2.7b", "mamba2_2_7b.py", "Mamba2_2_7B",
           "Mamba-2 2.7B: conv1d + SSD recurrent state update (decode), recurrent prefill scan; "
           "placed: state update over heads x head dimension",
           64, ("rms", "conv_step", "mixer", "prefill_scan", "decoder_layer"),
           ("prefill_scan",), config="state-spaces/mamba2-2.7b",
           placed_functions=("rms", "in_proj", "ssm", "out_proj", "mixer", "residual", "decoder_layer"),
           placed_ctx=(), decode_dims=()),
    _model("phi3-mini", "phi3_mini.py", "Phi3Mini",
           "Phi-3-mini decode: fused QKV / gate-up (tf.split), MHA; placed: split-K flash decoding, "
           "the fused weights read as column windows",
           32, ("norm", "qkv_rope", "attention", "attention_placed", "mlp", "decoder_layer"),
           ("attention", "attention_placed", "decoder_layer"),
           config="microsoft/Phi-3-mini-4k-instruct",
           placed_functions=("norm", "qkv", "decode_attention", "out_proj", "attention", "mlp",
                             "residual", "decoder_layer"),
           placed_ctx=("decode_attention", "attention", "decoder_layer")),
)


class UnknownModel(SelectionError, KeyError):
    """No zoo model of that name: a refusal of one line (a TileFoundryError),
    and a KeyError as a lookup by name always raised."""

    @property
    def raw(self) -> str:
        return str(self.args[0]) if self.args else ""  # not KeyError's quoted form


def model_named(name: str) -> ZooModel:
    """The zoo model ``name`` (`tilefoundry models`)."""
    from tilefoundry.arguments import NAME, checked

    name = checked("tilefoundry.models.model_named", "name", name, NAME)
    for model in MODELS:
        if model.name == name:
            return model
    raise UnknownModel(f"no zoo model named {name!r}; models: {', '.join(m.name for m in MODELS)}")


def reduced(name: str, *, dtype: str | None = None, folder=None, **dims):
    """A reduced-config copy of zoo model ``name`` (its path): see
    ``tilefoundry.models.reduce_config`` for the divisibility rules it keeps."""
    from tilefoundry.arguments import PATH, checked, optional
    from tilefoundry.errors import UsageError
    from tilefoundry.models.reduce_config import reduced as build

    folder = checked("tilefoundry.models.reduced", "folder", folder, optional(PATH))
    try:
        model = model_named(name)
    except KeyError as exc:
        raise UsageError(f"reduced: {exc.args[0]}") from None
    return build(model, dtype=dtype, folder=folder, **dims)
