"""Each call the selected function makes, totalled (`analyze --breakdown`,
docs/views.md): the per-layer table of a whole-model decode step.

The analysed view inlines every call; each inlined statement keeps the calls it
came through (``CallPathMetadata``), and a statement belongs to the first of
them, the entry's own call (``layer3``, ``embed``). Statements the entry writes
itself form the row ``(entry)``. A row's figures are its statements' figures as
``--top`` states them (one execution's record times its runs), read off the same
JSON report:

- time: the statements' modeled durations times their runs. A call's statements
  run on the same CTAs one after another, so the rows' times add up to the
  makespan where no two calls overlap (the share is of the makespan);
- flops, bytes: whole flops over every dtype, traffic over every level;
- ideal-ns, bound-by: the roofline bound of the row's summed work (its flops per
  dtype and its traffic at the target's bandwidth level, analysis §1.2.3), so
  time / ideal says how far that call is from its own bound.
"""
from __future__ import annotations

from tilefoundry.render.json_contract import dumps, stamp
from tilefoundry.render.views.top import (executions_of, figures_of, percent, report_totals,
                                          statement_rows)

__all__ = ["ENTRY", "breakdown_document", "breakdown_json", "breakdown_rows", "breakdown_text",
           "calls_of"]

#: the row of the statements the entry writes itself
ENTRY = "(entry)"


def calls_of(result, rendering) -> dict[str, str]:
    """label -> the entry's call the statement was inlined through (``ENTRY`` for
    the entry's own statements)."""
    from tilefoundry.ir.expr import postorder
    from tilefoundry.ir.metadata import CallPathMetadata

    calls = {}
    for node in postorder(result.function.body):
        label = rendering.labels.get(id(node))
        if label is None:
            continue
        path = node.get_metadata(CallPathMetadata)
        calls[label] = path.call if path is not None and path.path else ENTRY
    return calls


def _facts(result):
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.target import ThroughputFacts

    try:
        return result.module.resolve_target().get_facts(ThroughputFacts)
    except TileFoundryError:  # a target without rates: the rows state no bound
        return None


def _bound(flops: dict, traffic: dict, facts) -> tuple[int | None, str | None]:
    from tilefoundry.analysis.roofline import bound_of
    from tilefoundry.semantics.cost import TrafficBytes

    if facts is None:
        return None, None
    moved = tuple((level, TrafficBytes(rw[0], rw[1])) for level, rw in sorted(traffic.items()))
    bound = bound_of(tuple(sorted(flops.items())), moved, facts)
    return bound.ideal_ns, bound.bound_by


def _start(entry: dict) -> float:
    timeline = entry.get("performance", {}).get("timeline")
    return timeline["start_ns"] if timeline else float("inf")


def breakdown_rows(report: dict, executions: dict, calls: dict, facts) -> list[dict]:
    """One row per call of the entry, in the order its first timed statement
    starts (rows with no timed statement last, in program order)."""
    statements = {row["value"]: row for row in statement_rows(report, executions)}
    totals = report_totals(report)
    shown = figures_of(report)  # --top's figures: each a row's sum and share
    summed = tuple(f.field for f in shown)
    groups: dict[str, dict] = {}
    for entry in report["calls"]:
        row = statements[entry["value"]]
        runs = row["executions"]
        group = groups.setdefault(calls.get(entry["value"], ENTRY), {
            "statements": 0, **dict.fromkeys(summed, 0), "by_dtype": {}, "traffic": {},
            "start": float("inf")})
        group["start"] = min(group["start"], _start(entry))
        group["statements"] += 1
        for key in summed:
            group[key] += row[key]
        for dtype, count in entry.get("compute-cost", {}).get("flops", {}).items():
            group["by_dtype"][dtype] = group["by_dtype"].get(dtype, 0) + count * runs
        for level, moved in entry.get("traffic", {}).get("whole", {}).items():
            read, write = group["traffic"].get(level, (0, 0))
            group["traffic"][level] = (read + moved["read"] * runs, write + moved["write"] * runs)
    rows = []
    for call, group in sorted(groups.items(), key=lambda item: item[1]["start"]):  # stable: ties keep order
        del group["start"]
        ideal, bound_by = _bound(group.pop("by_dtype"), group.pop("traffic"), facts)
        share = {f.key: percent(group[f.field], totals[f.key]) for f in shown}
        rows.append({"call": call, **group, "ideal_ns": ideal, "bound_by": bound_by, "share": share})
    return rows


def breakdown_document(result, rendering) -> dict:
    """The ``analyze-breakdown`` JSON document (schemas/analyze-breakdown.schema.json)."""
    report = rendering.report
    rows = breakdown_rows(report, executions_of(result, rendering), calls_of(result, rendering),
                          _facts(result))
    return stamp({"target": report["target"], "module": report["module"],
                  "function": report["function"], "topology": report["topology"],
                  "totals": report_totals(report), "calls": rows}, "analyze-breakdown")


def breakdown_json(result, rendering) -> str:
    return dumps(breakdown_document(result, rendering))


def breakdown_text(result, rendering) -> str:
    """One line per call: its figures, its bound and the time / ideal ratio."""
    document = breakdown_document(result, rendering)
    totals = document["totals"]
    estimated = "estimate" in totals
    said = f" estimate-ns={totals['estimate']}" if estimated else ""
    lines = [f"# breakdown of {document['module']}::{document['function']} by call "
             f"(total time-ns={totals['time']} flops={totals['flops']} bytes={totals['bytes']}"
             f"{said})"]
    header = ("call", "statements", "time-ns", "ideal-ns", "time/ideal", "bound-by", "flops", "bytes",
              "%time") + (("estimate-ns", "%estimate") if estimated else ())
    table = [header]
    for row in document["calls"]:
        ratio = f"{row['time_ns'] / row['ideal_ns']:.2f}" if row["ideal_ns"] else "-"
        estimate = ((str(row["estimate_ns"]), f"{row['share']['estimate']:.2f}")
                    if estimated else ())
        table.append((row["call"], str(row["statements"]), str(row["time_ns"]),
                      "-" if row["ideal_ns"] is None else str(row["ideal_ns"]), ratio,
                      row["bound_by"] or "-", str(row["flops"]), str(row["bytes"]),
                      f"{row['share']['time']:.2f}", *estimate))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        lines.append("  ".join(cell.ljust(w) if i in (0, 5) else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths))).rstrip())
    return "\n".join(lines) + "\n"
