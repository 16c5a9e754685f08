"""performance (analysis §1.2.4, plus the performance rules of §1.2.3 and the
rendering of companions §7.1–§7.5): one test per MUST, named after its section.

Every expected interval is derived by hand from the H200 one-unit rates
(companions §6.5): f32 507575757575 FLOP/s, special 31723484848 op/s,
predicate 126893939394 op/s, gmem 36363636363 B/s per CTA. So 1024 gmem bytes
per CTA take ceil(1024e9 / 36363636363) = 29 ns, 256 special results
9 ns, 256 f32 flops 1 ns, 256 predicate results 3 ns.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pytest

from tests.analysis.analysis_helpers import load

pytest.importorskip("tilefoundry.analysis.performance")

from tilefoundry.analysis.analyze import analyze  # noqa: E402
from tilefoundry.analysis.compute_cost import ComputeCostMetadata  # noqa: E402
from tilefoundry.analysis.descriptor import Analyzer  # noqa: E402
from tilefoundry.analysis.memory.records import MemoryMetadata, TrafficMetadata  # noqa: E402
from tilefoundry.analysis.performance import (  # noqa: E402
    ANALYZER, PerformanceMetadata, PerformanceSummaryMetadata, TimelineMetadata,
)
from tilefoundry.errors import AnalysisError  # noqa: E402
from tilefoundry.ir.expr import Call  # noqa: E402
from tilefoundry.ir.metadata import BindingMetadata, IRMetadata  # noqa: E402
from tilefoundry.render.report import render_analysis  # noqa: E402
from tilefoundry.target import CudaTarget  # noqa: E402
from tilefoundry.target.facts import (  # noqa: E402
    MemoryHierarchyFacts, ParallelCapacityFacts, PerformanceServiceFacts,
)

H200 = CudaTarget("nvidia.h200_sxm")

# ---------------------------------------------------------------- programs

# 4 CTAs, one row each: [0,29) gmem read, [29,38) special, [38,39) f32, [39,68) gmem write
ROWS = """
@module(entry="rows", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Rows:
    @func
    def rows(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            xs = tf.reshard(x, (4 @ m.c, 256), "smem")
            e = tf.exp(xs)
            s = e + e
            return tf.reshard(s, (4 @ m.c, 256), "gmem")
"""

# disjoint slices overlap; a partially intersecting slice serializes. Inline
# (printer) order is the postorder of the returned expression: the g[1:3]
# branch is reached first, then g[:2] and g[2:]
SLICES = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Slices:
    @func
    def f(x: Tensor[(4, 256), "f32"], y: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as g:
            with g[1:3] as mid:
                c = tf.exp(tf.reshard(y, (4 @ mid.c, 256), "gmem"))
            with g[:2] as left:
                a = tf.exp(tf.reshard(x, (4 @ left.c, 256), "gmem"))
            with g[2:] as right:
                b = tf.exp(tf.reshard(y, (4 @ right.c, 256), "gmem"))
            whole = tf.reshard(a, (4, 256), "gmem") + tf.reshard(b, (4, 256), "gmem")
            return tf.reshard(c, (4, 256), "gmem") + whole
"""

# a loop: the invariant reshard of w is one occurrence before it ([0,29)); the
# body (29 + 1 + 1 ns) is solved once from the loop's start 29; 4 trips; the
# consumer of the carried result waits for the full span 29 + 4 * 31 = 153
LOOP = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Loop:
    @func
    def f(x: Tensor[(4, 1024), "f32"], w: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            acc = tf.zeros(Tensor[(4, 256), "f32", (4 @ m.c, 256), "smem"])
            for k in tile(1024, 256):
                ws = tf.reshard(w, (4 @ m.c, 256), "smem")
                xs = tf.reshard(x[:, k], (4 @ m.c, 256), "smem")
                acc = acc + xs * ws
            return tf.reshard(acc, (4 @ m.c, 256), "gmem")
"""

# work authored outside any Mesh: the mul moves gmem bytes and has flops
OUTSIDE = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Outside:
    @func
    def f(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        y = x * 2.0
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.reshard(y, (4 @ m.c, 256), "smem")
"""

# a structural occurrence (a reshape: nothing to time) outside any Mesh
STRUCTURAL_OUTSIDE = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class StructuralOutside:
    @func
    def f(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        y = tf.reshape(x, (4, 256))
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.reshard(y, (4 @ m.c, 256), "smem")
"""

# work in a 2-CTA slice whose result is laid out on all 4 CTAs
MISMATCH = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Mismatch:
    @func
    def f(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as g:
            with g[:2] as left:
                y = tf.reshard(x, (4 @ g.c, 256), "smem")
            return y
"""

# no work this model times: the summary states waves and no predicted-ns
NOTHING = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Nothing:
    @func
    def f(x: Tensor[(4, 256), "f32"]) -> Tensor[(256, 4), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.reshape(x, (256, 4))
"""

# a comparison (predicate service, no flops) on unsharded smem values in a mesh
PREDICATE = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Predicate:
    @func
    def f(x: Tensor[(4, 256), "f32", "smem"]) -> Tensor[(4, 256), "bool", "smem"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return x < x
"""


# ---------------------------------------------------------------- helpers


@dataclass(frozen=True, repr=False)
class Tuned(CudaTarget):
    """An H200 whose listed Facts aggregates are replaced (None: not projected)."""

    overrides: tuple = ()

    def get_facts(self, facts_type, query=None):
        for kind, value in self.overrides:
            if kind is facts_type:
                if value is None:
                    from tilefoundry.target.base import NoFactsProjectionError

                    raise NoFactsProjectionError(
                        f"Tuned (cuda): no Facts projection for '{facts_type.__name__}'")
                return value
        return super().get_facts(facts_type, query)


def tuned(**overrides) -> Tuned:
    table = {"capacity": ParallelCapacityFacts, "service": PerformanceServiceFacts,
             "memory": MemoryHierarchyFacts}
    return Tuned("nvidia.h200_sxm", tuple((table[k], v) for k, v in overrides.items()))


def with_target(module, target):
    object.__setattr__(module, "target", target)
    return module


def run(tmp_path, body, selector, analysis="performance", target=None, level=None):
    module, function = load(tmp_path, body, selector)
    if target is not None:
        with_target(module, target)
    return analyze(module, function, analysis=analysis, level=level)


def intervals(result) -> dict:
    """binding -> (start, end, trips, stride) of every PerformanceMetadata."""
    from tilefoundry.analysis.check import iter_nodes

    found = {}
    for node in iter_nodes(result.function.body):
        record = node.get_metadata(PerformanceMetadata)
        if record is not None:
            t = record.timeline
            found[node.get_metadata(BindingMetadata).name] = (t.start_ns, t.end_ns, t.trips, t.stride_ns)
    return found


def summary(result) -> PerformanceSummaryMetadata:
    return result.function.get_metadata(PerformanceSummaryMetadata)


def by_op(result) -> list:
    """(op class, interval) in postorder for every timed call."""
    from tilefoundry.analysis.check import iter_nodes

    found = []
    for node in iter_nodes(result.function.body):
        record = node.get_metadata(PerformanceMetadata)
        if isinstance(node, Call) and record is not None:
            t = record.timeline
            found.append((node.op.class_name, (t.start_ns, t.end_ns, t.trips, t.stride_ns)))
    return found


# ---------------------------------------------------------------- records (§1.2.4)


def test_1_2_4_timeline_is_a_value_not_a_record():
    assert not issubclass(TimelineMetadata, IRMetadata)
    assert [f.name for f in dataclasses.fields(TimelineMetadata)] == \
        ["start_ns", "end_ns", "trips", "stride_ns"]
    assert TimelineMetadata() == TimelineMetadata(0, 0, 1, 0)
    with pytest.raises(AnalysisError):
        Analyzer("x", lambda f, c: None, produces=(TimelineMetadata,))


def test_1_2_4_records_and_descriptor():
    assert [f.name for f in dataclasses.fields(PerformanceMetadata)] == ["timeline"]
    assert [f.name for f in dataclasses.fields(PerformanceSummaryMetadata)] == ["timeline", "waves"]
    assert ANALYZER.selector == "performance"
    assert ANALYZER.requires == ("compute-cost", "memory")
    assert ANALYZER.produces == (PerformanceMetadata, PerformanceSummaryMetadata)
    assert H200.get_analyzer("performance") is ANALYZER


def test_1_2_4_every_call_with_a_modeled_duration_gets_one_interval(tmp_path):
    result = run(tmp_path, ROWS, "Rows")
    assert by_op(result) == [("Reshard", (0, 29, 1, 0)), ("Unary", (29, 38, 1, 0)),
                             ("Binary", (38, 39, 1, 0)), ("Reshard", (39, 68, 1, 0))]
    assert summary(result) == PerformanceSummaryMetadata(TimelineMetadata(0, 68, 1, 0), 1)
    assert result.executed == ("compute-cost", "memory", "performance")
    assert result.metadata_types[-2:] == (PerformanceMetadata, PerformanceSummaryMetadata)


def test_1_2_4_start_after_producers_and_after_participants_free(tmp_path):
    # every occurrence of ROWS is on the same 4 CTAs and reads the previous one
    spans = [iv for _, iv in by_op(run(tmp_path, ROWS, "Rows"))]
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_1_2_4_local_duration_divides_per_unit_quantities_by_one_unit_rates(tmp_path):
    """§1.2.3: flops_per_unit / unit_flops, service_per_unit / unit_ops, the
    bandwidth_level per_unit bytes / unit_bandwidth; exact integer ceilings."""
    result = run(tmp_path, ROWS, "Rows")
    svc = H200.get_facts(PerformanceServiceFacts)
    for node, (start, end, _, _) in zip([n for n in _calls(result) if n.get_metadata(PerformanceMetadata)],
                                        [iv for _, iv in by_op(result)]):
        cost = node.get_metadata(ComputeCostMetadata)
        moved = sum(tb.read + tb.write for lvl, tb in node.get_metadata(TrafficMetadata).per_unit
                    if lvl == "gmem")
        compute = sum(-(-v * 10**9 // svc.flops(k)) for k, v in cost.flops_per_unit) + \
            sum(-(-v * 10**9 // svc.ops(k)) for k, v in cost.service_per_unit)
        memory = -(-moved * 10**9 // svc.bandwidth("gmem"))
        assert end - start == max(compute, memory)
    # companions §6.5's observation: 1024 B -> 29 ns, 256 special -> 9 ns, 256 f32 -> 1 ns
    assert [e - s for _, (s, e, _, _) in by_op(result)] == [29, 9, 1, 29]


def _calls(result):
    from tilefoundry.analysis.check import iter_nodes

    return [n for n in iter_nodes(result.function.body) if isinstance(n, Call)]


def test_1_2_4_compute_and_movement_overlap_within_one_occurrence(tmp_path):
    """§1.2.3: the duration is the greater side, not the sum: the reshard to
    gmem also reads smem (untimed) and the exp's smem traffic adds nothing."""
    result = run(tmp_path, ROWS, "Rows")
    assert [e - s for _, (s, e, _, _) in by_op(result)][1] == 9  # special only


def test_1_2_3_traffic_without_a_one_unit_bandwidth_stays_visible_and_untimed(tmp_path):
    result = run(tmp_path, ROWS, "Rows")
    exp = [n for n in _calls(result) if n.op.class_name == "Unary"][0]
    assert dict(exp.get_metadata(TrafficMetadata).per_unit)["smem"].read == 1024
    assert exp.get_metadata(PerformanceMetadata).timeline.end_ns - \
        exp.get_metadata(PerformanceMetadata).timeline.start_ns == 9


def test_1_2_3_a_predicate_is_service_priced_at_its_own_rate(tmp_path):
    result = run(tmp_path, PREDICATE, "Predicate")
    (call,) = [n for n in _calls(result) if n.get_metadata(PerformanceMetadata)]
    cost = call.get_metadata(ComputeCostMetadata)
    assert cost.flops_per_unit == () and cost.service_per_unit == (("predicate", 1024),)
    # unsharded in a 4-CTA mesh: every CTA performs all 1024 comparisons
    assert by_op(result) == [("Binary", (0, 9, 1, 0))]  # ceil(1024e9 / 126893939394)


def test_1_2_4_structural_occurrence_gets_no_record_and_keeps_its_movement(tmp_path):
    result = run(tmp_path, NOTHING, "Nothing")
    (reshape,) = _calls(result)
    assert reshape.get_metadata(PerformanceMetadata) is None
    assert reshape.get_metadata(TrafficMetadata) is not None
    assert summary(result) == PerformanceSummaryMetadata(TimelineMetadata(0, 0, 1, 0), 1)


def test_1_2_4_structural_occurrence_needs_no_placement_and_passes_precedence(tmp_path):
    result = run(tmp_path, STRUCTURAL_OUTSIDE, "StructuralOutside")
    reshape, reshard = _calls(result)
    assert reshape.get_metadata(PerformanceMetadata) is None
    assert by_op(result) == [("Reshard", (0, 29, 1, 0))]


def test_1_2_4_a_result_without_shard_layout_does_not_unplace(tmp_path):
    result = run(tmp_path, PREDICATE, "Predicate")
    (call,) = _calls(result)
    from tilefoundry.ir.tensor_type import tensor_leaves

    assert all(leaf.shard is None for leaf in tensor_leaves(call.type))
    assert call.get_metadata(PerformanceMetadata) is not None


def test_1_2_4_inputs_do_not_supply_placement(tmp_path):
    """The mul outside any Mesh reads an unplaced parameter and feeds a placed
    reshard: neither its operand nor its consumer places it."""
    with pytest.raises(AnalysisError, match="has no cta execution domain"):
        run(tmp_path, OUTSIDE, "Outside")


def test_1_2_4_participants_are_the_exact_mesh_image(tmp_path):
    """g[1:3] runs first; g[:2] and g[2:] each intersect it partially, so each
    whole occurrence waits for it, and being disjoint they overlap each other."""
    result = run(tmp_path, SLICES, "Slices")
    exps = [iv for op, iv in by_op(result) if op == "Unary"]
    assert exps == [(0, 113, 1, 0), (113, 226, 1, 0), (113, 226, 1, 0)]


def test_1_2_4_ssa_consumer_waits_for_producers_on_disjoint_participants(tmp_path):
    """The adds run on all 4 CTAs (a Broadcast result still names its Mesh)
    and read the slices' results: the first starts when both branches end."""
    result = run(tmp_path, SLICES, "Slices")
    adds = [iv for op, iv in by_op(result) if op == "Binary"]
    assert adds[0][0] == 226 and adds[1][0] == adds[0][1]


def test_1_2_4_loop_is_one_structured_node(tmp_path):
    result = run(tmp_path, LOOP, "Loop")
    assert by_op(result) == [
        ("Reshard", (29, 58, 4, 31)),   # x[:, k] -> smem, from the loop's start 29
        ("Reshard", (0, 29, 1, 0)),     # w -> smem: loop-invariant, one occurrence before
        ("Binary", (58, 59, 4, 31)),
        ("Binary", (59, 60, 4, 31)),
        ("Reshard", (153, 182, 1, 0)),  # waits for the loop's full span 29 + 4 * 31
    ]
    assert summary(result).timeline == TimelineMetadata(0, 182, 1, 0)


def test_1_2_4_ordering_is_inline_order_not_a_reorder(tmp_path):
    """Independent work on shared participants is laid out as written: the
    g[1:3] exp, authored first and first in inline order, is not moved after
    the two branches it shares CTAs with although it reads nothing of them;
    nor does the ROWS chain change order."""
    result = run(tmp_path, SLICES, "Slices")
    assert [iv for op, iv in by_op(result) if op == "Unary"][0][:2] == (0, 113)


def test_1_2_4_waves_is_ceil_of_extent_over_parallel_units(tmp_path):
    plain = run(tmp_path, ROWS, "Rows")
    three = run(tmp_path, ROWS, "Rows", target=tuned(capacity=ParallelCapacityFacts("cta", 3)))
    one = run(tmp_path, ROWS, "Rows", target=tuned(capacity=ParallelCapacityFacts("cta", 1)))
    assert summary(plain).waves == 1  # ceil(4 / 132)
    assert summary(three) == PerformanceSummaryMetadata(TimelineMetadata(0, 136, 1, 0), 2)
    assert summary(one) == PerformanceSummaryMetadata(TimelineMetadata(0, 272, 1, 0), 4)


def test_1_2_4_parallel_units_never_enter_rates_or_the_local_layout(tmp_path):
    plain = run(tmp_path, ROWS, "Rows")
    one = run(tmp_path, ROWS, "Rows", target=tuned(capacity=ParallelCapacityFacts("cta", 1)))
    assert intervals(plain) == intervals(one)


def test_1_2_4_no_memory_allocation_fails(tmp_path):
    from tilefoundry.analysis.memory import ANALYZER as MEMORY

    def no_allocation(function, ctx):
        MEMORY.run(function, ctx)
        m = function.get_metadata(MemoryMetadata)
        function.with_metadata(MemoryMetadata(m.footprint, m.lifetimes, m.advisories, None))

    stub = Analyzer("memory", no_allocation, produces=MEMORY.produces,
                    input_checker=MEMORY.input_checker)
    target = type("NoAllocation", (CudaTarget,), {"analyzer_paths": {"memory": stub}})
    with pytest.raises(AnalysisError, match="no time can be reported") as caught:
        run(tmp_path, ROWS, "Rows", target=target("nvidia.h200_sxm"))
    assert len(str(caught.value).splitlines()) == 1


def test_1_2_4_capacity_changes_whether_never_which(tmp_path):
    facts = H200.get_facts(MemoryHierarchyFacts)
    bigger = dataclasses.replace(facts, explicit_levels=tuple(
        dataclasses.replace(lvl, capacity_bytes=lvl.capacity_bytes * 2) if lvl.name == "smem" else lvl
        for lvl in facts.explicit_levels))
    plain = run(tmp_path, LOOP, "Loop")
    roomy = run(tmp_path, LOOP, "Loop", target=tuned(memory=bigger))
    assert intervals(plain) == intervals(roomy)


def test_1_2_4_reads_dependency_records_rather_than_recomputing(tmp_path):
    """A compute-cost that states 1000x the per-unit flops times the f32 add
    at ceil(256000e9 / 507575757575) = 505 ns: the record is what is read."""
    from tilefoundry.analysis.compute_cost import ANALYZER as COST

    def inflated(function, ctx):
        COST.run(function, ctx)
        for node in _calls_of(function):
            r = node.get_metadata(ComputeCostMetadata)
            node.with_metadata(dataclasses.replace(
                r, flops_per_unit=tuple((k, v * 1000) for k, v in r.flops_per_unit)))

    stub = Analyzer("compute-cost", inflated, produces=COST.produces)
    target = type("Inflated", (CudaTarget,), {"analyzer_paths": {"compute-cost": stub}})
    result = run(tmp_path, ROWS, "Rows", target=target("nvidia.h200_sxm"))
    assert [e - s for _, (s, e, _, _) in by_op(result)] == [29, 9, 505, 29]


def _calls_of(function):
    from tilefoundry.analysis.check import iter_nodes

    return [n for n in iter_nodes(function.body) if isinstance(n, Call)]


def test_1_2_4_rerun_recomputes(tmp_path):
    module, function = load(tmp_path, ROWS, "Rows")
    first = analyze(module, function, analysis="performance")
    second = analyze(module, function, analysis="performance")
    assert intervals(first) == intervals(second) and first.function is not second.function


# ---------------------------------------------------------------- rendering (companions §7)


def test_1_2_4_comment_single_and_repeated_intervals(tmp_path):
    text = render_analysis(run(tmp_path, LOOP, "Loop")).program
    parts = [line.split("; ")[-1] for line in text.splitlines() if "performance=" in line]
    assert parts == ["performance=[31t+29,31t+58)*4", "performance=[0,29)",
                     "performance=[31t+58,31t+59)*4", "performance=[31t+59,31t+60)*4",
                     "performance=[153,182)"]


def test_1_2_4_summary_line_states_root_predicted_ns_and_waves(tmp_path):
    rendering = render_analysis(run(tmp_path, ROWS, "Rows"))
    assert rendering.summary[-1] == "# performance root=Rows::rows predicted-ns=68 waves=1"
    nothing = render_analysis(run(tmp_path, NOTHING, "Nothing"))
    assert nothing.summary[-1] == "# performance root=Nothing::f waves=1"


def test_1_2_4_json_projections(tmp_path):
    report = render_analysis(run(tmp_path, LOOP, "Loop")).report
    assert report["function_records"]["performance"] == {
        "timeline": {"start_ns": 0, "end_ns": 182, "trips": 1, "stride_ns": 0}, "waves": 1}
    rows = [c["performance"] for c in report["calls"]]
    assert rows[0] == {"timeline": {"start_ns": 29, "end_ns": 58, "trips": 4, "stride_ns": 31}}
    assert all(set(r) == {"timeline"} for r in rows)
    json.dumps(report)


def test_1_2_4_json_calls_without_duration_have_no_performance_entry(tmp_path):
    report = render_analysis(run(tmp_path, LOOP, "Loop", analysis=["compute-cost", "performance"])).report
    untimed = [c for c in report["calls"] if "performance" not in c]
    assert untimed and all("compute-cost" in c for c in untimed)
    assert "memory" not in report["function_records"]  # requested only: a dependency stays on the IR


NESTED = """
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


def test_1_2_4_nested_loop_is_a_structured_node_inside_its_parent_body(tmp_path):
    """The inner loop (4 trips of 29 + 1 ns) spans 120 ns of the outer body;
    the outer body's stride is 121; an inner occurrence states the loop it sits
    in (its first outer execution), so its trips and stride are the inner ones."""
    result = run(tmp_path, NESTED, "Nested")
    assert by_op(result) == [("Reshard", (0, 29, 4, 30)), ("Binary", (29, 30, 4, 30)),
                             ("Binary", (120, 121, 2, 121)), ("Reshard", (242, 271, 1, 0))]


def test_1_2_4_cli_performance_flag(tmp_path):
    import subprocess
    import sys

    from tests.analysis.analysis_helpers import write

    path = write(tmp_path, ROWS)
    proc = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--performance",
                           f"{path}:Rows"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[1] == "# selection requested=performance executed=compute-cost,memory,performance"
    assert lines[2] == "# performance root=Rows::rows predicted-ns=68 waves=1"
    proc = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--performance",
                           "--json", f"{path}:Rows"], capture_output=True, text=True)
    assert json.loads(proc.stdout)["function_records"] == {"performance": {
        "timeline": {"start_ns": 0, "end_ns": 68, "trips": 1, "stride_ns": 0}, "waves": 1}}
