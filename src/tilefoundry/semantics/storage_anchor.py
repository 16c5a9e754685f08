"""Output storage anchoring for symmetric multi-input ops (spec §3.3)."""
from __future__ import annotations

from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType


def anchor_storage(ctx, types) -> StorageKind:
    """umat abstains; agreeing concrete storages anchor; disagreement is an
    error naming both; all-umat gives umat. Independent of operand order."""
    concrete = []
    for position, type_ in enumerate(types):
        if isinstance(type_, TensorType) and type_.storage is not StorageKind.UMAT:
            concrete.append((position, type_.storage))
    kinds = {kind for _, kind in concrete}
    if not kinds:
        return StorageKind.UMAT
    if len(kinds) > 1:
        described = ", ".join(f"operand {p} in {k}" for p, k in concrete)
        ctx.error(
            f"operands have conflicting storage ({described}); there is no operand-order "
            "tie-break: reshard one operand so both reside at the same level"
        )
    return kinds.pop()
