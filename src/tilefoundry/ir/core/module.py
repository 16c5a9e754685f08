"""Public path of the Module vocabulary (authoring.md §2.6, §2.10)."""
from tilefoundry.ir.module import Module, function_selectors, select  # noqa: F401

__all__ = ["Module", "select", "function_selectors"]
