"""The costliest statements (`analyze --top N --sort time|flops|bytes`,
docs/views.md), read off one JSON report so every figure is the report's.

A call's record states one execution; a statement's figures are that times
its executions, the trip counts of the loops it reads (the factor compute-cost
and memory scale the function's totals by, so flops and bytes shares add up to
100%).

- time: the modeled duration (performance) times the executions times the
  waves: the timeline states wave 0 (the CTA-local plan) and every later wave
  repeats it, so the total is the report's predicted-ns and a statement's share
  is of it (issue 40 item 4). Occurrences on disjoint participants overlap, so
  time shares may sum past 100%.
- flops: whole flops over every dtype; share of the function's.
- bytes: whole traffic, read + write over every level; share of the function's.

The figures are one table (``FIGURES``: key, row field, heading, a call's
figure, the function's total), so another family's figure is one more entry.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from tilefoundry.render.json_contract import dumps, stamp

__all__ = ["ESTIMATE", "FIGURES", "SORT_KEYS", "figures_of", "Figure", "executions_of", "percent", "report_totals",
           "short_source", "statement_rows", "statement_text", "top_document", "top_json",
           "top_rows", "top_text", "waves_of"]


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


def _total_time(records: dict) -> int:
    performance = records.get("performance")
    if performance is None:
        return 0
    timeline = performance["timeline"]
    return timeline["end_ns"] - timeline["start_ns"]  # every wave: the predicted-ns


def _total_flops(records: dict) -> int:
    return sum(records.get("compute-cost", {}).get("flops", {}).values())


def _total_bytes(records: dict) -> int:
    return sum(m["read"] + m["write"] for m in records.get("traffic", {}).get("whole", {}).values())


class Figure:
    """One figure of a statement row: its key (``--sort KEY``, the share's key),
    the row's field, the text heading, the figure of one execution of a call
    (from its report entry), the function's total (from its ``function_records``),
    and whether it repeats with every wave."""

    def __init__(self, key: str, field: str, heading: str, of_call, of_function,
                 per_wave: bool = False):
        self.key, self.field, self.heading = key, field, heading
        self.of_call, self.of_function, self.per_wave = of_call, of_function, per_wave


def _estimate(entry: dict) -> int:
    return entry.get("estimate", {}).get("ns", 0)


def _total_estimate(records: dict) -> int:
    return (records.get("estimate") or {}).get("predicted_ns", 0)


FIGURES = (Figure("time", "time_ns", "time-ns", _time, _total_time, per_wave=True),
           Figure("flops", "flops", "flops", _flops, _total_flops),
           Figure("bytes", "bytes", "bytes", _bytes, _total_bytes))
#: the estimate family's figure: a statement's share of its kernel's time (over
#: every wave already), shown when the report ran the family
ESTIMATE = Figure("estimate", "estimate_ns", "estimate-ns", _estimate, _total_estimate)
SORT_KEYS = tuple(figure.key for figure in FIGURES) + (ESTIMATE.key,)


def figures_of(report: dict) -> tuple:
    """The figures a report states: the estimate's beside the others when it ran."""
    return FIGURES + (ESTIMATE,) if "estimate" in report["function_records"] else FIGURES


def waves_of(report: dict) -> int:
    """How many times the timeline's wave 0 runs (1 without performance)."""
    return (report["function_records"].get("performance") or {}).get("waves", 1)


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
    """The printed statement a ``<name>:<line>`` label points at, whole: a call
    the printer spreads over several lines (a reshard's ShardLayout) is joined
    into one line without the record comment, and nothing is cut (issue 40
    item 4: a reshard's target layout is the point of its line)."""
    lines = _lines(program)
    index = int(label.rsplit(":", 1)[1]) - 1
    parts, depth = [], 0
    while index < len(lines):
        code = lines[index].split("  # ", 1)[0].strip()
        parts.append(code)
        depth += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        index += 1
        if depth <= 0:
            break
    text = " ".join(parts)
    # the printer's layout (a line break after an opening bracket, a comma before
    # a closing one) written on one line
    for spread, joined in (("( ", "("), ("[ ", "["), (", )", ")"), (" )", ")")):
        text = text.replace(spread, joined)
    return text


def report_totals(report: dict) -> dict:
    """The function's total of every figure (time: the predicted-ns, all waves)."""
    records = report["function_records"]
    return {figure.key: figure.of_function(records) for figure in figures_of(report)}


def percent(part: int, whole: int) -> float:
    # a percentage with two decimals, from exact integers
    return float(round(Fraction(100 * part, whole), 2)) if whole else 0.0


def statement_rows(report: dict, executions: dict[str, int]) -> list[dict]:
    """Every call of the report with its figures and shares, in program order."""
    totals = report_totals(report)
    waves = waves_of(report)
    shown = figures_of(report)
    rows = []
    for entry in report["calls"]:
        runs = executions.get(entry["value"], 1)
        figures = {f.key: f.of_call(entry) * runs * (waves if f.per_wave else 1) for f in shown}
        row = {"value": entry["value"], "executions": runs,
               "statement": statement_text(report["program"], entry["value"]),
               "source": entry["source"]}
        row.update({f.field: figures[f.key] for f in shown})
        row["bound_by"] = entry.get("roofline", {}).get("bound_by")
        row["share"] = {f.key: percent(figures[f.key], totals[f.key]) for f in shown}
        rows.append(row)
    return rows


_FIELD = {figure.key: figure.field for figure in FIGURES + (ESTIMATE,)}


def top_rows(report: dict, executions: dict, count: int, sort: str) -> list[dict]:
    """The ``count`` costliest statements by ``sort``; ties keep program order."""
    rows = statement_rows(report, executions)
    ranked = sorted(rows, key=lambda row: -row.get(_FIELD[sort], 0))
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
    waves = waves_of(report)
    shown = figures_of(report)
    said = " ".join(f"{f.heading}={totals[f.key]}" for f in shown)
    over = f"; time over {waves} waves" if waves > 1 else ""
    lines = [f"# top {count} by {sort} of {report['module']}::{report['function']} "
             f"(total {said}{over})"]
    header = ("rank", *(f.heading for f in shown), f"%{sort}", "runs", "bound-by", "source",
              "statement")
    table = [header]
    for rank, row in enumerate(top_rows(report, executions, count, sort), 1):
        table.append((str(rank), *(str(row[f.field]) for f in shown),
                      f"{row['share'].get(sort, 0.0):.2f}", str(row["executions"]), row["bound_by"] or "-",
                      short_source(row["source"]), f"{row['value']}  {row['statement']}"))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    right = set(range(len(shown) + 3))  # rank, the figures, the share, runs
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
