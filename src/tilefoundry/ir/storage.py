"""Where a value logically resides (companions §1.2)."""
from __future__ import annotations

from enum import IntEnum

from tilefoundry.errors import VerifyError, did_you_mean


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


#: What a storage is often called elsewhere: a refusal of one names the token
#: to write; none is accepted in its place.
STORAGE_ALIASES = {
    "shared": "smem", "shared_memory": "smem", "shmem": "smem", "sharedmem": "smem", "lds": "smem",
    "global": "gmem", "global_memory": "gmem", "hbm": "gmem", "dram": "gmem", "device": "gmem",
    "register": "rmem", "registers": "rmem", "reg": "rmem", "regs": "rmem", "rf": "rmem",
    "tensor_memory": "tmem", "tensormem": "tmem",
    "cpu": "host", "host_memory": "host", "pinned": "host",
}


def storage_hint(value: object) -> str:
    """``; did you mean 'smem'?`` for a storage spelled another way, or ``''``."""
    return did_you_mean(value, STORAGE_TOKENS, aliases=STORAGE_ALIASES) if isinstance(value, str) else ""


def resolve_storage(value: object) -> StorageKind | None:
    """Accept exactly the six lowercase tokens, a member, or None."""
    if value is None or isinstance(value, StorageKind):
        return value
    if isinstance(value, str) and value in STORAGE_TOKENS:
        return STORAGE_TOKENS[value]
    raise VerifyError(
        f"StorageKind: unknown value {value!r}{storage_hint(value) or ';'} valid: {sorted(STORAGE_TOKENS)}"
    )
