"""Storage tokens as names (authoring.md §1.1): the six ``StorageKind`` members."""
from tilefoundry.ir.storage import StorageKind

host = StorageKind.HOST
gmem = StorageKind.GMEM
smem = StorageKind.SMEM
rmem = StorageKind.RMEM
tmem = StorageKind.TMEM
umat = StorageKind.UMAT

__all__ = ["host", "gmem", "smem", "rmem", "tmem", "umat"]
