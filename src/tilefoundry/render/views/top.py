"""The costliest statements (`analyze --top N --sort time|flops|bytes`,
docs/views.md), read off one JSON report so every figure is the report's.

A call's record states one execution; a statement's figures are that times
its executions, the trip counts of the loops it reads (the factor compute-cost
and memory scale the function's totals by, so flops and bytes shares add up to
100%).

- time: the modeled duration (performance) times the executions; its share is
  of the local makespan, the predicted time of one wave. Occurrences on
  disjoint participants overlap, so time shares may sum past 100%.
- flops: whole flops over every dtype; share of the function's.
- bytes: whole traffic, read + write over every level; share of the function's.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from tilefoundry.render.json_contract import dumps, stamp

__all__ = ["SORT_KEYS", "executions_of", "percent", "report_totals", "short_source", "statement_rows",
           "statement_text", "top_document", "top_json", "top_rows", "top_text"]

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
    return timeline["end_ns"] - timeline["start_ns"]


def executions_of(result, rendering) -> dict[str, int]:
    """label -> how many times the call runs: the product of the trip counts
    of the loops it reads (compute_cost.recomputation_factors, as the
    function's totals count it)."""
    from tilefoundry.analysis.recomputation import recomputation_factors

    factors = recomputation_factors(result.function)
    return {label: factors.get(node_id, 1) for node_id, label in rendering.labels.items()}


@lru_cache(maxsize=4)
def _lines(program: str) -> tuple:
    # every statement of a report asks for its line: split the program once
    return tuple(program.splitlines())


def statement_text(program: str, label: str) -> str:
    """The printed statement a ``<name>:<line>`` label points at (its first
    line, without the record comment)."""
    line = int(label.rsplit(":", 1)[1])
    text = _lines(program)[line - 1].split("  # ", 1)[0].strip()
    return text if len(text) <= 72 else text[:69] + "..."


def report_totals(report: dict) -> dict:
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


def percent(part: int, whole: int) -> float:
    # a percentage with two decimals, from exact integers
    return float(round(Fraction(100 * part, whole), 2)) if whole else 0.0


def statement_rows(report: dict, executions: dict[str, int]) -> list[dict]:
    """Every call of the report with its figures and shares, in program order."""
    totals = report_totals(report)
    rows = []
    for entry in report["calls"]:
        runs = executions.get(entry["value"], 1)
        figures = {"time": _time(entry) * runs, "flops": _flops(entry) * runs,
                   "bytes": _bytes(entry) * runs}
        rows.append({
            "value": entry["value"],
            "executions": runs,
            "statement": statement_text(report["program"], entry["value"]),
            "source": entry["source"],
            "time_ns": figures["time"],
            "flops": figures["flops"],
            "bytes": figures["bytes"],
            "bound_by": entry.get("roofline", {}).get("bound_by"),
            "share": {key: percent(figures[key], totals[key]) for key in SORT_KEYS},
        })
    return rows


_FIELD = {"time": "time_ns", "flops": "flops", "bytes": "bytes"}


def top_rows(report: dict, executions: dict, count: int, sort: str) -> list[dict]:
    """The ``count`` costliest statements by ``sort``; ties keep program order."""
    rows = statement_rows(report, executions)
    ranked = sorted(rows, key=lambda row: -row[_FIELD[sort]])
    return ranked[:count]


def top_document(report: dict, executions: dict, count: int, sort: str) -> dict:
    """The ``analyze-top`` JSON document (schemas/analyze-top.schema.json)."""
    return stamp({"target": report["target"], "module": report["module"],
                  "function": report["function"], "topology": report["topology"],
                  "sort": sort, "count": count, "totals": report_totals(report),
                  "statements": top_rows(report, executions, count, sort)}, "analyze-top")


def top_json(report: dict, executions: dict, count: int, sort: str) -> str:
    return dumps(top_document(report, executions, count, sort))


def top_text(report: dict, executions: dict, count: int, sort: str) -> str:
    """One line per statement: rank, figures, share of the sort key, source,
    and the statement as printed."""
    totals = report_totals(report)
    lines = [f"# top {count} by {sort} of {report['module']}::{report['function']} "
             f"(total time-ns={totals['time']} flops={totals['flops']} bytes={totals['bytes']})"]
    header = ("rank", "time-ns", "flops", "bytes", f"%{sort}", "runs", "bound-by", "source",
              "statement")
    table = [header]
    for rank, row in enumerate(top_rows(report, executions, count, sort), 1):
        table.append((str(rank), str(row["time_ns"]), str(row["flops"]), str(row["bytes"]),
                      f"{row['share'][sort]:.2f}", str(row["executions"]), row["bound_by"] or "-",
                      short_source(row["source"]), f"{row['value']}  {row['statement']}"))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    right = {0, 1, 2, 3, 4, 5}
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
