"""Public path of specialization patterns (authoring.md §1.1, §2.5)."""
from tilefoundry.ir.function import DimVarRangePat, Pattern  # noqa: F401

__all__ = ["DimVarRangePat", "Pattern"]
