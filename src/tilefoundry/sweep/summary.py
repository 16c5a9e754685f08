"""What a sweep's table says, in brief (`tilefoundry sweep --report TABLE`,
and after every run): the refusals by their line, the best point of each
selection by predicted-ns, the Pareto front of predicted-ns against peak
bytes of each level, and SVG charts of a figure against each dim, one chart
per target (``--plots DIR``).

Only ``ok`` rows that state the figures count. Ties go to the first row in the
table's order (the space's), so the same table gives the same report.
"""
from __future__ import annotations

import os

from tilefoundry.errors import TileFoundryError

__all__ = ["FRONT_SHOWN", "chart_name", "report_document", "report_json", "report_text", "write_plots"]

#: points of one front the text report shows (--json lists all)
FRONT_SHOWN = 10
#: distinct refusal lines the text report shows
REFUSALS_SHOWN = 5


class ReportError(TileFoundryError):
    """A report the table cannot give (exit 1)."""


def _dims_of(table, row: dict) -> dict:
    return {name: row[name] for name in table.dims if row.get(name) is not None}


def _point(table, row: dict, levels) -> dict:
    return {"target": row.get("target"), "topology": row.get("topology"), "dims": _dims_of(table, row),
            "predicted_ns": row.get("predicted-ns"),
            "peak_bytes": {level: row[f"peak.{level}"] for level in levels
                           if row.get(f"peak.{level}") is not None}}


def _levels(table) -> list[str]:
    return [c.removeprefix("peak.") for c in table.columns if c.startswith("peak.")]


def report_document(table, path: str) -> dict:
    """The ``sweep-report`` document (schemas/sweep-report.schema.json)."""
    from tilefoundry.render.json_contract import stamp

    rows = table.rows
    ok = [row for row in rows if row.get("status") == "ok"]
    selections = list(dict.fromkeys(row["selection"] for row in rows))
    refusals: dict = {}
    for row in rows:
        if row.get("status") != "ok":
            entry = refusals.setdefault(row.get("status") or "", {"count": 0, "first": row})
            entry["count"] += 1
    levels = _levels(table)
    best, fronts = [], []
    for selection in selections:
        timed = [row for row in ok if row["selection"] == selection and row.get("predicted-ns") is not None]
        winner = min(timed, key=lambda row: row["predicted-ns"]) if timed else None  # min keeps the first
        best.append({"selection": selection, "point": _point(table, winner, levels) if winner else None,
                     "refused": sum(1 for row in rows if row["selection"] == selection
                                    and row.get("status") != "ok")})
        for level in levels:
            front = _front(timed, f"peak.{level}")
            if front:
                fronts.append({"selection": selection, "level": level,
                               "points": [_point(table, row, [level]) for row in front]})
    return stamp({
        "table": path, "points": len(rows), "ok": len(ok), "refused": len(rows) - len(ok),
        "selections": len(selections), "dims": list(table.dims),
        "refusals": [{"status": status, "count": entry["count"],
                      "first": {"selection": entry["first"]["selection"],
                                **{k: v for k, v in _point(table, entry["first"], []).items()
                                   if k in ("target", "topology", "dims")}}}
                     for status, entry in sorted(refusals.items(), key=lambda item: -item[1]["count"])],
        "best": best, "pareto": fronts,
    }, "sweep-report")


def _front(rows: list, peak: str) -> list:
    """The rows no other row beats on both predicted-ns and ``peak`` (lower
    is better; of rows equal on both, the first), by predicted-ns."""
    stated = [row for row in rows if row.get(peak) is not None]
    ranked = sorted(enumerate(stated), key=lambda item: (item[1]["predicted-ns"], item[1][peak], item[0]))
    front, lowest = [], None
    for _, row in ranked:
        if lowest is None or row[peak] < lowest:
            front.append(row)
            lowest = row[peak]
    return front


def report_json(document: dict) -> str:
    from tilefoundry.render.json_contract import dumps

    return dumps(document)


def _cell(value) -> str:
    return "-" if value is None else str(value)


def _aligned(header: list[str], lines: list[list], indent: str = "") -> list[str]:
    shown = [[_cell(v) for v in line] for line in lines]
    widths = [max([len(h)] + [len(line[i]) for line in shown]) for i, h in enumerate(header)]
    numeric = [all(isinstance(line[i], int) or line[i] is None for line in lines)
               and any(isinstance(line[i], int) for line in lines) for i in range(len(header))]

    def spell(values) -> str:
        return indent + "  ".join(v.rjust(w) if num else v.ljust(w)
                                  for v, w, num in zip(values, widths, numeric)).rstrip()

    return [spell(header)] + [spell(line) for line in shown]


