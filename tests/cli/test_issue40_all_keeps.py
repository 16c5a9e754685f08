"""Issue 40 item 6: `analyze --all` keeps what it can. Every family that can answer runs;
each one that cannot prints one `# refused FAMILY: reason` line (its dependants name the
family they needed), exit 0 while one answered, and the refusals are in the JSON report
(`refused`, analyze.schema.json)."""
from __future__ import annotations

import json

from tilefoundry.api import FAMILIES
from tilefoundry.cli.main import main
from tests.conftest import PROGRAMS

# every family but performance answers the i64 program (performance alone refuses it;
# a family added to api.FAMILIES answers too, unless it needs performance)
ANSWER = [f for f in FAMILIES if f != "performance"]

# the H200 states no throughput for i64 (an i32 -> i64 cast records i64 flops:
# companions §5.2), so performance refuses this program while the others answer
I64_CAST = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Widen:
    @func
    def f(x: Tensor[(8, 64), "i32"]) -> Tensor[(8, 64), "i64"]:
        return tf.cast(x, "i64")
'''
RATE = "binding=v0 op=Cast: target states no one-unit throughput for dtype 'i64' at 'cta'"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _source(tmp_path) -> str:
    path = tmp_path / "widen.py"
    path.write_text(I64_CAST, encoding="utf-8")
    return str(path)


def test_item6_performance_alone_refuses_the_program(tmp_path, capsys):
    source = _source(tmp_path)
    code, out, err = _run(capsys, "analyze", "--performance", source)
    assert (code, out) == (1, "")
    assert err == f"tilefoundry: error: performance: {source}:10:16: {RATE}\n"


def test_item6_all_runs_the_others_and_prints_one_refusal_line(tmp_path, capsys):
    source = _source(tmp_path)
    code, out, err = _run(capsys, "analyze", "--all", source)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1].startswith(f"# selection requested={','.join(ANSWER)} executed=")
    assert lines[2] == f"# refused performance: {source}:10:16: {RATE}"
    assert sum(line.startswith("# refused") for line in lines) == 1
    assert "# compute-cost flops=i64:512@512" in lines  # 8 x 64 elements, one flop each


def test_item6_all_refusals_are_in_the_json_report(tmp_path, capsys):
    source = _source(tmp_path)
    code, out, err = _run(capsys, "analyze", "--all", "--json", source)
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["requested"] == ANSWER
    assert report["refused"] == [{"family": "performance", "reason": f"{source}:10:16: {RATE}"}]


def test_item6_a_refused_dependency_names_each_dependant(capsys):
    """The CPU target publishes no memory hierarchy: memory refuses, and roofline and
    performance, which need it, each say so on their own line."""
    code, out, err = _run(capsys, "analyze", "--all", "--json", str(PROGRAMS / "p15_cpu_host_scale.py"))
    assert (code, err) == (0, "")
    refused = json.loads(out)["refused"]
    memory = "CpuTarget (cpu): no Facts projection for 'MemoryHierarchyFacts'"
    assert refused[0] == {"family": "memory", "reason": memory}
    assert {"family": "roofline", "reason": f"needs memory, which refused: {memory}"} in refused
    assert {"family": "performance", "reason": f"needs memory, which refused: {memory}"} in refused
    # one line per family that did not answer, in api.FAMILIES order
    ran = json.loads(out)["requested"]
    assert [r["family"] for r in refused] == [f for f in FAMILIES if f not in ran]


def test_item6_a_program_every_family_refuses_still_exits_1(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text(I64_CAST.replace('tf.cast(x, "i64")', 'tf.cast(x, "i64") + y'), encoding="utf-8")
    code, out, err = _run(capsys, "analyze", "--all", str(path))
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "bad.py:10:" in err
