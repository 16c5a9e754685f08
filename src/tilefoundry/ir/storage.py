"""Where a value logically resides (companions §1.2)."""
from __future__ import annotations

from enum import IntEnum

from tilefoundry.errors import VerifyError


class StorageKind(IntEnum):
    HOST = 1
    GMEM = 2
    SMEM = 3
    RMEM = 4
    TMEM = 5
    UMAT = 6  # no residency decided: literals, shape values

    def __str__(self) -> str:
        return self.name.lower()

    def __repr__(self) -> str:
        return self.name.lower()


STORAGE_TOKENS = {str(kind): kind for kind in StorageKind}


def resolve_storage(value: object) -> StorageKind | None:
    """Accept exactly the six lowercase tokens, a member, or None."""
    if value is None or isinstance(value, StorageKind):
        return value
    if isinstance(value, str) and value in STORAGE_TOKENS:
        return STORAGE_TOKENS[value]
    raise VerifyError(
        f"StorageKind: unknown value {value!r}; valid: {sorted(STORAGE_TOKENS)}"
    )
