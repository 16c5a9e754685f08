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

__all__ = ["CTX_LEN", "KINDS", "MODELS", "PlacedRoot", "Selection", "ZooModel", "model_named", "models_dir"]

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
TARGETS = ("nvidia.h200_sxm", "nvidia.b200_sxm")
#: the placed roots' own kernels, and the whole model's entry
PLACED_ROOT_FUNCTIONS = ("embed", "lm_head", "decode_step")


def _layer_selections(root, child, functions, ctx_functions, dims_child, target):
    """``Root.child`` (the layer's entry) and ``Root.child.<fn>`` for every kernel;
    a selection whose function states ``ctx_len`` gets ``--dim``."""
    entry = _DIMS if dims_child and "decoder_layer" in ctx_functions else ()
    found = [Selection(f"{root}.{child}", entry, "layer", target)]
    for fn in functions:
        dims = _DIMS if dims_child and fn in ctx_functions else ()
        found.append(Selection(f"{root}.{child}.{fn}", dims, "kernel", target))
    return found


def _model(name, file, root, architecture, layers, layer_functions, ctx_functions, *,
           config, placed_functions, placed_ctx, root_functions=("embed", "lm_head"),
           layer_children=("layer0",), ctx_children=None, placed_children=None,
           decode_dims=_DIMS):
    """Selections: the logical root's kernels and each listed layer child (its entry and
    every kernel); then per target the placed root's decode step (the whole model),
    its embed and lm_head, and each placed layer child with its kernels."""
    ctx_children = layer_children if ctx_children is None else ctx_children
    placed_children = layer_children if placed_children is None else placed_children
    selections = [Selection(f"{root}.{fn}") for fn in root_functions]
    for child in layer_children:
        selections += _layer_selections(root, child, layer_functions, ctx_functions,
                                        child in ctx_children, TARGETS[0])
    placed = tuple(PlacedRoot(f"{root}_{t.split('.')[1].split('_')[0].upper()}", t) for t in TARGETS)
    for proot in placed:
        selections.append(Selection(f"{proot.root}.decode_step", decode_dims, "decode-step", proot.target))
        selections += [Selection(f"{proot.root}.{fn}", (), "kernel", proot.target)
                       for fn in PLACED_ROOT_FUNCTIONS[:2]]
        for child in placed_children:
            selections += _layer_selections(proot.root, child, placed_functions, placed_ctx,
                                            child in ctx_children, proot.target)
    return ZooModel(name, file, root, architecture, layers, tuple(root_functions),
                    tuple(layer_functions), tuple(selections), config, placed,
                    tuple(placed_functions))


MODELS: tuple[ZooModel, ...] = (
    _model("llama3-8b", "llama3_8b.py", "Llama3_8B",
           "Llama-3-8B decode: GQA + RoPE, SwiGLU, RMSNorm; placed: split-K flash decoding, GEMVs over all CTAs",
           32, ("rms", "qkv_rope", "attention", "attention_placed", "mlp", "decoder_layer"),
           ("attention", "attention_placed", "decoder_layer"),
           config="meta-llama/Meta-Llama-3-8B",
           placed_functions=("rms", "qkv", "decode_attention", "out_proj", "attention", "mlp",
                             "residual", "decoder_layer"),
           placed_ctx=("decode_attention", "attention", "decoder_layer")),
)


def model_named(name: str) -> ZooModel:
    for model in MODELS:
        if model.name == name:
            return model
    raise KeyError(f"no zoo model named {name!r}; models: {', '.join(m.name for m in MODELS)}")
