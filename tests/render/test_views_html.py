"""`analyze --html FILE` and `--plot FILE` (issue 12 item 5, docs/views.md): one
self-contained page (no network, no external script or style) holding the
summary, the roofline and timeline charts, the sortable statement table and
the annotated program; without matplotlib the tables and a hint remain."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from tests.conftest import PROGRAMS, REPO
from tilefoundry.cli.main import main

EXAMPLE = str(REPO / "src" / "tilefoundry" / "examples" / "rmsnorm_tiles.py")
GEMM = str(PROGRAMS / "p03_tiled_gemm.py")
FAMILIES = ["--compute-cost", "--memory", "--roofline", "--performance"]


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class _Page(HTMLParser):
    """What a browser would fetch, and the page's parts by id."""

    def __init__(self):
        super().__init__()
        self.fetched: list[str] = []
        self.ids: set[str] = set()
        self.table_rows = 0
        self.rows_by_table: dict[str, int] = {}
        self.table = None
        self.svgs = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "img", "iframe", "audio", "video", "source") and attrs.get("src"):
            self.fetched.append(attrs["src"])
        if tag == "link":
            self.fetched.append(attrs.get("href", ""))
        if tag == "image" and (attrs.get("href") or attrs.get("xlink:href", "")).startswith("http"):
            self.fetched.append(attrs.get("href") or attrs["xlink:href"])
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "svg":
            self.svgs += 1
        if tag == "table":
            self.table = attrs.get("id")
        if tag == "tr":
            self.table_rows += 1
            self.rows_by_table[self.table] = self.rows_by_table.get(self.table, 0) + 1


def _page(capsys, tmp_path, source, *extra):
    path = tmp_path / "report.html"
    code, out, err = _run(capsys, "analyze", "--html", str(path), "--json", *FAMILIES, *extra, source)
    assert (code, err) == (0, "")
    text = path.read_text(encoding="utf-8")
    parser = _Page()
    parser.feed(text)
    return text, parser, json.loads(out)


@pytest.mark.parametrize("source", [EXAMPLE, GEMM], ids=["rmsnorm", "tiled_gemm"])
def test_html_is_one_self_contained_page_with_every_section(capsys, tmp_path, source):
    pytest.importorskip("matplotlib")
    text, page, report = _page(capsys, tmp_path, source)
    assert page.fetched == []  # nothing loaded from anywhere
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", text)  # nor by the style
    assert {"summary", "roofline", "timeline", "statements", "program"} <= page.ids
    assert page.svgs == 2
    # header + one row per statement (the estimate's kernel table is its own)
    assert page.rows_by_table["statements"] == 1 + len(report["calls"])
    assert page.table_rows == sum(page.rows_by_table.values())
    for line in report["program"].splitlines()[:5]:
        assert line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
            .replace('"', "&quot;").replace("'", "&#x27;") in text


def test_html_without_matplotlib_keeps_the_tables_and_says_how(capsys, tmp_path, monkeypatch):
    from tilefoundry.render.views import plots

    monkeypatch.setattr(plots, "have_matplotlib", lambda: False)
    text, page, report = _page(capsys, tmp_path, EXAMPLE)
    assert page.svgs == 0 and "no-charts" in page.ids
    assert "pip install &#x27;tilefoundry[plots]&#x27;" in text
    assert page.rows_by_table["statements"] == 1 + len(report["calls"]) and "program" in page.ids


def test_plot_without_matplotlib_is_one_line(capsys, tmp_path, monkeypatch):
    from tilefoundry.render.views import plots

    monkeypatch.setattr(plots, "have_matplotlib", lambda: False)
    code, out, err = _run(capsys, "analyze", "--plot", str(tmp_path / "r.svg"), EXAMPLE)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "--plot: charts need matplotlib: pip install 'tilefoundry[plots]'" in err


