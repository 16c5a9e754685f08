"""Record forms of the collectives family: the comment states what one reads
off a line (op, groups, M/K, bytes, the two checks, time); the participant
maps and the KTIR text are JSON only."""
from __future__ import annotations

from tilefoundry.analysis.collectives import CollectivesMetadata, CollectivesSummaryMetadata
from tilefoundry.render.record_forms import RecordForm, format_record_value, register_record_form


def _flag(value) -> str:
    return "none" if value is None else "true" if value else "false"


def _call_comment(record, options) -> str:
    if record.op is None:
        parts = [f"verdict={record.verdict}"]
        if record.reason:
            parts.append(f"reason={format_record_value(record.reason)}")
        return "collectives " + " ".join(parts)
    parts = [f"op={record.op}", f"groups={record.groups}"]
    if record.M is not None:
        parts.append(f"M={record.M}")
    if record.K is not None:
        parts.append(f"K={record.K}")
    if record.instances != 1:
        parts.append(f"instances={record.instances}")
    parts += [f"sent={record.sent}", f"received={record.received}", f"bytes={record.bytes}",
              f"verifies={_flag(record.verifies)}",
              f"reproduces={_flag(record.reproduces_destination)}",
              f"time-ns={record.time_ns if record.time_ns is not None else 'unavailable'}"]
    return "collectives " + " ".join(parts)


def _summary_comment(record, options) -> str:
    ops = format_record_value(record.ops) if record.ops else "none"
    time = record.time_ns if record.time_ns is not None else "unavailable"
    return (f"collectives reshards={record.reshards} ops={ops} bytes={record.bytes} "
            f"time-ns={time}")


def _summary_lines(record, options) -> list[str]:
    return [_summary_comment(record, options)] + [f"collectives finding: {f}"
                                                  for f in record.findings]


register_record_form(CollectivesMetadata, RecordForm(comment=_call_comment))
register_record_form(CollectivesSummaryMetadata, RecordForm(
    comment=_summary_comment, summary=_summary_lines))
