"""`analyze --trace FILE` (issue 12 item 1, docs/views.md): the performance
timeline (analysis §1.2.4) in the Chrome Trace Event Format. The file must obey
the format (tests/render/trace_event_format.schema.json), and every event must
state exactly the interval the JSON report states."""
from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, REPO
from tilefoundry.cli.main import main

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).with_name("trace_event_format.schema.json")).read_text())
EXAMPLE = str(REPO / "src" / "tilefoundry" / "examples" / "rmsnorm_tiles.py")
# (source, dims): no loop; two loops (a tiled GEMM); three participant classes
CASES = [
    (EXAMPLE, []),
    (str(PROGRAMS / "p03_tiled_gemm.py"), []),
    (str(PROGRAMS / "p16_standalone_sliced_mesh.py"), []),
]


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _ns(us: Decimal) -> int:
    ns = us * 1000
    assert ns == ns.to_integral_value(), us
    return int(ns)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Each case's (trace, report), made once."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    found = {}
    for source, dims in CASES:
        path = tmp_path_factory.mktemp("trace") / "t.json"
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            assert main(["analyze", "--trace", str(path), "--json", "--compute-cost", "--memory",
                         "--roofline", "--performance", *dims, source]) == 0
        found[source] = (json.loads(path.read_text(), parse_float=Decimal), json.loads(out.getvalue()))
    return found


@pytest.mark.parametrize("source", [c[0] for c in CASES], ids=lambda s: Path(s).stem)
def test_trace_obeys_the_trace_event_format(traces, source):
    trace, _ = traces[source]
    document = json.loads(json.dumps(trace, default=float))
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(document))
    assert not errors, [e.message for e in errors[:5]]
    assert trace["displayTimeUnit"] == "ns"


@pytest.mark.parametrize("source", [c[0] for c in CASES], ids=lambda s: Path(s).stem)
def test_performance_1_2_4_every_occurrence_event_is_the_reports_interval(traces, source):
    trace, report = traces[source]
    timed = {c["value"]: c for c in report["calls"] if "performance" in c}
    events = [e for e in trace["traceEvents"] if e["ph"] == "X" and "value" in e.get("args", {})]
    assert sorted(e["args"]["value"] for e in events) == sorted(timed)  # each once
    for event in events:
        call = timed[event["args"]["value"]]
        timeline = call["performance"]["timeline"]
        assert _ns(event["ts"]) == timeline["start_ns"]
        assert _ns(event["ts"] + event["dur"]) == timeline["end_ns"]
        args = event["args"]
        assert (args["trips"], args["stride_ns"]) == (timeline["trips"], timeline["stride_ns"])
        assert args["source"] == call["source"] and args["bound_by"] == call["roofline"]["bound_by"]
        assert args["flops"] == sum(call["compute-cost"]["flops"].values())
        assert args["bytes"] == sum(m["read"] + m["write"] for m in call["traffic"]["whole"].values())
        assert args["statement"].startswith(call["value"].split(":")[0] + " = ")


def _tracks(trace) -> dict:
    tracks = defaultdict(list)
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            tracks[(event["pid"], event["tid"])].append(
                (_ns(event["ts"]), _ns(event["ts"] + event["dur"]), event))
    return tracks


@pytest.mark.parametrize("source", [c[0] for c in CASES], ids=lambda s: Path(s).stem)
def test_slices_on_one_track_nest_and_never_cross(traces, source):
    """Perfetto draws a track's complete events as a stack: two slices either
    nest or are disjoint (a loop slice encloses its body)."""
    for key, slices in _tracks(traces[source][0]).items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[int] = []
        for start, end, event in slices:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], (key, event["name"])
            open_ends.append(end)


def test_one_process_per_participant_class(traces):
    """p16 runs on cta 0-3, cta 4-5 and cta 0-5: one process each, and every
    occurrence sits in the process of its own participants."""
    trace, _ = traces[str(PROGRAMS / "p16_standalone_sliced_mesh.py")]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    classes = [n for pid, n in names.items() if pid != 1]
    assert len(classes) == len(set(classes)) >= 2
    for event in trace["traceEvents"]:
        if event["ph"] == "X" and "participants" in event["args"]:
            assert names[event["pid"]] == event["args"]["participants"]


