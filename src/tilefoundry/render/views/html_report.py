"""`analyze --html FILE`: one self-contained page (docs/views.md). No network,
no external script or style: the charts are inline SVG, the table sorting a
few lines of inline script (numbers numerically, text naturally: v2 before v10).

Sections: the header and summary lines, the roofline chart, the timeline, the
statement table (sortable by any column), and the annotated program. Without
matplotlib the page keeps the tables and says how to get the charts.
"""
from __future__ import annotations

from html import escape

from tilefoundry.render.views import plots
from tilefoundry.render.views.top import executions_of, figures_of, short_source, statement_rows

__all__ = ["ORDER_SCRIPT", "html_page"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; width: 100%; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #eee; cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
.chart svg { max-width: 100%; height: auto; }
.note { color: #a33; }
"""

# the order of two cells: numbers numerically, text naturally (digit runs as
# numbers: v2 before v10, p03.py:9 before p03.py:10); its own statement so
# that tests can run it alone (tests/render/test_views_html.py, with node)
ORDER_SCRIPT = """
var tfNatural = new Intl.Collator("en", {numeric: true});
function tfOrder(x, y) {
  var nx = Number(x), ny = Number(y);
  if (x !== "" && y !== "" && !isNaN(nx) && !isNaN(ny)) { return nx - ny; }
  return tfNatural.compare(x, y);
}
"""

# click a header: sort by that column, click again: reverse
_SCRIPT = ORDER_SCRIPT + """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var down = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var order = tfOrder(a.cells[column].dataset.v, b.cells[column].dataset.v);
        return down ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

def _columns(report: dict) -> tuple:
    """(heading, row key, numeric): each figure the report states
    (``top.figures_of``) and its share, so a family's figure is a column here too."""
    return ((("value", "value", False), ("statement", "statement", False),
             ("source", "source", False), ("runs", "executions", True))
            + tuple(column for f in figures_of(report)
                    for column in ((f.heading, f.field, True), (f"% {f.key}", ("share", f.key), True)))
            + (("bound-by", "bound_by", False),))


def _cell(row: dict, key, numeric: bool) -> str:
    value = row[key[0]][key[1]] if isinstance(key, tuple) else row[key]
    text = "" if value is None else str(value)
    css = ' class="n"' if numeric else ""
    if key == "source" and value:
        # the table shows file:line; the full span is the cell's tooltip
        return (f'<td data-v="{escape(text)}" title="{escape(text)}">'
                f"{escape(short_source(text))}</td>")
    return f'<td{css} data-v="{escape(text)}">{escape(text)}</td>'


def _table(report: dict, executions: dict) -> str:
    rows = sorted(statement_rows(report, executions), key=lambda r: -r["time_ns"])
    columns = _columns(report)
    head = "".join(f"<th>{escape(title)}</th>" for title, _, _ in columns)
    body = "\n".join("<tr>" + "".join(_cell(row, key, num) for _, key, num in columns) + "</tr>"
                     for row in rows)
    return (f'<table class="sortable" id="statements"><thead><tr>{head}</tr></thead>'
            f"<tbody>\n{body}\n</tbody></table>")


def _kernels(report: dict) -> str:
    """The estimate broken down by effect: one row per kernel (launch), each
    effect's own time, largest effects first; empty without the estimate."""
    estimate = report["function_records"].get("estimate")
    if not estimate:
        return ""
    effects = sorted({name for k in estimate["kernels"] for name in k["effects"]},
                     key=lambda name: -sum(k["effects"].get(name, 0) for k in estimate["kernels"]))
    columns = ((("kernel", "index", True), ("site", "site", False), ("ns", "ns", True),
                ("bound-by", "bound_by", False), ("ctas", "ctas", True),
                ("per-sm", "ctas_per_sm", True), ("waves", "waves", True))
               + tuple((name, ("effects", name), True) for name in effects))
    rows = [{**k, "effects": {name: k["effects"].get(name, 0) for name in effects}}
            for k in estimate["kernels"]]
    head = "".join(f"<th>{escape(title)}</th>" for title, _, _ in columns)
    body = "\n".join("<tr>" + "".join(_cell(row, key, num) for _, key, num in columns) + "</tr>"
                     for row in rows)
    missing = estimate["not_modelled"]
    note = (f'<p class="note">Not modelled on this target: {escape(", ".join(missing))}.</p>'
            if missing else "")
    return (f'<h2>Estimate by kernel</h2>\n<p>predicted {estimate["predicted_ns"]} ns, bound by '
            f'{escape(estimate["bound_by"])}, launched from a {escape(estimate["launch"])} '
            f'(docs/estimate.md). Each effect is its own time in ns; the kernel takes the '
            f'longest path through them.</p>{note}\n<table class="sortable" id="estimate">'
            f"<thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>")


def _inline(svg: str) -> str:
    """An SVG document as an element of the page (no XML prolog or doctype)."""
    return svg[svg.index("<svg"):]


def _charts(result, rendering) -> tuple[str, str]:
    """(roofline section, timeline section) bodies: inline SVG, or the hint.
    The timeline says which waves it draws (all, or the first of many)."""
    if not plots.have_matplotlib():
        note = f'<p class="note" id="no-charts">No charts: {escape(plots.PLOTS_HINT)}.</p>'
        return note, note
    from tilefoundry.render.views.trace import trace_document
    from tilefoundry.target.facts import ThroughputFacts

    throughput = result.module.resolve_target().get_facts(ThroughputFacts)
    roofline = _inline(plots.roofline_svg(rendering.report, throughput))
    trace = trace_document(result, rendering)
    timeline = _inline(plots.timeline_svg(trace))
    caption = f'<p id="waves">The timeline shows {escape(plots.timeline_caption(trace))}.</p>'
    return (f'<div class="chart" id="roofline">{roofline}</div>',
            f'{caption}\n<div class="chart" id="timeline">{timeline}</div>')


def html_page(result, rendering) -> str:
    """The page of one analysed result (all four families in its closure)."""
    report = rendering.report
    title = f"{report['module']}::{report['function']} on {report['target']}"
    roofline, timeline = _charts(result, rendering)
    summary = "\n".join(rendering.summary)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} - tilefoundry analyze</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>{escape(title)}</h1>
<p>tilefoundry {escape(report['tool']['version'])}; topology {escape(str(report['topology']))}.</p>
<pre id="summary">{escape(summary)}</pre>
<h2>Roofline</h2>
{roofline}
<h2>Timeline</h2>
{timeline}
<h2>Statements</h2>
<p>Click a column to sort. Figures are per statement over all its runs (the trips of the loops it reads); % time is of the predicted time, every wave included.</p>
{_table(report, executions_of(result, rendering))}
{_kernels(report)}
<h2>Annotated program</h2>
<pre id="program">{escape(rendering.program)}</pre>
<script>{_SCRIPT}</script>
</body>
</html>
"""
