"""The registries every op file fills by decorator, side by side with its op.

- ``register_op(OpClass)`` makes an op known by its ``name``; ``register_alias``
  adds a ``tf`` spelling that builds an op with fixed attributes (``add`` ->
  ``Binary(kind=ADD)``).
- ``register_typeinfer(OpClass)``: ``handler(op, ctx) -> Type``.
- ``register_access_relation(OpClass)``: ``handler(call_view, ctx) -> AccessRelations``.
- ``register_cost_evaluator(OpClass)``: ``handler(call_view, ctx) -> Cost``.
- ``register_evaluator(OpClass, on_boxes=True)``: ``handler(op, args, ctx) -> value``,
  what the op computes over numpy arrays (``semantics.op_numerics`` states the
  contract). ``on_boxes=False`` says the op reads or writes global coordinates
  (offsets, indices, positions), so a placed run evaluates it on assembled
  operands and hands each participant its box of the result.

The tables are filled by the op families of ``tilefoundry.ops`` and by nothing
else: this module never imports the op set (the ops import it). Importing
``tilefoundry.ops`` loads no family; it installs the family loader here
(``install_family_loader``), and the tables load a family when asked for it:

- a ``tf`` name not yet registered loads the family that registers it;
- anything that enumerates a table (iterating, ``len``, ``keys``/``values``/
  ``items``, ``copy``) first loads every family, so a listing is the whole set.

A lookup by op class needs no such step: holding an op means its family was
imported, and each family registers its own ops' handlers.
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


class _FamilyLoader:
    """What ``tilefoundry.ops`` installs: how to load the family registering a
    ``tf`` name (true when one was loaded), and how to load every family."""

    family_of = staticmethod(lambda name: False)
    every_family = staticmethod(lambda: None)


def install_family_loader(family_of: Callable[[str], bool], every_family: Callable[[], None]) -> None:
    _FamilyLoader.family_of = staticmethod(family_of)
    _FamilyLoader.every_family = staticmethod(every_family)


class OpTable(dict):
    """A registry table: a dict whose enumerations see every op family."""

    __slots__ = ()

    def __iter__(self):
        _FamilyLoader.every_family()
        return dict.__iter__(self)

    def __len__(self):
        _FamilyLoader.every_family()
        return dict.__len__(self)

    def keys(self):
        _FamilyLoader.every_family()
        return dict.keys(self)

    def values(self):
        _FamilyLoader.every_family()
        return dict.values(self)

    def items(self):
        _FamilyLoader.every_family()
        return dict.items(self)

    def copy(self) -> dict:
        _FamilyLoader.every_family()
        return dict(dict.items(self))


_ABSENT = object()


class TfNameTable(OpTable):
    """The ``tf`` names: a name not yet registered loads the family that registers it."""

    __slots__ = ()

    def __missing__(self, name):
        found = dict.get(self, name, _ABSENT) if _FamilyLoader.family_of(name) else _ABSENT
        if found is _ABSENT:
            raise KeyError(name)
        return found

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name) -> bool:
        return self.get(name, _ABSENT) is not _ABSENT


TF_NAMES: dict[str, TfName] = TfNameTable()
TYPEINFER: dict[type, Callable] = OpTable()
ACCESS_RELATIONS: dict[type, Callable] = OpTable()
COST_EVALUATORS: dict[type, Callable] = OpTable()
EVALUATORS: dict[type, Callable] = OpTable()
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
