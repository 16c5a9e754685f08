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


# ------------------------------------------------------------------ limits first, counts exact

COLLECTIVE = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

CTAS = 2**22


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", CTAS),))
class Huge:
    @func
    def f(x: Tensor[(CTAS, 16), "f32"]) -> Tensor[(CTAS, 16), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as grid:
            xs = tf.reshard(x, (CTAS @ grid.c, 1, 16), "smem")
            z = tf.reshard(xs * xs, (CTAS, 1, 16), "smem")
            return tf.reshard(z, (CTAS @ grid.c, 1, 16), "gmem")
'''


def test_collectives_states_the_cores_limit_before_any_table_is_built(tmp_path, capsys,
                                                                      monkeypatch):
    """Issue 22 item 8: a 2**22-CTA relayout used to build both sides' tables
    (40 s) before parse_tables refused 'cores'; the limit now comes first."""
    from tilefoundry.analysis.collectives import ownership

    def never(*args):
        raise AssertionError("a table was built before the cores limit was checked")
    monkeypatch.setattr(ownership, "_positions", never)
    source = tmp_path / "huge.py"
    source.write_text(COLLECTIVE)
    assert main(["analyze", "--collectives", str(source)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "reshard 'z': 'cores' is 4,194,304" in err[0], err
    assert "(limit 65,536 cores); raise the limit with TILEFOUNDRY_MAX_CORES=N" in err[0]


def _p25_up_to(tmp_path, high: str) -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "data" / "programs" /
            "p25_mesh_dims_binding.py").read_text()
    assert 'DimVar("tokens", 1, 1025)' in text
    (tmp_path / "p25.py").write_text(text.replace('DimVar("tokens", 1, 1025)',
                                                  f'DimVar("tokens", 1, {high})'))
    return str(tmp_path / "p25.py")


def test_a_mesh_of_2_63_positions_is_counted_exactly(tmp_path, capsys):
    """An extent of 2**63 (past len()'s sys.maxsize) was an OverflowError in the
    mesh check; p25's CTA count is ceildiv(tokens, 16), so tokens = 2**67 puts
    2**63 CTAs on its mesh: the work of the whole is 2**63 CTAs' shares."""
    source = _p25_up_to(tmp_path, "2**70")
    assert main(["analyze", "--compute-cost", "--dim", f"tokens={2 ** 67}", source]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("# compute-cost"))
    whole, per_cta = map(int, line.split("flops=f32:")[1].split()[0].split("@"))
    assert whole == per_cta * 2 ** 63


def test_a_2_63_cta_broadcast_is_timed_and_traced(tmp_path, capsys):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "data" / "programs" /
            "p22_broadcast_placement.py").read_text()
    (tmp_path / "b.py").write_text(text.replace("CTAS = 16\n", "CTAS = 2**63\n"))
    trace = tmp_path / "t.json"
    code = main(["analyze", "--performance", "--trace", str(trace), f"{tmp_path / 'b.py'}:ReplicatedCarry"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert f"waves={-(-2 ** 63 // 132)}" in out  # the H200's 132 SMs
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("args", {}).get("participants") == f"cta 0-{2 ** 63 - 1}" for e in events)


def test_run_counts_its_arguments_against_the_limit_before_drawing_them(tmp_path, capsys):
    """tokens = 2**67 gives x 2**63 x 16 x 64 elements: refused by the stated
    TILEFOUNDRY_MAX_EVAL_ELEMENTS, not numpy's ValueError or a MemoryError."""
    source = _p25_up_to(tmp_path, "2**70")
    assert main(["run", "--dim", f"tokens={2 ** 67}", source]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and f"hold {2 ** 63 * 16 * 64:,} elements (limit" in err[0], err
