"""``tilefoundry.evaluator``: a public path of the authoring surface
(authoring.md §1.1) that holds only ``to_torch_dtype``, which model files
import. Despite its name it executes nothing: running a program is
``tilefoundry.execution`` (``run``/``check``) over the ``tilefoundry.execute``
room, and what each op computes is its evaluator (contract:
``tilefoundry.semantics.op_numerics``)."""
from tilefoundry.evaluator.value import to_torch_dtype

__all__ = ["to_torch_dtype"]
