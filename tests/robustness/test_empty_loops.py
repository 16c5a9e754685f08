"""Issue 22 item 1: an empty loop runs 0 times (Python's range), so it adds
nothing: no negative flops, traffic, runs or durations in any view."""
from __future__ import annotations

import json

import pytest

from tests.robustness.json_numbers import numbers
from tilefoundry.cli.main import main

PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

N = DimVar("N", 1, 1025)


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Empty:
    @func
    def f(x: Tensor[(64, 64), "f32"]) -> Tensor[(64, 64), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            acc = x
            for i in range(5, 0):
                acc = acc * x
            return acc

    @func
    def g(x: Tensor[(64, 64), "f32"], y: Tensor[(N, 64), "f32"]) -> Tensor[(64, 64), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            acc = x
            for i in range(100, N):
                acc = acc + x
            return acc

    @func
    def h(x: Tensor[(64, 64), "f32"]) -> Tensor[(64, 64), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            acc = x
            for k in tile(-64, 16):
                acc = acc + x
            return acc
'''

CASES = [("Empty.f", []), ("Empty.g", ["--dim", "N=10"]), ("Empty.h", [])]


def test_trips_of_an_empty_range_are_zero():
    from tilefoundry.ir.expr import GridRegionExpr

    for start, extent, step, trips in ((5, 0, 1, 0), (0, -64, 16, 0), (100, 10, 1, 0), (0, 10, 3, 4)):
        loop = GridRegionExpr(None, (), (), (), start, extent, step, "range", None)
        assert loop.trips == trips == len(range(start, extent, step))


@pytest.mark.parametrize("selector,dims", CASES)
def test_empty_loop_adds_nothing_in_any_view(tmp_path, capsys, monkeypatch, selector, dims):
    source = tmp_path / "empty.py"
    source.write_text(PROGRAM)
    monkeypatch.setenv("TILEFOUNDRY_VALIDATE_JSON", "1")
    families = ["--compute-cost", "--memory", "--roofline", "--performance"]
    trace = tmp_path / "trace.json"
    code = main(["analyze", "--json", *families, *dims, "--trace", str(trace), f"{source}:{selector}"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert all(n >= 0 for n in numbers(report)), "a negative figure in the report"
    assert report["function_records"]["compute-cost"]["flops"] == {"f32": 0}
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert all(e.get("dur", 0) >= 0 for e in events)
    code = main(["analyze", "--top", "3", *dims, f"{source}:{selector}"])
    out, _ = capsys.readouterr()
    assert code == 0 and " -" not in out.split("\n", 1)[1]


@pytest.mark.parametrize("selector,dims", CASES)
def test_top_json_counts_zero_executions_in_an_empty_loop(tmp_path, capsys, monkeypatch, selector, dims):
    """Issue 41 item 4: a statement in a loop of no trips runs 0 times
    (analysis spec: the t-th execution for 0 <= t < trips; docs/views.md:
    runs is the product of the trips of the loops it reads), so the count is
    right and the analyze-top schema's `executions` minimum was wrong: it is 0."""
    source = tmp_path / "empty.py"
    source.write_text(PROGRAM)
    monkeypatch.setenv("TILEFOUNDRY_VALIDATE_JSON", "1")  # the document is checked against its schema
    code = main(["analyze", "--top", "3", "--json", *dims, f"{source}:{selector}"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    inside = [s for s in json.loads(out)["statements"] if s["statement"].startswith("v0 = ")]
    assert inside and all(s["executions"] == 0 and s["time_ns"] == 0 for s in inside)
