"""The evaluator namespace of the authoring surface (authoring.md §1.1): only
``to_torch_dtype``, which model files import; programs are never evaluated here."""
from tilefoundry.evaluator.value import to_torch_dtype

__all__ = ["to_torch_dtype"]
