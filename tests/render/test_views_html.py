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
        if tag == "tr":
            self.table_rows += 1


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
    assert page.table_rows == 1 + len(report["calls"])  # header + one row per statement
    for line in report["program"].splitlines()[:5]:
        assert line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
            .replace('"', "&quot;").replace("'", "&#x27;") in text


def test_html_without_matplotlib_keeps_the_tables_and_says_how(capsys, tmp_path, monkeypatch):
    from tilefoundry.render.views import plots

    monkeypatch.setattr(plots, "have_matplotlib", lambda: False)
    text, page, report = _page(capsys, tmp_path, EXAMPLE)
    assert page.svgs == 0 and "no-charts" in page.ids
    assert "pip install &#x27;tilefoundry[plots]&#x27;" in text
    assert page.table_rows == 1 + len(report["calls"]) and "program" in page.ids


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
    for dtype, rate in peaks:  # one compute ceiling per published dtype peak
        if rate:
            assert f"{dtype} peak" in texts
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
