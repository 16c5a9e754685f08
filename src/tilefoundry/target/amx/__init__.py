"""Apple AMX targets (companions.md §6.6)."""
from tilefoundry.target.amx.target import AmxTarget

__all__ = ["AmxTarget"]
