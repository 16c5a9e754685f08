"""Binding DimVars everywhere a dim can hide: shapes, layouts, meshes, attributes."""
from __future__ import annotations

import dataclasses
from enum import Enum

from tilefoundry.ir.dim import DimExpr, DimOp, DimVar, substitute
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.tensor_type import TensorType, TupleType


def bind_dims(value, bindings: dict[str, int]):
    """``value`` with every bound DimVar replaced, rebuilt only where it changed."""
    if not bindings:
        return value
    return _bind(value, bindings)


def _bind(value, bindings):
    if isinstance(value, (DimVar, DimExpr, DimOp)):
        return substitute(value, bindings)
    if isinstance(value, (bool, int, float, str, type(None), DType, Enum)):
        return value
    if isinstance(value, tuple):
        items = tuple(_bind(item, bindings) for item in value)
        return items if any(a is not b for a, b in zip(items, value)) else value
    if isinstance(value, list):
        return [_bind(item, bindings) for item in value]
    if isinstance(value, TupleType):
        return TupleType(_bind(value.fields, bindings))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            if not field.init:
                continue
            old = getattr(value, field.name)
            new = _bind(old, bindings)
            if new is not old:
                changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


_TYPE_DIMVARS: dict = {}  # TensorType -> its DimVars: a program has few distinct types


def collect_dimvars(value, found: dict) -> dict:
    """Every DimVar inside ``value`` (types, layouts, meshes, attributes), by name."""
    if type(value) is TensorType:
        try:
            inside = _TYPE_DIMVARS.get(value)
        except TypeError:  # an unhashable attribute: walk it
            return _collect(value, found)
        if inside is None:
            if len(_TYPE_DIMVARS) > 4096:
                _TYPE_DIMVARS.clear()
            inside = _TYPE_DIMVARS[value] = tuple(_collect(value, {}).items())
        for name, var in inside:
            found.setdefault(name, var)
        return found
    return _collect(value, found)


def _collect(value, found: dict) -> dict:
    if isinstance(value, DimVar):
        found.setdefault(value.name, value)
    elif isinstance(value, (DimExpr, DimOp)):
        from tilefoundry.ir.dim import free_dimvars

        for var in free_dimvars(value):
            found.setdefault(var.name, var)
    elif isinstance(value, (tuple, list)):
        for item in value:
            collect_dimvars(item, found)
    elif isinstance(value, TupleType):
        collect_dimvars(value.fields, found)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            if field.init and not isinstance(value, Enum):
                collect_dimvars(getattr(value, field.name), found)
    return found
