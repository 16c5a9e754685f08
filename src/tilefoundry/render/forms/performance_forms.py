"""Record forms of the performance family (analysis §1.2.4; companions §7.1–§7.3,
§7.5). Loaded by ``render.forms.form_of`` when a performance record is first rendered.

- ``PerformanceMetadata``: the single key ``performance=<interval>``, where a
  TripInterval prints ``[s,e)`` for one trip and ``[<stride>t+s,<stride>t+e)*<n>``
  otherwise; JSON ``{"timeline": {start_ns, end_ns, trips, stride_ns}}``.
- ``PerformanceSummaryMetadata``: the summary line
  ``performance root=<Module>::<function> predicted-ns=<n> waves=<w>``; ``root``
  is the report's own identity (``options["root"]``), not a record field, and
  ``predicted-ns`` is the envelope's duration, omitted at its default 0;
  ``waves`` always. JSON ``{"timeline": {...}, "waves": <w>}`` (every field).
"""
from __future__ import annotations

from tilefoundry.analysis.performance.timeline import PerformanceMetadata, PerformanceSummaryMetadata
from tilefoundry.render.record_forms import RecordForm, register_record_form

__all__ = ["trip_interval"]


def trip_interval(timeline) -> str:
    """A TripInterval (companions §7.1)."""
    if timeline.trips == 1:
        return f"[{timeline.start_ns},{timeline.end_ns})"
    stride = timeline.stride_ns
    return (f"[{stride}t+{timeline.start_ns},{stride}t+{timeline.end_ns})"
            f"*{timeline.trips}")


def _call_comment(record, options) -> str:
    return f"performance={trip_interval(record.timeline)}"


def _summary_comment(record, options) -> str:
    parts = ["performance"]
    root = (options or {}).get("root")
    if root:
        parts.append(f"root={root}")
    predicted = record.timeline.end_ns - record.timeline.start_ns
    if predicted:
        parts.append(f"predicted-ns={predicted}")
    parts.append(f"waves={record.waves}")
    return " ".join(parts)


register_record_form(PerformanceMetadata, RecordForm(comment=_call_comment))
register_record_form(PerformanceSummaryMetadata, RecordForm(
    comment=_summary_comment, summary=lambda record, options: [_summary_comment(record, options)]))
