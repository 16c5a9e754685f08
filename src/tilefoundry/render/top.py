"""The costliest statements (`analyze --top N --sort time|flops|bytes`,
docs/views.md), read off one JSON report so every figure is the report's.

- time: the occurrence's modeled duration times its trips (performance); its
  share is of the local makespan, the predicted time of one wave. Occurrences
  on disjoint participants overlap, so time shares may sum past 100%.
- flops: the call's whole flops over every dtype; share of the function's.
- bytes: the call's whole traffic, read + write over every level; share of the
  function's.
"""
from __future__ import annotations

from fractions import Fraction

from tilefoundry.render.json_contract import dumps, stamp

__all__ = ["SORT_KEYS", "short_source", "statement_rows", "statement_text", "top_document",
           "top_json", "top_rows", "top_text"]

SORT_KEYS = ("time", "flops", "bytes")


def _flops(entry: dict) -> int:
    return sum(entry.get("compute-cost", {}).get("flops", {}).values())


def _bytes(entry: dict) -> int:
    whole = entry.get("traffic", {}).get("whole", {})
    return sum(moved["read"] + moved["write"] for moved in whole.values())


def _time(entry: dict) -> int:
    timeline = entry.get("performance", {}).get("timeline")
    if timeline is None:
        return 0
    return (timeline["end_ns"] - timeline["start_ns"]) * timeline["trips"]


def statement_text(program: str, label: str) -> str:
    """The printed statement a ``<name>:<line>`` label points at (its first
    line, without the record comment)."""
    line = int(label.rsplit(":", 1)[1])
    text = program.splitlines()[line - 1].split("  # ", 1)[0].strip()
    return text if len(text) <= 72 else text[:69] + "..."


def _totals(report: dict) -> dict:
    records = report["function_records"]
    flops = sum(records.get("compute-cost", {}).get("flops", {}).values())
    whole = records.get("traffic", {}).get("whole", {})
    moved = sum(m["read"] + m["write"] for m in whole.values())
    performance = records.get("performance")
    makespan = 0
    if performance is not None:
        timeline = performance["timeline"]
        makespan = (timeline["end_ns"] - timeline["start_ns"]) // performance["waves"]
    return {"time": makespan, "flops": flops, "bytes": moved}


def _share(part: int, whole: int) -> float:
    # a percentage with two decimals, from exact integers
    return float(round(Fraction(100 * part, whole), 2)) if whole else 0.0


def statement_rows(report: dict) -> list[dict]:
    """Every call of the report with its figures and shares, in program order."""
    totals = _totals(report)
    rows = []
    for entry in report["calls"]:
        figures = {"time": _time(entry), "flops": _flops(entry), "bytes": _bytes(entry)}
        rows.append({
            "value": entry["value"],
            "statement": statement_text(report["program"], entry["value"]),
            "source": entry["source"],
            "time_ns": figures["time"],
            "flops": figures["flops"],
            "bytes": figures["bytes"],
            "bound_by": entry.get("roofline", {}).get("bound_by"),
            "share": {key: _share(figures[key], totals[key]) for key in SORT_KEYS},
        })
    return rows


_FIELD = {"time": "time_ns", "flops": "flops", "bytes": "bytes"}


def top_rows(report: dict, count: int, sort: str) -> list[dict]:
    """The ``count`` costliest statements by ``sort``; ties keep program order."""
    rows = statement_rows(report)
    ranked = sorted(rows, key=lambda row: -row[_FIELD[sort]])
    return ranked[:count]


def top_document(report: dict, count: int, sort: str) -> dict:
    """The ``analyze-top`` JSON document (schemas/analyze-top.schema.json)."""
    return stamp({"target": report["target"], "module": report["module"],
                  "function": report["function"], "topology": report["topology"],
                  "sort": sort, "count": count, "totals": _totals(report),
                  "statements": top_rows(report, count, sort)})


def top_json(report: dict, count: int, sort: str) -> str:
    return dumps(top_document(report, count, sort))


def top_text(report: dict, count: int, sort: str) -> str:
    """One line per statement: rank, figures, share of the sort key, source,
    and the statement as printed."""
    totals = _totals(report)
    lines = [f"# top {count} by {sort} of {report['module']}::{report['function']} "
             f"(total time-ns={totals['time']} flops={totals['flops']} bytes={totals['bytes']})"]
    header = ("rank", "time-ns", "flops", "bytes", f"%{sort}", "bound-by", "source", "statement")
    table = [header]
    for rank, row in enumerate(top_rows(report, count, sort), 1):
        table.append((str(rank), str(row["time_ns"]), str(row["flops"]), str(row["bytes"]),
                      f"{row['share'][sort]:.2f}", row["bound_by"] or "-",
                      short_source(row["source"]), f"{row['value']}  {row['statement']}"))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    right = {0, 1, 2, 3, 4}
    for line in table:
        lines.append("  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(line, widths))).rstrip())
    return "\n".join(lines) + "\n"


def short_source(source: str | None) -> str:
    """``file:line`` of a ``/path/file.py:line:col`` span (the column is noise
    in a table; the JSON keeps the full span)."""
    if not source:
        return "-"
    path, line, _col = source.rsplit(":", 2)
    return f"{path.rsplit('/', 1)[-1]}:{line}"
