"""Public path of the shard vocabulary (authoring.md §1.1)."""
from tilefoundry.ir.shard import (  # noqa: F401
    B,
    Broadcast,
    ComposedLayout,
    Dynamic,
    Layout,
    Mesh,
    P,
    Partial,
    S,
    ShardAttr,
    ShardLayout,
    Split,
    Topology,
    c_order_strides,
    partial_reductions_by_axis,
)

LayoutBase = (Layout, ComposedLayout)
IntTuple = tuple
