"""The registries every op file fills by decorator, side by side with its op.

- ``register_op(OpClass)`` makes an op known by its ``name``; ``register_alias``
  adds a ``tf`` spelling that builds an op with fixed attributes (``add`` ->
  ``Binary(kind=ADD)``).
- ``register_typeinfer(OpClass)``: ``handler(op, ctx) -> Type``.
- ``register_access_relation(OpClass)``: ``handler(call_view, ctx) -> AccessRelations``.
- ``register_cost_evaluator(OpClass)``: ``handler(call_view, ctx) -> Cost``.
- ``register_evaluator(OpClass, on_boxes=True)``: ``handler(op, args, ctx) -> value``,
  what the op computes over numpy arrays (``semantics.evaluation`` states the
  contract). ``on_boxes=False`` says the op reads or writes global coordinates
  (offsets, indices, positions), so a placed run evaluates it on assembled
  operands and hands each participant its box of the result.

The tables are filled by the import of ``tilefoundry.ops`` and by nothing else:
this module never imports the op set (the ops import it), so the package that
needs the whole set by name (the front end, ``analyze``) imports ``tilefoundry.ops``
itself. A lookup by op class needs no such step: holding an op means its
package was imported, and with it every op.
"""
from __future__ import annotations

from typing import Callable

from tilefoundry.ir.frozen import frozen_record


@frozen_record
class TfName:
    """A spelling of the ``tf`` namespace: an op class plus fixed attributes."""

    name: str
    op_class: type
    fixed: tuple = ()  # ((attr, value), ...)


TF_NAMES: dict[str, TfName] = {}
TYPEINFER: dict[type, Callable] = {}
ACCESS_RELATIONS: dict[type, Callable] = {}
COST_EVALUATORS: dict[type, Callable] = {}
EVALUATORS: dict[type, Callable] = {}
#: ops whose evaluator reads global coordinates: never run on a participant's box
GLOBAL_COORDINATE_OPS: set[type] = set()


def register_op(op_class: type) -> type:
    TF_NAMES[op_class.name] = TfName(op_class.name, op_class)
    return op_class


def register_alias(name: str, op_class: type, **fixed) -> None:
    TF_NAMES[name] = TfName(name, op_class, tuple(fixed.items()))


def _registrar(table: dict, what: str):
    def register(op_class: type):
        def decorate(handler: Callable) -> Callable:
            if op_class in table and table[op_class] is not handler:
                raise ValueError(f"{what} for {op_class.__name__} registered twice")
            table[op_class] = handler
            return handler

        return decorate

    return register


register_typeinfer = _registrar(TYPEINFER, "typeinfer")
register_access_relation = _registrar(ACCESS_RELATIONS, "access relation")
register_cost_evaluator = _registrar(COST_EVALUATORS, "cost evaluator")


def register_evaluator(op_class: type, *, on_boxes: bool = True):
    """Register what ``op_class`` computes (``handler(op, args, ctx)``)."""
    register = _registrar(EVALUATORS, "evaluator")(op_class)

    def decorate(handler: Callable) -> Callable:
        if not on_boxes:
            GLOBAL_COORDINATE_OPS.add(op_class)
        return register(handler)

    return decorate
