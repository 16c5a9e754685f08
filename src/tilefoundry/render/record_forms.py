"""Record forms: how one IRMetadata record reads in a comment, a summary line
and a JSON projection (analysis §1 rendering rules, companions §7.1–§7.2).

Records are frozen dataclasses; their forms are derived from their declared
fields, so a new family's record renders without new code here:

- family: ``record.family`` when declared, else the class name minus
  ``Metadata`` in kebab case;
- comment keys: field names with ``_`` as ``-``; a field ``X_per_unit`` beside a
  field ``X`` pairs with it as one TotalAndPerUnit key (``<whole>@<unit>``);
- a key equal to its declared default is omitted (with no declared default,
  only an empty mapping); one declared key prints ``<family>=<value>``, else
  ``<family> key=value ...``, collapsing to the bare family;
- JSON: every field under its own name, nothing left out; pair tuples become
  objects, nested records objects, other tuples lists.

A family whose forms need more (an expression-dependent projection, projected
keys) registers a ``RecordForm`` for its class with ``register_record_form``.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import MISSING, dataclass
from typing import Callable

__all__ = [
    "RecordForm",
    "register_record_form",
    "family_of",
    "format_record_value",
    "operand_name",
    "operand_type",
    "operand_rows",
]


def family_of(cls_or_record) -> str:
    cls = cls_or_record if isinstance(cls_or_record, type) else type(cls_or_record)
    declared = getattr(cls, "family", None)
    if isinstance(declared, str) and declared:
        return declared
    name = cls.__name__
    if name.endswith("Metadata"):
        name = name[: -len("Metadata")]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


# ---------------------------------------------------------------- value forms (§7.1)


class TotalAndPerUnit:
    """A whole quantity paired with one unit's share: ``<total>@<unit>``."""

    __slots__ = ("total", "unit")

    def __init__(self, total, unit):
        self.total = total
        self.unit = unit

    def __str__(self) -> str:
        return f"{format_record_value(self.total)}@{format_record_value(self.unit)}"


def _is_pairs(value) -> bool:
    return (isinstance(value, tuple) and bool(value)
            and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], (str, int)) for v in value))


def format_record_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, TotalAndPerUnit):
        return str(value)
    if isinstance(value, str):
        return value if re.fullmatch(r"[\w.\-:/@\[\]()+*,]+", value) else json.dumps(value)
    if value is None:
        return "none"
    if hasattr(value, "read") and hasattr(value, "write") and dataclasses.is_dataclass(value):
        return f"r{value.read}/w{value.write}"
    if _is_pairs(value):
        return ",".join(f"{k}:{format_record_value(v)}" for k, v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}:{format_record_value(v)}" for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return ",".join(format_record_value(v) for v in value)
    return str(value)


def _pair_whole_unit(whole: tuple, unit: tuple) -> tuple:
    units = dict(unit)
    keys = [k for k, _ in whole] + [k for k, _ in unit if k not in dict(whole)]
    values = dict(whole)
    return tuple((k, TotalAndPerUnit(values.get(k, 0), units.get(k, 0))) for k in keys)


# ---------------------------------------------------------------- generic forms


def _fields(record) -> list:
    return [f for f in dataclasses.fields(record) if not f.name.startswith("_")]


def _default(field) -> object:
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return MISSING


def _empty_mapping(value) -> bool:
    return value == () or value == {} or value is None and False


_PLANS: dict[type, tuple] = {}


def _plan(cls: type) -> tuple:
    """What every record of ``cls`` renders through, derived once per class
    (reading dataclass fields per record dominated a large report's time):
    ((field, key, default, per-unit partner or None) per comment key,
     (field, is-mapping) per JSON field)."""
    plan = _PLANS.get(cls)
    if plan is None:
        fields = [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]
        names = {f.name for f in fields}
        keys = []
        for f in fields:
            if f.name.endswith("_per_unit") and f.name[: -len("_per_unit")] in names:
                continue
            partner = f"{f.name}_per_unit"
            keys.append((f.name, f.name.replace("_", "-"), _default(f),
                         partner if partner in names else None))
        plan = (tuple(keys), tuple((f.name, _annotation_is_mapping(f)) for f in fields))
        _PLANS[cls] = plan
    return plan


def generic_comment(record, options: dict | None = None) -> str:
    keys, _ = _plan(type(record))
    shown = []
    for name, key, default, partner in keys:
        value = getattr(record, name)
        if partner is not None:
            unit = getattr(record, partner)
            if value == () and unit == ():
                value = ()
            else:
                value = _pair_whole_unit(tuple(value), tuple(unit))
        if default is not MISSING:
            if value == default:
                continue
        elif value == () or value == {}:
            continue
        shown.append((key, value))
    family = family_of(record)
    if len(keys) == 1:
        return f"{family}={format_record_value(shown[0][1])}" if shown else family
    if not shown:
        return family
    return family + " " + " ".join(f"{k}={format_record_value(v)}" for k, v in shown)