def test_plot_is_the_roofline_svg_alone(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    from tilefoundry.target.catalog import resolve_identity
    from tilefoundry.target.facts import ThroughputFacts

    path = tmp_path / "roofline.svg"
    code, out, err = _run(capsys, "analyze", "--plot", str(path), "--roofline", EXAMPLE)
    assert (code, err) == (0, "") and out.startswith("# analysis ")
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    peaks = resolve_identity("nvidia.h200_sxm").get_facts(ThroughputFacts).peak_flops_per_second
    rates: dict = {}
    for dtype, rate in peaks:  # one compute ceiling per published peak rate
        if rate:
            rates.setdefault(rate, []).append(dtype)
    for dtypes in rates.values():  # dtypes sharing a rate are named on its one line
        assert f"{' = '.join(dtypes)} peak" in texts
    assert texts.count(" peak") == len(rates) < len(peaks)  # bf16 and f16 share one
    assert "gmem bandwidth" in texts and "roofline of RmsNormTiles::rms_norm_rows" in texts


def test_plot_is_the_same_file_for_the_same_analysis(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for path in (first, second):
        assert _run(capsys, "analyze", "--plot", str(path), EXAMPLE)[0] == 0
    assert first.read_bytes() == second.read_bytes()


def test_roofline_points_are_the_reports_bounded_statements(capsys):
    """Each point: the call's flops over its bandwidth-level bytes, at flops /
    ideal-ns (roofline's own figures, analysis §1.2.3)."""
    from tilefoundry.render.views.plots import roofline_points

    code, out, _ = _run(capsys, "analyze", "--json", *FAMILIES, EXAMPLE)
    report = json.loads(out)
    points = {p["label"]: p for p in roofline_points(report, "gmem")}
    for call in report["calls"]:
        flops = sum(call["compute-cost"]["flops"].values())
        if flops and call["roofline"]["ideal_ns"]:
            gmem = call["traffic"]["whole"].get("gmem", {"read": 0, "write": 0})
            assert points.pop(call["value"]) == {
                "label": call["value"], "flops": flops, "bytes": gmem["read"] + gmem["write"],
                "ideal_ns": call["roofline"]["ideal_ns"], "bound_by": call["roofline"]["bound_by"]}
    assert points == {}



# ------------------------------------------------ issue 21 item 10: --plot formats

@pytest.mark.parametrize("name, magic", [("r.svg", b"<?xml"), ("r.png", b"\x89PNG\r\n\x1a\n"),
                                         ("r.pdf", b"%PDF-"), ("R.PNG", b"\x89PNG\r\n\x1a\n")])
def test_plot_writes_the_format_its_extension_names(name, magic, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / name
    code, out, err = _run(capsys, "analyze", "--plot", str(path), EXAMPLE)
    assert (code, err) == (0, "") and out
    assert path.read_bytes().startswith(magic)


def test_plot_png_and_pdf_are_the_same_bytes_for_the_same_analysis(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    for name in ("a.pdf", "b.pdf", "a.png", "b.png"):
        assert _run(capsys, "analyze", "--plot", str(tmp_path / name), EXAMPLE)[0] == 0
    for ext in ("pdf", "png"):
        assert (tmp_path / f"a.{ext}").read_bytes() == (tmp_path / f"b.{ext}").read_bytes()


@pytest.mark.parametrize("name, why", [
    ("roofline.jpg", "its extension .jpg names no chart format"),
    ("roofline.html", "its extension .html names no chart format"),
    ("roofline", "it has no extension to name the chart format"),
])
def test_plot_refuses_any_other_extension_in_one_line(name, why, capsys, tmp_path):
    path = tmp_path / name
    code, out, err = _run(capsys, "analyze", "--plot", str(path), EXAMPLE)
    assert (code, out) == (2, "")
    assert err == (f"tilefoundry: error: --plot {path}: {why}; --plot writes FILE.svg, FILE.png "
                   "or FILE.pdf (matplotlib), so name FILE with one of those "
                   "(see tilefoundry analyze --help)\n")
    assert not path.exists()


# ------------------------------------------------ issue 21 item 10: coinciding peaks

def test_coinciding_peak_rates_are_one_ceiling_naming_every_dtype():
    from types import SimpleNamespace

    from tilefoundry.render.views.plots import ceilings

    throughput = SimpleNamespace(memory_bandwidth_bytes_per_second=10,
                                 peak_flops_per_second=(("bf16", 5), ("f16", 5), ("f32", 2),
                                                        ("fp8e4m3", 9), ("i4", 0)))
    assert ceilings(throughput) == ([("fp8e4m3", 9), ("bf16 = f16", 5), ("f32", 2)], 10)


def test_statements_on_one_spot_carry_their_count(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    from tilefoundry.render.views.plots import coinciding

    points = [{"label": name} for name in ("a", "b", "c", "d")]
    # a and b coincide, c is within 3% of them on both axes, d is 5% off on one
    assert coinciding(points, [10.0, 10.0, 10.2, 10.0], [1.0, 1.0, 0.99, 1.05]) == \
        [(10.0, 1.0, ["a", "b", "c"])]
    # three elementwise statements, each reading two gmem tensors and writing one at one
    # flop an element: one spot (issue 40 item 4: no statement is pinned to an edge, so
    # only points of the same finite intensity and rate coincide)
    program = tmp_path / "three.py"
    program.write_text(THREE_ALIKE, encoding="utf-8")
    path = tmp_path / "r.svg"
    code, out, _ = _run(capsys, "analyze", "--json", "--plot", str(path), *FAMILIES, str(program))
    texts = [t.text for t in ET.fromstring(path.read_text(encoding="utf-8"))
             .iter("{http://www.w3.org/2000/svg}text")]
    assert "x3" in texts


THREE_ALIKE = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Alike:
    @func
    def f(a: Tensor[(64, 64), "f32"], b: Tensor[(64, 64), "f32"]) -> Tensor[(64, 64), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _grid:
            return a * b + (a - b)
'''


def test_statements_moving_no_gmem_bytes_are_counted_not_placed(capsys, tmp_path):
    """The tiled GEMM's smem and rmem statements (its matmul, casts and accumulation)
    have no finite intensity over gmem: the legend counts them."""
    pytest.importorskip("matplotlib")
    from tilefoundry.render.views.plots import roofline_points

    code, out, _ = _run(capsys, "analyze", "--json", *FAMILIES, GEMM)
    unplaced = sum(1 for p in roofline_points(json.loads(out), "gmem") if p["bytes"] == 0)
    assert unplaced > 1
    path = tmp_path / "r.svg"
    assert _run(capsys, "analyze", "--plot", str(path), GEMM)[0] == 0
    assert f"{unplaced} statements moving no gmem bytes (no intensity, not placed)" in path.read_text(
        encoding="utf-8")


# ------------------------------------------------ issue 21 item 10: the table sorts naturally

def _node_order(values: list) -> list:
    import shutil
    import subprocess

    from tilefoundry.render.views.html_report import ORDER_SCRIPT

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no node on PATH to run the page's comparator (the browser test runs it too)")
    script = ORDER_SCRIPT + f"console.log(JSON.stringify({json.dumps(values)}.sort(tfOrder)));"
    return json.loads(subprocess.run([node, "-e", script], capture_output=True, text=True,
                                     check=True, timeout=60).stdout)


def test_table_order_is_natural_for_text_and_numeric_for_numbers():
    assert _node_order(["v10:42", "v2:21", "acc:18", "v1_2:20", "v11:43"]) == \
        ["acc:18", "v1_2:20", "v2:21", "v10:42", "v11:43"]  # not v10 before v2
    assert _node_order(["p03.py:10", "p03.py:9", "p03.py:37"]) == \
        ["p03.py:9", "p03.py:10", "p03.py:37"]
    assert _node_order(["100", "9", "25.5", "0"]) == ["0", "9", "25.5", "100"]
    assert _node_order(["memory", "", "compute"]) == ["", "compute", "memory"]


def test_the_page_sorts_with_that_comparator(capsys, tmp_path):
    from tilefoundry.render.views.html_report import ORDER_SCRIPT

    text, _, _ = _page(capsys, tmp_path, GEMM)
    script = text.split("<script>", 1)[1].split("</script>", 1)[0]
    assert script.startswith(ORDER_SCRIPT) and "tfOrder(a.cells[column].dataset.v" in script
    assert "localeCompare" not in script


# ------------------------------------------------ issue 21 item 10: --trace and --html agree

def _trace_and_page(capsys, tmp_path, source):
    trace_path, page_path = tmp_path / "t.json", tmp_path / "p.html"
    code, _, err = _run(capsys, "analyze", "--trace", str(trace_path), "--html", str(page_path),
                        source)
    assert (code, err) == (0, "")
    page = page_path.read_text(encoding="utf-8")
    body = page.split('id="statements"', 1)[1].split("</tbody>", 1)[0]
    titles = re.findall(r"<th>([^<]*)</th>", page.split('id="statements"', 1)[1])[:11]
    runs = {}
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)[1:]:
        cells = dict(zip(titles, re.findall(r'data-v="([^"]*)"', row)))
        runs[cells["value"]] = int(cells["runs"])
    return json.loads(trace_path.read_text()), page, runs


NESTED = """
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Nested:
    @func
    def f(x: Tensor[(4, 1024), "f32"]) -> Tensor[(4, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            acc = tf.zeros(Tensor[(4, 256), "f32", (4 @ m.c, 256), "smem"])
            for i in range(2):
                for k in tile(1024, 256):
                    xs = tf.reshard(x[:, k], (4 @ m.c, 256), "smem")
                    acc = acc + xs
                acc = acc * 2.0
            return tf.reshard(acc, (4 @ m.c, 256), "gmem")
"""


@pytest.mark.parametrize("program", ["gemm", "nested"])
def test_trace_and_html_state_the_same_trips_and_runs(program, capsys, tmp_path):
    """p03's `kk` loop runs 16 trips: the trace's loop slice, each body
    occurrence and the page's table say 16, and the page's timeline names the
    loop as the trace does. In a nested loop a statement's runs (the trips of
    every loop it reads) are the same number in both."""
    pytest.importorskip("matplotlib")
    if program == "gemm":
        source = GEMM
    else:
        source = tmp_path / "nested.py"
        source.write_text(NESTED)
    trace, page, runs = _trace_and_page(capsys, tmp_path, str(source))
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    loops = [e for e in events if e["name"].startswith("loop ")]
    occurrences = [e for e in events if "value" in e["args"]]
    assert loops and occurrences
    timeline = page.split('id="timeline"', 1)[1].split("</svg>", 1)[0]
    for loop in loops:
        assert loop["name"] == f"loop {loop['name'].split()[1]} x{loop['args']['trips']}"
        assert f" {loop['name']}<" in timeline or f" {loop['name']}\n" in timeline, loop["name"]
    for event in occurrences:
        assert event["args"]["runs"] == runs[event["args"]["value"]], event["args"]["value"]
    if program == "gemm":
        assert {e["name"] for e in loops} == {"loop kk x16"}
        body = [e for e in occurrences if e["args"]["trips"] == 16]
        assert len(body) == 6 and all(runs[e["args"]["value"]] == 16 for e in body)
    else:
        assert {e["name"] for e in loops} == {"loop k x4", "loop i x2"}
        assert runs["v3:26"] == 8  # acc + xs: 2 trips of i times 4 of k, in both
