"""The HTML report in a real browser (issue 12 item 6): headless Chromium loads
the page without a console message, its roofline chart paints (not a blank
box), and its statement table sorts by a clicked column. `.ci/run` installs
Debian's chromium where it is missing; the test skips only where no browser
is on PATH."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape

import pytest

from tests.conftest import REPO
from tests.render.png_pixels import colours_in
from tilefoundry.cli.main import main

EXAMPLE = str(REPO / "src" / "tilefoundry" / "examples" / "rmsnorm_tiles.py")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1280, 2200
WHITE = b"\xff\xff\xff"

BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no headless Chromium on PATH (.ci/run installs Debian's "
                            "'chromium'; or: apt-get install chromium)")

# run in the probe copy only: where the chart is, then a click on the flops header
PROBE = """<script>
var box = document.querySelector("#roofline svg").getBoundingClientRect();
var headers = Array.prototype.map.call(document.querySelectorAll("#statements th"),
                                       function (th) { return th.textContent; });
document.querySelectorAll("#statements th")[headers.indexOf("flops")].click();
document.title = JSON.stringify({box: [box.left, box.top, box.right, box.bottom], headers: headers});
</script>
</body>"""


def _chromium(tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"  # one profile per run: parallel runs never share a lock
    return subprocess.run(
        [BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         f"--window-size={WIDTH},{HEIGHT}", *args],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)


def _console(stderr: str) -> list[str]:
    """The page's console messages, as Chromium logs them (``INFO:CONSOLE``)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    pytest.importorskip("matplotlib")
    import io
    from contextlib import redirect_stdout

    path = tmp_path_factory.mktemp("html") / "report.html"
    with redirect_stdout(io.StringIO()):
        assert main(["analyze", "--html", str(path), "--compute-cost", "--memory", "--roofline",
                     "--performance", EXAMPLE]) == 0
    return path


def test_console_check_sees_a_console_error(tmp_path):
    """The check below can fail: a page that logs an error is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><p>x</p><script>console.error("canary"); missing();</script>')
    run = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert any("canary" in line for line in _console(run.stderr))
    assert any("missing is not defined" in line for line in _console(run.stderr))


def test_report_loads_without_console_messages_and_its_chart_paints(report_page, tmp_path):
    shot = tmp_path / "report.png"
    run = _chromium(tmp_path, f"--screenshot={shot}", report_page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert _console(run.stderr) == []

    probe = tmp_path / "probe.html"
    probe.write_text(report_page.read_text(encoding="utf-8").replace("</body>", PROBE, 1),
                     encoding="utf-8")
    dumped = _chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert _console(dumped.stderr) == []
    found = json.loads(unescape(re.search(r"<title>(.*?)</title>", dumped.stdout, re.S).group(1)))
    left, top, right, bottom = (round(v) for v in found["box"])
    assert right - left > 200 and bottom - top > 150, found["box"]  # the chart has a size

    data = shot.read_bytes()
    chart = colours_in(data, (left, top, right, min(bottom, HEIGHT)))
    painted = sum(n for colour, n in chart.items() if colour != WHITE)
    assert painted > 0.02 * (right - left) * (bottom - top)  # lines, points, text
    assert len(chart) > 8  # more than a flat fill: the ceilings' and points' colours
    # the measure tells paint from nothing: the margin right of the page is blank
    margin = colours_in(data, (WIDTH - 60, top, WIDTH - 20, bottom))
    assert set(margin) == {WHITE}


def test_statement_table_sorts_by_a_clicked_column(report_page, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(report_page.read_text(encoding="utf-8").replace("</body>", PROBE, 1),
                     encoding="utf-8")
    dumped = _chromium(tmp_path, "--dump-dom", probe.as_uri())
    headers = json.loads(unescape(re.search(r"<title>(.*?)</title>", dumped.stdout, re.S)
                                  .group(1)))["headers"]
    column = headers.index("flops")
    body = dumped.stdout.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    flops = [int(re.findall(r'data-v="([^"]*)"', row)[column]) for row in rows]
    assert len(flops) > 3 and flops == sorted(flops, reverse=True)
    # the page as written orders by time, so the click is what changed the order
    written = report_page.read_text(encoding="utf-8").split("<tbody>", 1)[1]
    first = [int(re.findall(r'data-v="([^"]*)"', row)[column])
             for row in re.findall(r"<tr>(.*?)</tr>", written.split("</tbody>", 1)[0], re.S)]
    assert first != flops and sorted(first) == sorted(flops)


# click the value header twice (descending, then ascending) and list the column
VALUE_PROBE = """<script>
var heads = Array.prototype.slice.call(document.querySelectorAll("#statements th"));
var value = heads.filter(function (th) { return th.textContent === "value"; })[0];
value.click(); value.click();
document.title = JSON.stringify(Array.prototype.map.call(
  document.querySelectorAll("#statements tbody tr"), function (tr) { return tr.cells[0].dataset.v; }));
</script>
</body>"""


def test_statement_table_sorts_values_naturally(report_page, tmp_path):
    """v2 before v10: digit runs compare as numbers in the browser's own sort."""
    probe = tmp_path / "probe.html"
    probe.write_text(report_page.read_text(encoding="utf-8").replace("</body>", VALUE_PROBE, 1),
                     encoding="utf-8")
    dumped = _chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert _console(dumped.stderr) == []
    values = json.loads(unescape(re.search(r"<title>(.*?)</title>", dumped.stdout, re.S).group(1)))

    def natural(label):
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]

    assert len(values) > 3 and values == sorted(values, key=natural), values
    assert values != sorted(values)  # plain text order would differ (v10 before v2)
