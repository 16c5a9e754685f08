"""The HIR op set. Importing this package registers every op with its typeinfer,
its access relation and its cost evaluator, side by side in the op's own section
(``tilefoundry.semantics.op_registry``; the cost contracts are in
``tilefoundry.semantics.cost``).

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
# registered, not re-exported: dim ops are no tf names and have no cost evaluator
from tilefoundry.ops import dims  # noqa: F401
from tilefoundry.ops.math import (  # noqa: F401
    Binary,
    BinaryKind,
    Clamp,
    Gelu,
    ReLU,
    Sigmoid,
    Silu,
    Softplus,
    Tanh,
    Unary,
    UnaryKind,
    Where,
)
from tilefoundry.ops.nn import (  # noqa: F401
    Conv2D,
    LayerNorm,
    MatMul,
    Quant,
    RMSNorm,
    RoPE,
    SoftMax,
)
from tilefoundry.ops.mma import Mma_SM80_16x8x16, Wgmma_SM90_64x128x16  # noqa: F401
from tilefoundry.ops.sharding import Local, Reshard  # noqa: F401
from tilefoundry.ops.tensor import (  # noqa: F401
    ArgMax,
    Cast,
    Reduce,
    ReduceKind,
    Reshape,
    TopK,
    Transpose,
    TupleGetItem,
)
from tilefoundry.ops.creation import Arange, FullLike, Rank, ShapeOf, Zeros  # noqa: F401
from tilefoundry.ops.indexing import CacheUpdate, IndexAdd, IndexCopy, IndexSelect  # noqa: F401
from tilefoundry.ops.tensor_index import (  # noqa: F401
    Concat,
    InsertSlice,
    RepeatInterleave,
    Slice,
    Split,
    Stack,
)

TensorSplit = Split  # the tensor op; not the shard attribute ir.shard.Split
