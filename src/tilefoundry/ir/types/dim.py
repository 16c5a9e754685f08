"""Public path of the dim vocabulary (authoring.md §1.1)."""
from tilefoundry.ir.dim import (  # noqa: F401
    DimExpr,
    DimOp,
    DimVar,
    ceildiv,
    dim_add,
    dim_floordiv,
    dim_max,
    dim_min,
    dim_mod,
    dim_mul,
    dim_sub,
    simplify_dim,
)

dim_min = dim_min
dim_max = dim_max
