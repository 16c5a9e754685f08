"""Rows of headline figures: a ``--dim`` sweep and targets side by side
(docs/views.md). Each point is its own ``analyze`` (no record is carried from
one point to the next, analysis §1); its figures are read off that point's
JSON report, so a row states exactly what ``analyze --json`` would.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from itertools import product

from tilefoundry.errors import TileFoundryError
from tilefoundry.render.json_contract import dumps, stamp

__all__ = ["Point", "points_of", "run_point", "headline", "rows_document", "rows_json",
           "rows_text", "rows_csv"]


@dataclass(frozen=True)
class Point:
    """One row's inputs: a target identity (None: the module's own) and one
    extent per swept dimension."""

    target: str | None
    dims: tuple  # ((name, extent), ...), in --dim order

    def label(self) -> str:
        parts = [f"--target {self.target}"] if self.target else []
        parts += [f"--dim {name}={extent}" for name, extent in self.dims]
        return " ".join(parts) or "the module's own target"


def points_of(targets: list[str], grid: dict[str, tuple[int, ...]] | None) -> list[Point]:
    """Every (target, binding) pair: targets outermost, then the cartesian
    product of the dimensions in the order they were given."""
    names = list(grid or {})
    bindings = [tuple(zip(names, values)) for values in product(*(grid[n] for n in names))] \
        if names else [()]
    return [Point(target, binding) for target in (targets or [None]) for binding in bindings]


def run_point(module, function, point: Point, families: tuple, level: str | None,
              served: bool = False) -> tuple[dict, tuple]:
    """(one point's row, the families it ran); ``module`` already carries the
    point's target. ``served``: of ``families``, those the point's target
    serves (``analyze --all``). A refusal names the point it happened at."""
    from tilefoundry.analysis.analyze import analyze, analyze_served
    from tilefoundry.render.report import function_report

    dims = dict(point.dims) or None
    try:
        if served:
            result = analyze_served(module, function, families, level=level, dims=dims)
        else:
            result = analyze(module, function, analysis=families, level=level, dims=dims)
        report = function_report(result)
    except TileFoundryError as exc:
        raise _at_point(exc, point) from None
    row = {"target": report["target"], "dims": dict(point.dims), **headline(report)}
    return row, tuple(result.analyses)


def _at_point(exc: TileFoundryError, point: Point) -> TileFoundryError:
    """The refusal of one point, naming the point; a ``file:line:col`` the
    refusal names still leads the line (issue 40 item 7)."""
    where = exc.location
    text = str(exc)
    if where is not None and text.startswith(f"{where}: "):
        return type(exc)(f"{where}: {point.label()}: {text[len(where) + 2:]}")
    return type(exc)(f"{point.label()}: {text}")


def headline(report: dict) -> dict:
    """The headline figures of each family the report ran: compute-cost
    flops and service, memory traffic (whole) and peak footprint, roofline
    ideal-ns and bound-by, performance predicted-ns and waves, the estimate's
    predicted-ns and bound-by."""
    records = report["function_records"]
    requested = set(report["requested"])
    row: dict = {}
    if "compute-cost" in requested and "compute-cost" in records:
        row["flops"] = dict(records["compute-cost"]["flops"])
        row["service"] = dict(records["compute-cost"]["service"])
    if "memory" in requested:
        row["traffic"] = dict(records.get("traffic", {}).get("whole", {}))
        row["peak_bytes"] = {r["level"]: r["peak_bytes"]
                             for r in records.get("memory", {}).get("footprint", [])}
    if "roofline" in requested and "roofline" in records:
        row["ideal_ns"] = records["roofline"]["ideal_ns"]
        row["bound_by"] = records["roofline"]["bound_by"]
    if "performance" in requested and "performance" in records:
        timeline = records["performance"]["timeline"]
        row["predicted_ns"] = timeline["end_ns"] - timeline["start_ns"]
        row["waves"] = records["performance"]["waves"]
    if "estimate" in requested and "estimate" in records:
        row["estimate_ns"] = records["estimate"]["predicted_ns"]
        row["estimate_bound_by"] = records["estimate"]["bound_by"]
    return row


def rows_document(module, function, families: tuple, level: str | None, rows: list) -> dict:
    """The ``analyze-rows`` JSON document (schemas/analyze-rows.schema.json)."""
    return stamp({"module": module.name, "function": function.name, "topology": level,
                  "requested": list(families), "rows": rows}, "analyze-rows")


def _flat(row: dict) -> dict:
    """One row as ordered columns: target, each dim, then the figures (a
    level's traffic is its read + write bytes, as bandwidth sees it)."""
    flat = {"target": row["target"]}
    flat.update(row["dims"])
    for dtype, count in sorted(row.get("flops", {}).items()):
        flat[f"flops.{dtype}"] = count
    for kind, count in sorted(row.get("service", {}).items()):
        flat[f"service.{kind}"] = count
    for level, moved in sorted(row.get("traffic", {}).items()):
        flat[f"traffic.{level}"] = moved["read"] + moved["write"]
    for level, peak in sorted(row.get("peak_bytes", {}).items()):
        flat[f"peak.{level}"] = peak
    for key in ("ideal_ns", "bound_by", "predicted_ns", "waves", "estimate_ns", "estimate_bound_by"):
        if key in row:
            flat[key.replace("_", "-")] = row[key]
    return flat


_GROUPS = ("flops.", "service.", "traffic.", "peak.")


def _table(rows: list, missing: str) -> tuple[list[str], list[list]]:
    """Columns in a fixed order (target, dims, then each figure group) over
    the union of every row's; a figure one row lacks is ``missing`` there."""
    flats = [_flat(row) for row in rows]
    seen: list[str] = []
    for flat in flats:
        seen += [c for c in flat if c not in seen]

    def rank(column: str) -> int:
        group = next((i for i, g in enumerate(_GROUPS) if column.startswith(g)), None)
        if group is not None:
            return 1 + group
        return 0 if column in rows[0]["dims"] or column == "target" else len(_GROUPS) + 1

    columns = sorted(seen, key=lambda c: (rank(c), c if rank(c) in (1, 2, 3, 4) else ""))
    return columns, [[flat.get(c, missing) for c in columns] for flat in flats]


def rows_text(rows: list) -> str:
    """An aligned table: text columns to the left, numbers to the right."""
    columns, cells = _table(rows, "-")
    shown = [[str(v) for v in line] for line in cells]
    widths = [max([len(c)] + [len(line[i]) for line in shown]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(line[i], int) or line[i] == "-" for line in cells) for i in range(len(columns))]

    def spell(values) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([spell(columns)] + [spell(line) for line in shown]) + "\n"


def rows_csv(rows: list) -> str:
    """The same columns as the text table, as RFC 4180 CSV with a header row."""
    columns, cells = _table(rows, "")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(cells)
    return out.getvalue()


def rows_json(module, function, families: tuple, level: str | None, rows: list) -> str:
    return dumps(rows_document(module, function, families, level, rows))