def _annotation_is_mapping(field) -> bool:
    text = field.type if isinstance(field.type, str) else repr(field.type)
    return text.replace(" ", "").startswith("tuple[tuple[")


def to_json(value, mapping: bool = False):
    if isinstance(value, bool) or value is None or isinstance(value, (int, str, float)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: to_json(getattr(value, name), mapping) for name, mapping in _plan(type(value))[1]}
    if isinstance(value, dict):
        return {str(getattr(k, "name", k)): to_json(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        if mapping or _is_pairs(value) and all(isinstance(k, str) for k, _ in value):
            return {str(getattr(k, "name", k)): to_json(v) for k, v in value}
        return [to_json(v) for v in value]
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def generic_json(record, node=None, context=None) -> dict:
    return to_json(record)


@dataclass(frozen=True)
class RecordForm:
    """How one record class renders. ``comment(record, options)`` -> str;
    ``project(record, node, context)`` -> JSON-ready dict (``node`` is the
    expression or Function carrying it; ``context`` the report's names)."""

    comment: Callable = generic_comment
    project: Callable = generic_json
    summary: Callable | None = None  # (record, options) -> summary texts; default [comment]
    # (record, node, result) -> report keys beside the family's own on that
    # node's row (target-aware report data such as a loop's cache-pressure)
    row_extra: Callable | None = None


_FORMS: dict[type, RecordForm] = {}
_RESOLVED: dict[type, RecordForm] = {}  # form_of answers; any registration clears it
_GENERIC = RecordForm()


def register_record_form(cls: type, form: RecordForm) -> None:
    _FORMS[cls] = form
    _RESOLVED.clear()  # a resolved answer may now be another class's form


def resolved_form(cls: type) -> RecordForm:
    """The form registered for ``cls`` or its nearest base, else the generic one."""
    form = _RESOLVED.get(cls)
    if form is None:
        form = next((_FORMS[k] for k in cls.__mro__ if k in _FORMS), _GENERIC)
        _RESOLVED[cls] = form
    return form


# ---------------------------------------------------------------- operand projections (§7.5)
# A field whose projection needs the expression its record is attached to (a
# per-operand split) is projected through these, so every family names and
# types an operand the same way. A Function Call has no operand positions, so
# such a field is absent there rather than empty.


def operand_name(expr) -> str:
    """The operand's binding or name (promoted weights keep their dots), else
    the lower-cased op class of an unnamed call, else the lower-cased node kind."""
    from tilefoundry.ir.expr import Call
    from tilefoundry.ir.metadata import BindingMetadata

    binding = expr.get_metadata(BindingMetadata) if hasattr(expr, "get_metadata") else None
    if binding is not None:
        return binding.name
    name = getattr(expr, "name", None)
    if isinstance(name, str) and name:
        return name
    if isinstance(expr, Call):
        return type(expr.op).__name__.lower()
    return type(expr).__name__.lower()


def operand_type(type_) -> str:
    """First tensor leaf ``<dtype>[<d,d>]``, ``+`` when more leaves follow, then
    a space and that leaf's storage: ``f32[8,64] gmem``, ``i64[]+ gmem``."""
    from tilefoundry.ir.dim import format_dim
    from tilefoundry.ir.tensor_type import tensor_leaves

    leaves = tensor_leaves(type_)
    if not leaves:
        return ""
    first = leaves[0]
    shape = ",".join(format_dim(d) for d in first.shape)
    more = "+" if len(leaves) > 1 else ""
    return f"{first.dtype.name}[{shape}]{more} {first.storage}"


def operand_rows(call, amounts) -> list[dict]:
    """One JSON row per (*call.args, call) position: ``arg`` (an int, or
    ``"result"``), ``name``, ``type`` and the position's read/write amounts.
    ``amounts`` holds one (read, write)-carrying value per position; a position
    it states as None is omitted rather than emitted empty."""
    positions = list(call.args) + [call]
    if len(amounts) != len(positions):
        raise ValueError(
            f"operand_rows: {len(amounts)} amounts for the {len(positions)} positions of "
            f"{operand_name(call)}"
        )
    rows = []
    for index, (expr, amount) in enumerate(zip(positions, amounts)):
        if amount is None:
            continue
        result = index == len(call.args)
        rows.append({
            "arg": "result" if result else index,
            "name": operand_name(expr),
            "type": operand_type(expr.type),
            "read": int(amount.read),
            "write": int(amount.write),
        })
    return rows
