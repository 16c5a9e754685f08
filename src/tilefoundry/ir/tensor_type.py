"""Types of values: tensors, tuples, unit, callables (companions §1.3, §1.5)."""
from __future__ import annotations

from tilefoundry.ir.frozen import HASH_KEPT, frozen_record
from tilefoundry.ir.immutable import ImmutableValue

from typing import Union

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import format_dim, is_dim, is_quasi_affine, is_static, simplify_dim
from tilefoundry.ir.dtype import DType, resolve_dtype
from tilefoundry.ir.shard import ComposedLayout, Layout, ShardLayout
from tilefoundry.ir.storage import StorageKind, resolve_storage


@frozen_record
class TensorType(ImmutableValue):
    """Logical shape, element type, optional layout, residency."""

    shape: tuple
    dtype: DType
    layout: object = None
    storage: StorageKind = StorageKind.GMEM

    def __post_init__(self):
        shape = self.shape
        if isinstance(shape, list):
            shape = tuple(shape)
        if not isinstance(shape, tuple):
            shape = (shape,)
        normalised = []
        for extent in shape:
            if isinstance(extent, bool) or not is_dim(extent):
                raise VerifyError(
                    f"TensorType: malformed shape {self.shape!r}: extent {extent!r} "
                    "is not an int, DimVar or dim expression"
                )
            extent = simplify_dim(extent)
            if not is_quasi_affine(extent):
                raise VerifyError(
                    f"TensorType: shape extent {format_dim(extent)} is not affine in its "
                    "dimensions (a product of two symbolic sizes, or a division by one); "
                    "introduce one DimVar for that extent"
                )
            if is_static(extent) and extent < 0:
                raise VerifyError(f"TensorType: negative extent {extent} in shape {self.shape!r}")
            normalised.append(extent)
        object.__setattr__(self, "shape", tuple(normalised))
        object.__setattr__(self, "dtype", resolve_dtype(self.dtype))
        storage = resolve_storage(self.storage)
        object.__setattr__(self, "storage", StorageKind.GMEM if storage is None else storage)
        if isinstance(self.layout, Layout) and len(self.layout.shape) != len(self.shape):
            raise VerifyError(
                f"TensorType: layout {self.layout.shape} does not match shape {self.shape} in rank"
            )

    def __hash__(self) -> int:
        # kept once computed: types key every memo of the analyses, and the
        # generated hash walks shape, layout and shard on every lookup
        found = self.__dict__.get(HASH_KEPT)
        if found is None:
            found = hash((self.shape, self.dtype, self.layout, self.storage))
            object.__setattr__(self, HASH_KEPT, found)
        return found

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def shard(self) -> ShardLayout | None:
        """The distribution carrier, looking through a static-offset view."""
        layout = self.layout
        if isinstance(layout, ComposedLayout) and isinstance(layout.outer, ShardLayout):
            return layout.outer
        return layout if isinstance(layout, ShardLayout) else None

    def with_(self, **changes) -> "TensorType":
        fields = dict(shape=self.shape, dtype=self.dtype, layout=self.layout, storage=self.storage)
        fields.update(changes)
        return TensorType(**fields)

    def __repr__(self) -> str:
        shape = ", ".join(format_dim(d) for d in self.shape)
        return f"TensorType(({shape}{',' if len(self.shape) == 1 else ''}), {self.dtype.name}, {self.layout!r}, {self.storage})"


@frozen_record
class TupleType(ImmutableValue):
    """The type of a tuple of values: one type per field."""

    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


@frozen_record
class UnitType(ImmutableValue):
    """The type of a statement that yields no value."""

    pass


@frozen_record
class CallableType(ImmutableValue):
    """The type of a function value: its parameter types and return type."""

    return_type: object
    parameters: tuple


Type = Union[TensorType, TupleType, UnitType, CallableType]


def umat_scalar(dtype=DType.i64) -> TensorType:
    return TensorType((), dtype, None, StorageKind.UMAT)


def umat_tensor(shape, dtype=DType.i64) -> TensorType:
    return TensorType(shape, dtype, None, StorageKind.UMAT)


def tensor_leaves(type_) -> list[TensorType]:
    """Every tensor leaf of a (nested) tuple type, flat and in order."""
    if isinstance(type_, TensorType):
        return [type_]
    if isinstance(type_, TupleType):
        leaves = []
        for field in type_.fields:
            leaves.extend(tensor_leaves(field))
        return leaves
    return []


def numel(type_) -> int:
    total = 0
    for leaf in tensor_leaves(type_):
        count = 1
        for extent in leaf.shape:
            if not is_static(extent) or extent < 0:
                name = format_dim(extent)
                raise VerifyError(
                    f"numel: tensor extent {name} is not concrete; bind it with --dim {name}=EXTENT"
                )
            count *= extent
        total += count
    return total


def tensor_bytes(type_) -> int:
    """Sum over leaves of ceil(numel · bits / 8), rounded per leaf."""
    return sum(-(-numel(leaf) * leaf.dtype.bits // 8) for leaf in tensor_leaves(type_))
