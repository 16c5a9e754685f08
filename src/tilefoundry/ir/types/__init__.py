"""Public path of the type vocabulary (authoring.md §1.1)."""
from tilefoundry.ir.dtype import DType  # noqa: F401
from tilefoundry.ir.tensor_type import (  # noqa: F401
    CallableType,
    TensorType,
    TupleType,
    Type,
    UnitType,
)
