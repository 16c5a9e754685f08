import pytest

from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Constant, Var
from tilefoundry.ir.shard import Layout, ShardLayout
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.typeinfer import build_call


class Builder:
    """Tiny program builder: values are typed at once by build_call."""

    T = TensorType
    SK = StorageKind

    @staticmethod
    def var(name, shape, dtype="f32", layout=None, storage=StorageKind.GMEM):
        return Var(name, TensorType(shape, DType.from_name(dtype), layout, storage))

    @staticmethod
    def const(value, dtype="f32"):
        return Constant(value, TensorType((), DType.from_name(dtype), None, StorageKind.UMAT))

    @staticmethod
    def call(op, *args, **where):
        return build_call(op, tuple(args), **where)

    @staticmethod
    def sl(gshape, strides, attrs, mesh):
        return ShardLayout(Layout(tuple(gshape), None if strides is None else tuple(strides)), tuple(attrs), mesh)


@pytest.fixture
def b():
    return Builder