def report_text(document: dict) -> str:
    dims = document["dims"]
    lines = [f"# sweep {document['table']}: {document['points']:,} points over "
             f"{document['selections']} selection{'s' if document['selections'] != 1 else ''}: "
             f"{document['ok']:,} ok, {document['refused']:,} refused"]
    for entry in document["refusals"][:REFUSALS_SHOWN]:
        first = entry["first"]
        where = " ".join([first["selection"]]
                         + [f"{k}={first[k]}" for k in ("target", "topology") if first[k]]
                         + [f"{k}={v}" for k, v in first["dims"].items()])
        lines.append(f"# refused {entry['count']:,}: {entry['status']} (first: {where})")
    if len(document["refusals"]) > REFUSALS_SHOWN:
        rest = document["refusals"][REFUSALS_SHOWN:]
        lines.append(f"# refused {sum(e['count'] for e in rest):,} more, {len(rest)} other lines (--json "
                     "lists them)")
    levels = sorted({level for entry in document["best"] if entry["point"]
                     for level in entry["point"]["peak_bytes"]})
    lines += ["", "best predicted-ns per selection:"]
    header = ["selection", "predicted-ns", "target", "topology", *dims, *(f"peak.{lv}" for lv in levels)]
    body = []
    for entry in document["best"]:
        point = entry["point"]
        if point is None:
            body.append([entry["selection"], None, f"(no ok point: {entry['refused']} refused)", None]
                        + [None] * (len(dims) + len(levels)))
            continue
        body.append([entry["selection"], point["predicted_ns"], point["target"], point["topology"],
                     *(point["dims"].get(d) for d in dims), *(point["peak_bytes"].get(lv) for lv in levels)])
    lines += _aligned(header, body, "  ")
    if document["pareto"]:
        lines += ["", "pareto front of predicted-ns against peak bytes, per selection and level "
                      "(lower is better on both):"]
        header = ["selection", "level", "predicted-ns", "peak-bytes", "target", "topology", *dims]
        body = []
        more = []
        for front in document["pareto"]:
            for point in front["points"][:FRONT_SHOWN]:
                body.append([front["selection"], front["level"], point["predicted_ns"],
                             point["peak_bytes"][front["level"]], point["target"], point["topology"],
                             *(point["dims"].get(d) for d in dims)])
            if len(front["points"]) > FRONT_SHOWN:
                more.append(f"{front['selection']} {front['level']}: {len(front['points']) - FRONT_SHOWN}")
        lines += _aligned(header, body, "  ")
        if more:
            lines.append(f"  (fronts longer than {FRONT_SHOWN} points, more not shown: {'; '.join(more)}; "
                         "--json lists every point)")
    return "\n".join(lines) + "\n"


def numeric_figures(table) -> list[str]:
    from tilefoundry.sweep.table import TEXT_COLUMNS

    status = table.columns.index("status")
    return [c for c in table.columns[status + 1:] if c not in TEXT_COLUMNS]


def chart_name(figure: str, dim: str, target: str | None) -> str:
    return f"{figure}-vs-{dim}.{target or 'own-target'}.svg"


def write_plots(table, folder: str, figure: str = "predicted-ns") -> list[str]:
    """An SVG of ``figure`` against each dim, per target: one line per
    selection (and topology, and value of every other dim). Returns the
    files written, in order."""
    from tilefoundry.render.views.plots import PLOTS_HINT, have_matplotlib, line_chart_svg

    if not have_matplotlib():
        raise ReportError(f"--plots: {PLOTS_HINT}")
    if figure not in numeric_figures(table):
        from tilefoundry.errors import did_you_mean

        shown = numeric_figures(table)
        raise ReportError(f"--figure {figure}: the table has no such figure column; it has "
                          f"{', '.join(shown) or 'none (no ok row)'}{did_you_mean(figure, shown)}")
    written = []
    ok = [row for row in table.rows if row.get("status") == "ok" and row.get(figure) is not None]
    for dim in table.dims:
        stated = [row for row in ok if row.get(dim) is not None]
        if len({row[dim] for row in stated}) < 2:
            continue  # one value draws no line
        for target in dict.fromkeys(row.get("target") for row in stated):
            series: dict = {}
            for row in stated:
                if row.get("target") != target:
                    continue
                others = [f"{d}={row[d]}" for d in table.dims if d != dim and row.get(d) is not None]
                label = " ".join([row["selection"]] + ([f"@{row['topology']}"] if row.get("topology") else [])
                                 + others)
                series.setdefault(label, []).append((row[dim], row[figure]))
            lines = [(label, [x for x, _ in sorted(points)], [y for _, y in sorted(points)])
                     for label, points in series.items()]
            name = chart_name(figure, dim, target)
            on = target or "each module's own target"
            svg = line_chart_svg(f"{figure} against {dim} on {on}", dim, figure, lines, salt=name)
            path = os.path.join(folder, name)
            try:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(svg)
            except OSError as exc:
                raise ReportError(f"cannot write --plots {path}: {exc.strerror}") from None
            written.append(path)
    return written
