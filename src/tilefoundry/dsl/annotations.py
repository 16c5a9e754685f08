"""``Tensor[...]``, ``ConstTensor[...]`` and ``where(...)`` as run-time objects.

The parser reads annotations from the AST (authoring.md §2.4), so these only
have to survive Python evaluating them in un-postponed files: ``Tensor[shape,
dtype, ...]`` returns a ``TensorType`` for the forms such files write (shape
tuples of ints, names, DimVars and dim expressions; dtype strings; storage
tokens; layout objects). An unknown dtype fails at once, as the reference does.
"""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType, resolve_dtype
from tilefoundry.ir.shard import ComposedLayout, Layout, ShardLayout
from tilefoundry.ir.storage import StorageKind, STORAGE_TOKENS, storage_hint
from tilefoundry.ir.tensor_type import TensorType


class _Pending:
    """A slot Python cannot evaluate meaningfully (layout sugar); the parser
    re-reads the annotation from the source, so this is never used as a type."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"<annotation {self.text}>"


def tensor_type_from_slots(slots: tuple, *, where: str = "Tensor") -> TensorType:
    """Build a TensorType from already evaluated slot values (2 to 4 slots)."""
    if not isinstance(slots, tuple) or not 2 <= len(slots) <= 4:
        count = len(slots) if isinstance(slots, tuple) else 1
        raise VerifyError(
            f"{where}[...] takes 2 to 4 slots (shape, dtype[, layout_or_storage[, storage]]), got {count}"
        )
    shape, dtype = slots[0], slots[1]
    if isinstance(shape, list):
        shape = tuple(shape)
    if not isinstance(shape, tuple):
        shape = (shape,)
    dtype = resolve_dtype(dtype)
    layout, storage = None, StorageKind.GMEM
    if len(slots) >= 3:
        third = slots[2]
        if third is None:
            pass
        elif isinstance(third, StorageKind) or (isinstance(third, str) and third in STORAGE_TOKENS):
            if len(slots) == 4:
                raise VerifyError(f"{where}[...]: a storage third slot cannot be followed by a fourth")
            storage = StorageKind(third) if isinstance(third, StorageKind) else STORAGE_TOKENS[third]
        elif isinstance(third, (Layout, ComposedLayout, ShardLayout)):
            layout = third
        else:
            raise VerifyError(f"{where}[...]: third slot {third!r} is neither a storage token nor a layout"
                              f"{storage_hint(third)}")
    if len(slots) == 4:
        fourth = slots[3]
        if isinstance(fourth, StorageKind):
            storage = fourth
        elif isinstance(fourth, str) and fourth in STORAGE_TOKENS:
            storage = STORAGE_TOKENS[fourth]
        else:
            raise VerifyError(f"{where}[...]: fourth slot {fourth!r} is not a storage token"
                              f"{storage_hint(fourth)}")
    return TensorType(shape, dtype, layout, storage)


class _TensorMeta(type):
    def __getitem__(cls, item):
        slots = item if isinstance(item, tuple) else (item,)
        if len(slots) >= 2 and isinstance(slots[1], (str, DType)):
            resolve_dtype(slots[1])  # an unknown dtype is refused even at run time
        try:
            return tensor_type_from_slots(slots, where=cls.__name__)
        except VerifyError:
            if len(slots) < 2:
                raise
            return _Pending(f"{cls.__name__}[...]")

    def __repr__(cls):
        return cls.__name__


class Tensor(metaclass=_TensorMeta):
    """``Tensor[shape, dtype[, layout_or_storage[, storage]]]`` (authoring.md §3.1)."""


class ConstTensor(metaclass=_TensorMeta):
    """Same type as ``Tensor[...]``; the parameter is an external constant (weight)."""


def where(**fields):
    """``y: where(layout=..., mesh=..., storage=...)`` — read by the parser only."""
    raise TypeError("where(...) is an annotation read by the @func parser; it is not called")
