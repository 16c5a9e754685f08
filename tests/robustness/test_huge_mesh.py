"""Issue 22 item 8: a mesh of 2**25 CTAs is timed (and traced) from its
positions in closed form, never by enumerating them: it used to take a minute
and 3 GB before the performance family answered."""
from __future__ import annotations

import json

from tilefoundry.cli.main import main

PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

CTAS = 2**25


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", CTAS),))
class Huge:
    @func
    def f(x: Tensor[(CTAS, 16), "f32"]) -> Tensor[(CTAS, 16), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as grid:
            xs = tf.reshard(x, (CTAS @ grid.c, 16), "smem")
            y = xs * xs
            return tf.reshard(y, (CTAS @ grid.c, 16), "gmem")
'''


def test_a_2_25_cta_mesh_is_timed_and_traced(tmp_path, capsys):
    from tilefoundry.analysis.performance.frontier import Frontier, runs_of

    source = tmp_path / "huge.py"
    source.write_text(PROGRAM)
    trace = tmp_path / "t.json"
    code = main(["analyze", "--performance", "--trace", str(trace), str(source)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "waves=254201" in out  # 2**25 CTAs over the H200's 132 SMs
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("args", {}).get("participants") == "cta 0-33554431" for e in events)
    frontier = Frontier()
    frontier.occupy(runs_of(range(0, 8)), 5)
    frontier.occupy(runs_of({2, 3}), 9)
    assert (frontier.latest([(0, 2)]), frontier.latest([(3, 4)]), frontier.latest([(8, 9)])) == (5, 9, 0)
