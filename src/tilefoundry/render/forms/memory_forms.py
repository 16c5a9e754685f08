"""Record forms of the memory family (analysis §1.2.2; companions §7.2, §7.3,
§7.5). Loaded by ``render.forms.form_of`` when a memory record is first rendered.

- ``TrafficMetadata``: ``traffic traffic=<level>:r/w@r/w,...`` and, only when
  asked (``--operands``) and non-empty, `` operands=<pos>:r/w,...``; JSON
  ``whole`` / ``per_unit`` by level and, on a Call, ``operands`` rows naming
  the operand (its printed binding, dotted for a promoted weight) and type.
- ``MemoryMetadata``: summary ``peak-footprint=<level>:<bytes>,...`` (the bare
  family when the footprint is empty) and one ``advisory="..."`` line each;
  comment ``memory peak=... persistent=... advisories=...``; JSON every field.
- ``LoopFootprintMetadata``: ``loop-footprint footprints=<buffer>@<level>:
  <bytes>/<device_bytes>/<repeated_bytes>,... status=complete|lower-bound``.
"""
from __future__ import annotations

import json

from tilefoundry.analysis.memory.records import (
    LoopFootprintMetadata, MemoryMetadata, TrafficMetadata,
)
from tilefoundry.render.record_forms import RecordForm, operand_rows, register_record_form, to_json

__all__ = ["install"]


def _rw(tb) -> str:
    return f"r{tb.read}/w{tb.write}"


def _traffic_comment(record, options) -> str:
    whole = dict(record.whole)
    unit = dict(record.per_unit)
    keys = list(whole) + [k for k in unit if k not in whole]
    parts = []
    if keys:
        from tilefoundry.semantics.cost import TrafficBytes

        zero = TrafficBytes()
        parts.append("traffic=" + ",".join(
            f"{k}:{_rw(whole.get(k, zero))}@{_rw(unit.get(k, zero))}" for k in keys))
    if options.get("operands") and record.operands:
        labels = [str(i) for i in range(len(record.operands) - 1)] + ["result"]
        parts.append("operands=" + ",".join(
            f"{label}:{_rw(tb)}" for label, tb in zip(labels, record.operands)))
    return "traffic" + ("" if not parts else " " + " ".join(parts))


def _levels(pairs) -> dict:
    return {level: {"read": tb.read, "write": tb.write} for level, tb in pairs}


def _traffic_json(record, node=None, context=None) -> dict:
    from tilefoundry.ir.expr import Call
    from tilefoundry.ir.function import Function

    data = {"whole": _levels(record.whole), "per_unit": _levels(record.per_unit)}
    if isinstance(node, Call) and not isinstance(node.op, Function):
        data["operands"] = operand_rows(node, record.operands)
    return data


def _memory_comment(record, options) -> str:
    parts = []
    if record.footprint:
        parts.append("peak=" + ",".join(f"{r.level}:{r.peak_bytes}" for r in record.footprint))
    persistent = sum(r.persistent_bytes for r in record.footprint)
    if persistent:
        parts.append(f"persistent={persistent}")
    if record.advisories:
        parts.append(f"advisories={len(record.advisories)}")
    return "memory" + ("" if not parts else " " + " ".join(parts))


def _memory_summary(record, options) -> list:
    # spec (analysis §1.2.2): an empty footprint states the family name alone
    # (the reference prints ``peak-footprint=``)
    lines = [("peak-footprint=" + ",".join(f"{r.level}:{r.peak_bytes}" for r in record.footprint))
             if record.footprint else "peak-footprint"]
    lines += [f"advisory={json.dumps(text)}" for text in record.advisories]
    return lines


def _memory_json(record, node=None, context=None) -> dict:
    return to_json(record)


def _loop_comment(record, options) -> str:
    parts = []
    if record.footprints:
        parts.append("footprints=" + ",".join(
            f"{f.buffer}@{f.level}:{f.bytes}/{f.device_bytes}/{f.repeated_bytes}"
            for f in record.footprints))
    parts.append("status=" + ("complete" if record.known else "lower-bound"))
    return "loop-footprint " + " ".join(parts)


def _cache_pressure_row(record, node, result) -> dict:
    """``cache-pressure`` beside a loop's loop-footprint (report data, target-aware)."""
    from tilefoundry.analysis.memory import hierarchy_of
    from tilefoundry.analysis.memory.loop_footprints import cache_pressure

    memory = result.function.get_metadata(MemoryMetadata)
    footprint = memory.footprint if memory is not None else ()
    rows = cache_pressure(record, hierarchy_of(result.module.resolve_target()), footprint)
    return {"cache-pressure": rows} if rows else {}


def _traffic_summary(record, options) -> list:
    return [_traffic_comment(record, {})]


def install() -> None:
    register_record_form(TrafficMetadata, RecordForm(_traffic_comment, _traffic_json,
                                                     _traffic_summary))
    register_record_form(MemoryMetadata, RecordForm(_memory_comment, _memory_json,
                                                    _memory_summary))
    register_record_form(LoopFootprintMetadata, RecordForm(_loop_comment,
                                                           row_extra=_cache_pressure_row))


install()
