"""The HIR op set. Each family module registers its ops with their typeinfer,
access relation and cost evaluator, side by side in the op's own section
(``tilefoundry.semantics.op_registry``; the cost contracts are in
``tilefoundry.semantics.cost``).

Importing this package loads no family: a family is loaded when a program
first names one of its ops (``tf.matmul`` loads ``nn``), when one of its names
is read here (``tilefoundry.ops.MatMul``), and every family when a registry
table is enumerated (``sorted(TF_NAMES)``, ``dir(tilefoundry.ops)``), so the
registry is whole whenever anything lists it. A program pays only for the
families it uses.

Files: ``math`` (Binary, Unary, Clamp, Softplus, Silu, Sigmoid, Tanh, ReLU, Gelu,
Where), ``nn`` (MatMul, RMSNorm, LayerNorm, SoftMax, RoPE, Conv2D, Quant),
``mma`` (the MMA tiles Mma_SM80_16x8x16, Wgmma_SM90_64x128x16), ``tensor``
(Reshape, Transpose, Cast, Reduce, ArgMax, TopK, TupleGetItem), ``creation``
(FullLike, Zeros, Arange, ShapeOf, Rank), ``tensor_index`` (Concat, Stack, Split, RepeatInterleave, Slice, InsertSlice),
``indexing`` (IndexSelect, IndexAdd, IndexCopy, CacheUpdate), ``sharding``
(Reshard, Local), ``dims`` (DimAdd ... DimMax: dim arithmetic left as a body
call; not ``tf`` names, no cost evaluator).

Op class contract (what the parser and printer read):

- ``name`` (ClassVar): the printed / ``tf`` name; ``inputs`` (ClassVar): input
  parameter names in order; ``variadic`` (ClassVar): every positional argument
  is an input (concat, stack).
- The dataclass fields are the attributes, in declaration order, with their
  defaults (authoring.md §6.4).
- ``attr_kinds`` (ClassVar dict, attribute name -> coercion kind) tells the
  parser how to coerce an authored attribute value:

  ``"dtype"``            a DType (string spelling or DType)
  ``"kind:<Enum>"``      a member of BinaryKind / UnaryKind / ReduceKind (member or value string)
  ``"storage"``          a StorageKind (token or member) or None
  ``"layout"``           a ShardLayout (layout sugar or object) or None
  ``"type"``             a TensorType (``Tensor[...]`` literal)
  ``"shape"``            a tuple of ints / dims
  ``"axes"``             a tuple of ints (negatives allowed)
  ``"dim"``              an int or a dim expression
  ``"int"`` / ``"float"`` / ``"str"`` / ``"bool"``   a Python scalar

- ``tilefoundry.semantics.op_registry.TF_NAMES`` maps each of the 72 ``tf`` names to
  ``TfName(name, op_class, fixed)``; ``fixed`` are the attributes an alias pins
  (``add`` -> ``Binary(kind=BinaryKind.ADD)``).
"""
import importlib

from tilefoundry.semantics.op_registry import install_family_loader

#: family module -> the names this package gives of it
_EXPORTS = {
    "math": ("Binary", "BinaryKind", "Clamp", "Gelu", "ReLU", "Sigmoid", "Silu", "Softplus",
             "Tanh", "Unary", "UnaryKind", "Where"),
    "nn": ("Conv2D", "LayerNorm", "MatMul", "Quant", "RMSNorm", "RoPE", "SoftMax"),
    "mma": ("Mma_SM80_16x8x16", "Wgmma_SM90_64x128x16"),
    "sharding": ("Local", "Reshard"),
    "tensor": ("ArgMax", "Cast", "Reduce", "ReduceKind", "Reshape", "TopK", "Transpose",
               "TupleGetItem"),
    "creation": ("Arange", "FullLike", "Rank", "ShapeOf", "Zeros"),
    "indexing": ("CacheUpdate", "IndexAdd", "IndexCopy", "IndexSelect"),
    "tensor_index": ("Concat", "InsertSlice", "RepeatInterleave", "Slice", "Split", "Stack"),
    "dims": (),  # dim arithmetic: registered, not re-exported (no tf names, no cost evaluator)
}
#: family module -> the tf names it registers (tests/ops holds this equal to the registry)
_TF_NAMES = {
    "math": ("binary", "add", "sub", "mul", "div", "floor_div", "mod", "min", "minimum", "max",
             "maximum", "cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge",
             "logical_and", "logical_or", "unary", "logical_not", "neg", "abs", "rsqrt", "exp",
             "log", "square", "ceil", "round", "exp2", "log2", "clamp", "softplus", "silu",
             "sigmoid", "tanh", "relu", "gelu", "where"),
    "nn": ("matmul", "rms_norm", "layer_norm", "softmax", "rope", "conv2d", "quant"),
    "mma": ("mma_sm80_16x8x16", "wgmma_sm90_64x128x16"),
    "sharding": ("reshard", "local"),
    "tensor": ("reshape", "transpose", "cast", "reduce", "argmax", "topk", "tuple_get_item"),
    "creation": ("full_like", "zeros", "arange", "shape_of", "rank"),
    "indexing": ("index_select", "index_add", "index_copy", "cache_update"),
    "tensor_index": ("concat", "stack", "split", "repeat_interleave", "slice", "insert_slice"),
}
_FAMILY_OF_NAME = {name: family for family, names in _EXPORTS.items() for name in names}
_FAMILY_OF_TF_NAME = {name: family for family, names in _TF_NAMES.items() for name in names}
_ALIASES = {"TensorSplit": "Split"}  # the tensor op; not the shard attribute ir.shard.Split

__all__ = sorted([*_FAMILY_OF_NAME, *_ALIASES, *_EXPORTS])


def _family(family: str):
    return importlib.import_module(f"{__name__}.{family}")


def load_family_of(tf_name) -> bool:
    """Load the family registering ``tf_name``; False when no family does."""
    family = _FAMILY_OF_TF_NAME.get(tf_name)
    if family is None:
        return False
    _family(family)
    return True


def load_every_family() -> None:
    for family in _EXPORTS:
        _family(family)


install_family_loader(load_family_of, load_every_family)


def __getattr__(name: str):
    if name in _EXPORTS:  # a family module not imported yet
        return _family(name)
    family = _FAMILY_OF_NAME.get(_ALIASES.get(name, name))
    if family is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_family(family), _ALIASES.get(name, name))
    globals()[name] = value  # later reads skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