def test_loops_are_enclosing_slices_with_their_trip_count(traces):
    trace, report = traces[str(PROGRAMS / "p03_tiled_gemm.py")]
    loops = [s for slices in _tracks(trace).values() for s in slices
             if s[2]["name"].startswith("loop ")]
    assert loops
    for start, end, event in loops:
        trips, stride = event["args"]["trips"], event["args"]["stride_ns"]
        assert end - start == trips * stride and event["name"].endswith(f"x{trips}")
        body = [c for c in report["calls"]
                if c.get("performance", {}).get("timeline", {}).get("stride_ns") == stride
                and c["performance"]["timeline"]["trips"] == trips]
        assert body
        for call in body:  # every trip of the body lies inside the loop's slice
            timeline = call["performance"]["timeline"]
            assert start <= timeline["start_ns"]
            assert timeline["end_ns"] + (trips - 1) * stride <= end


def test_waves_are_marked_and_the_envelope_is_the_prediction(traces):
    trace, report = traces[EXAMPLE]
    summary = report["function_records"]["performance"]
    by_name = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    envelope = next(e for n, e in by_name.items() if "predicted-ns=" in n)
    assert _ns(envelope["dur"]) == summary["timeline"]["end_ns"]
    wave = by_name["wave 0"]
    assert _ns(wave["dur"]) * summary["waves"] == summary["timeline"]["end_ns"]


def test_later_waves_are_one_slice_repeating_wave_0():
    """Several waves (analysis §1.2.4: intervals stay CTA-local, the envelope
    is makespan * waves): wave 0 spans the makespan, the rest one slice."""
    from tilefoundry.render.views.trace import _program_events

    makespan, waves = 250, 3
    report = {"module": "M", "function": "f", "target": "t",
              "function_records": {"performance": {"timeline": {"end_ns": makespan * waves},
                                                   "waves": waves}}}
    slices = {e["name"]: (e["ts"], e["dur"]) for e in _program_events(report) if e["ph"] == "X"}
    assert slices["wave 0"] == (0, makespan / 1000)
    assert slices[f"waves 1..{waves - 1} (repeat wave 0)"] == (makespan / 1000,
                                                              makespan * (waves - 1) / 1000)


def test_trace_without_performance_facts_is_one_line(capsys, tmp_path):
    """A target that cannot time the program refuses --trace as --performance does."""
    code, out, err = _run(capsys, "analyze", "--trace", str(tmp_path / "t.json"),
                          str(PROGRAMS / "p15_cpu_host_scale.py"))
    assert code == 1 and out == ""
    assert err.startswith("tilefoundry: error: ") and err.count("\n") == 1
    assert not (tmp_path / "t.json").exists()


def test_trace_to_an_unwritable_path_names_the_flag(capsys, tmp_path):
    code, _, err = _run(capsys, "analyze", "--trace", str(tmp_path / "no" / "t.json"), EXAMPLE)
    assert code == 1
    assert err.startswith(f"tilefoundry: error: cannot write --trace {tmp_path / 'no' / 't.json'}")


def test_the_report_beside_a_trace_keeps_to_the_families_asked(capsys, tmp_path):
    """--trace runs what it needs; stdout is what the command would print without it."""
    path = tmp_path / "t.json"
    code, out, err = _run(capsys, "analyze", "--trace", str(path), "--compute-cost", EXAMPLE)
    assert (code, err) == (0, "") and path.exists()
    assert "# selection requested=compute-cost executed=compute-cost" in out
    plain = _run(capsys, "analyze", "--compute-cost", EXAMPLE)[1]
    assert out == plain
    code, out, _ = _run(capsys, "analyze", "--trace", str(path), EXAMPLE)
    assert out == _run(capsys, "analyze", EXAMPLE)[1]  # no family flag: the typed program
