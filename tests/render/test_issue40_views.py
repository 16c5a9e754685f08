"""Issue 40 item 4: views that add up. `--top`'s total time is the predicted-ns (every
wave), its statements' times add up to it; no statement is cut; the HTML timeline shows
every wave (or says it shows the first of N); the roofline chart places no statement that
moves no bandwidth-level byte on an edge, and has a point for the whole kernel;
`analyze --summary` prints the summary lines only; a progress bar on a terminal only."""
from __future__ import annotations

import io
import json
import re

import pytest

from tilefoundry.cli.main import main
from tilefoundry.render.report import collapsed

# one elementwise chain over CTAS CTAs of one row each: on the H200's 132 SMs
# (hardware/nvidia.h200_sxm.toml) 264 CTAs run in 2 waves, 2244 in 17
WAVES = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

CTAS = {ctas}


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", CTAS),))
class Waves:
    @func
    def f(x: Tensor[(CTAS, 1024), "f32"]) -> Tensor[(CTAS, 1024), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as g:
            xs = tf.reshard(x, (CTAS @ g.c, 1024), "smem")
            y = tf.exp(xs) * 2.0
            return tf.reshard(y, (CTAS @ g.c, 1024), "gmem")
'''
SMS = 132


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def two_waves(tmp_path):
    path = tmp_path / "waves.py"
    path.write_text(WAVES.format(ctas=2 * SMS), encoding="utf-8")
    return str(path)


def _predicted(capsys, source) -> tuple[int, int]:
    code, out, err = _run(capsys, "analyze", "--performance", "--summary", source)
    found = re.search(r"predicted-ns=(\d+) waves=(\d+)", out)
    return int(found[1]), int(found[2])


def test_item4_top_total_time_is_the_predicted_time_of_every_wave(capsys, two_waves):
    predicted, waves = _predicted(capsys, two_waves)
    assert waves == 2
    code, out, err = _run(capsys, "analyze", "--top", "10", "--json", two_waves)
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["totals"]["time"] == predicted
    # one CTA runs the four statements one after another, every wave: they add up
    assert sum(row["time_ns"] for row in document["statements"]) == predicted
    assert sum(row["share"]["time"] for row in document["statements"]) == pytest.approx(100, abs=0.02)
    code, out, err = _run(capsys, "analyze", "--top", "2", two_waves)
    assert out.splitlines()[0].startswith(f"# top 2 by time of Waves::f (total time-ns={predicted} ")
    assert out.splitlines()[0].endswith("; time over 2 waves)")


def test_item4_no_statement_is_cut(capsys, two_waves, tmp_path):
    whole = ("v0 = reshard(x, layout=ShardLayout(layout=Layout((264, 1024), None), attrs=(S(0),), "
             "mesh=cta), storage=smem)")
    code, out, err = _run(capsys, "analyze", "--top", "1", two_waves)
    assert out.splitlines()[2].endswith(f"v0:17  {whole}")
    page = tmp_path / "report.html"
    assert _run(capsys, "analyze", "--html", str(page), two_waves)[0] == 0
    assert f'data-v="{whole}"' in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("ctas, caption", [
    (2 * SMS, "The timeline shows all 2 waves, each 0.262 µs repeating wave 0."),
    (17 * SMS, "The timeline shows the first 16 of 17 waves, each 0.262 µs repeating wave 0."),
])
def test_item4_the_html_timeline_shows_every_wave_or_says_which(capsys, tmp_path, ctas, caption):
    pytest.importorskip("matplotlib")
    source = tmp_path / "waves.py"
    source.write_text(WAVES.format(ctas=ctas), encoding="utf-8")
    predicted, waves = _predicted(capsys, str(source))
    assert waves == ctas // SMS and predicted == waves * 262  # one wave's plan: 262 ns
    page = tmp_path / "report.html"
    assert _run(capsys, "analyze", "--html", str(page), str(source))[0] == 0
    assert f'<p id="waves">{caption}</p>' in page.read_text(encoding="utf-8")


def test_item4_timeline_bars_repeat_wave_0_for_each_wave(capsys, two_waves):
    from tilefoundry.render.views.plots import _bars

    trace_file = two_waves.replace(".py", ".json")
    assert _run(capsys, "analyze", "--trace", trace_file, two_waves)[0] == 0
    with open(trace_file, encoding="utf-8") as handle:
        trace = json.load(handle)
    bars, _ = _bars(trace)
    starts = sorted(start for track in bars.values() for start, _ in track)
    # four statements per wave; wave 1 starts one makespan (0.262 µs) after wave 0
    assert len(starts) == 8 and starts[4] == pytest.approx(starts[0] + 0.262)


def test_item4_roofline_places_no_statement_on_an_edge_and_has_the_kernel(capsys, two_waves):
    pytest.importorskip("matplotlib")
    from tilefoundry.render.views.plots import kernel_point

    code, out, err = _run(capsys, "analyze", "--json", "--compute-cost", "--memory", "--roofline",
                          two_waves)
    report = json.loads(out)
    kernel = kernel_point(report, "gmem")
    flops = 264 * 1024  # the one mul by 2.0 (exp is a special-function service, not a flop)
    gmem = report["totals"]["traffic"]["gmem"]
    assert kernel["flops"] == flops and kernel["bytes"] == gmem["read"] + gmem["write"]
    assert kernel["ideal_ns"] == report["function_records"]["roofline"]["ideal_ns"]
    chart = two_waves.replace(".py", ".svg")
    assert _run(capsys, "analyze", "--plot", chart, two_waves)[0] == 0
    with open(chart, encoding="utf-8") as handle:
        svg = handle.read()
    assert "whole kernel (memory-bound)" in svg
    # the mul reads and writes smem only: no gmem byte, so no finite intensity
    assert "1 statement moving no gmem bytes (no intensity, not placed)" in svg
    assert "compute-bound statement" not in svg


def test_item4_summary_prints_the_summary_lines_only(capsys, two_waves):
    code, full, err = _run(capsys, "analyze", "--all", two_waves)
    code, summary, err = _run(capsys, "analyze", "--all", "--summary", two_waves)
    assert (code, err) == (0, "")
    assert summary == full.split("\n\n", 1)[0] + "\n"
    assert all(line.startswith("# ") for line in summary.splitlines())


def test_item4_summary_says_a_repeated_line_once_with_its_count():
    lines = ["# a", "# advisory=x", "# b", "# advisory=x", "# advisory=x"]
    assert collapsed(lines) == ["# a", "# advisory=x (x3)", "# b"]


def test_item4_summary_of_a_decode_step_is_short(capsys):
    """Llama-3-8B's placed decode step: each layer's advisories once, with the layer count."""
    from tilefoundry.models import model_named

    code, summary, err = _run(capsys, "analyze", "--memory", "--summary", "--dim", "ctx_len=4096",
                              "llama3-8b:Llama3_8B_H200.decode_step")
    assert (code, err) == (0, "")
    lines = summary.splitlines()
    assert len(lines) < 12 and all(line.startswith("# ") for line in lines)
    assert any(line.endswith(f" (x{model_named('llama3-8b').layers})") for line in lines)


@pytest.mark.parametrize("extra, other", [(("--json",), "--json"), (("--top", "3"), "--top")])
def test_item4_summary_with_another_output_is_a_usage_error(capsys, two_waves, extra, other):
    code, out, err = _run(capsys, "analyze", "--all", "--summary", *extra, two_waves)
    assert (code, out) == (2, "")
    assert err.startswith(f"tilefoundry: error: --summary prints the summary lines of one text "
                          f"report; {other} prints something else: drop one")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_item4_progress_bar_on_a_terminal_only(capsys, two_waves, monkeypatch):
    code, out, err = _run(capsys, "analyze", "--all", two_waves)
    assert err == ""  # not a terminal: silent
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["analyze", "--all", two_waves]) == 0
    shown = terminal.getvalue()
    stages = re.findall(r"analyze: ([a-z-]+) \((\d+)/(\d+)\)", shown)
    assert stages[0] == ("check", "1", stages[0][2]) and stages[-1][1] == stages[-1][2]
    assert "performance" in [name for name, _, _ in stages]
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["check", "--placed", two_waves]) == 0
    assert "check --placed: running" in terminal.getvalue()
