"""Performance readiness (analysis §1.2, §2; companions §7.6 error texts).

"Performance readiness requires a positive ParallelCapacityFacts value for the
selected topology, rates stated for that same level, and one valid execution
placement for every occurrence that will take time." Each refusal is one line,
comes from the checker before any member of the closure writes, and does not
make the program invalid for compute-cost, memory or roofline.
"""
from __future__ import annotations

import importlib.util

import pytest

from tests.analysis.analysis_helpers import load
from tests.analysis.test_performance_spec import (
    MISMATCH, OUTSIDE, ROWS, STRUCTURAL_OUTSIDE, run, tuned, with_target,
)

pytest.importorskip("tilefoundry.analysis.performance")

from tilefoundry.analysis.analyze import analyze  # noqa: E402
from tilefoundry.analysis.check import check_program  # noqa: E402
from tilefoundry.analysis.compute_cost import ANALYZER as COST, ComputeCostMetadata  # noqa: E402
from tilefoundry.analysis.descriptor import Analyzer  # noqa: E402
from tilefoundry.analysis.performance import ANALYZER, PerformanceInputCheck  # noqa: E402
from tilefoundry.errors import AnalysisError  # noqa: E402
from tilefoundry.target import CudaTarget  # noqa: E402
from tilefoundry.target.facts import PerformanceServiceFacts  # noqa: E402

H200 = CudaTarget("nvidia.h200_sxm")

NO_TOPOLOGY = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class NoTopology:
    @func
    def f(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        return x * 2.0
"""

TWO_LEVELS = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"),
        topologies=(Topology("cta", 4), Topology("thread", 32)))
class TwoLevels:
    @func
    def f(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.reshard(x, (4 @ m.c, 256), "smem")
"""

SPECIAL = """
import dataclasses


class NoSpecialRate(CudaTarget):
    # a device document that states every rate but the special-function one
    def _performance_service(self, query):
        facts = super()._performance_service(query)
        return dataclasses.replace(
            facts, unit_ops=tuple(row for row in facts.unit_ops if row[0] != "special"))


@module(entry="f", target=NoSpecialRate("nvidia.b200_sxm"), topologies=(Topology("cta", 4),))
class Special:
    @func
    def f(x: Tensor[(4, 256), "f32", "smem"]) -> Tensor[(4, 256), "f32", "smem"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.exp(x)
"""

INTEGER_CAST = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class IntegerCast:
    @func
    def f(i: Tensor[(4, 256), "i32", "smem"]) -> Tensor[(4, 256), "i64", "smem"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.cast(i, "i64")
"""

LOCATED = ".py:"  # every per-call refusal names where: <file>:<line>:<col>: binding=... op=...


def refusal(tmp_path, body, selector, **kw) -> str:
    with pytest.raises(AnalysisError) as caught:
        run(tmp_path, body, selector, **kw)
    text = str(caught.value)
    assert len(text.splitlines()) == 1, text
    return text


# ---------------------------------------------------------------- the target half


def test_1_2_readiness_no_topology_level_text(tmp_path):
    """p02: a program with no topology has no execution placement to carry."""
    assert refusal(tmp_path, NO_TOPOLOGY, "NoTopology") == (
        "performance: no topology level was selected, so results cannot carry an execution "
        "placement")


def test_1_2_readiness_capacity_level_mismatch(tmp_path):
    assert refusal(tmp_path, TWO_LEVELS, "TwoLevels", level="thread") == (
        "performance: selected topology level 'thread', but the target's parallel capacity is "
        "stated for 'cta'")


def test_1_2_readiness_no_parallel_capacity_facts(tmp_path):
    from tilefoundry.target.facts import ParallelCapacityFacts

    assert refusal(tmp_path, ROWS, "Rows", target=tuned(capacity=None)) == (
        "performance: Tuned (cuda): no Facts projection for 'ParallelCapacityFacts'")
    assert ParallelCapacityFacts  # the aggregate itself refuses a non-positive value:
    with pytest.raises(ValueError):
        ParallelCapacityFacts("cta", 0)


def test_1_2_readiness_no_one_unit_rates(tmp_path):
    assert refusal(tmp_path, ROWS, "Rows", target=tuned(service=None)) == (
        "performance: Tuned (cuda): no Facts projection for 'PerformanceServiceFacts'")


def test_1_2_readiness_rates_stated_for_another_level(tmp_path):
    svc = H200.get_facts(PerformanceServiceFacts)
    thread = PerformanceServiceFacts(svc.unit_flops, svc.unit_ops, svc.unit_bandwidth, "thread")
    assert refusal(tmp_path, ROWS, "Rows", target=tuned(service=thread)) == (
        "performance: the target states its one-unit throughputs for 'thread', not for the "
        "selected topology level 'cta'")


# ---------------------------------------------------------------- the per-call half


def test_1_2_3_missing_service_rate_refuses_rather_than_pricing_zero(tmp_path):
    """A target that states no special-function envelope: exp's special work refuses."""
    text = refusal(tmp_path, SPECIAL, "Special")
    assert text.startswith("performance: ") and LOCATED in text
    assert text.endswith("op=Unary: target states no one-unit throughput for 'special' work at 'cta'")


def test_1_2_3_missing_dtype_rate_refuses(tmp_path):
    """An integer Cast records flops under i64 (companions §5.2); no i64 rate."""
    text = refusal(tmp_path, INTEGER_CAST, "IntegerCast")
    assert text.endswith("op=Cast: target states no one-unit throughput for dtype 'i64' at 'cta'")


def test_1_2_3_missing_bandwidth_refuses_timed_movement(tmp_path):
    svc = H200.get_facts(PerformanceServiceFacts)
    no_gmem = PerformanceServiceFacts(svc.unit_flops, svc.unit_ops, (), "cta")
    text = refusal(tmp_path, ROWS, "Rows", target=tuned(service=no_gmem))
    assert text.endswith("op=Reshard: target states no one-unit throughput for level 'gmem' at 'cta'")


def test_1_2_readiness_missing_execution_domain_text(tmp_path):
    text = refusal(tmp_path, OUTSIDE, "Outside")
    # the locator names the user's binding `y`, not the view's generated v0
    assert text.startswith("performance: ") and ".py:9:13: binding=y op=Binary: " in text
    assert text.endswith(
        ": has no cta execution domain; it was authored outside any cta Mesh, and where its "
        "result was laid out does not say where the work ran. Write it inside a Mesh of that level")


def test_1_2_readiness_mismatched_placement_text(tmp_path):
    text = refusal(tmp_path, MISMATCH, "Mismatch")
    assert text.endswith(
        "op=Reshard: runs on cta positions [0, 1] but its result is laid out on [0, 1, 2, 3]; a "
        "result cannot be placed where the work that made it never ran")


def test_1_2_readiness_untimed_occurrence_needs_no_placement(tmp_path):
    run(tmp_path, STRUCTURAL_OUTSIDE, "StructuralOutside")


# ---------------------------------------------------------------- composition (§2)


def test_2_readiness_fails_before_any_dependency_writes(tmp_path):
    """compute-cost is replaced by one that fails if it ever runs: the refusal
    is the checker's, so nothing in the closure ran (nor wrote)."""
    def boom(function, ctx):
        raise RuntimeError("compute-cost ran")

    target = type("Spy", (CudaTarget,), {"analyzer_paths": {
        "compute-cost": Analyzer("compute-cost", boom, produces=(ComputeCostMetadata,))}})
    with pytest.raises(AnalysisError, match="has no cta execution domain"):
        run(tmp_path, OUTSIDE, "Outside", target=target("nvidia.h200_sxm"))
    with pytest.raises(RuntimeError, match="compute-cost ran"):  # the spy is live
        run(tmp_path, ROWS, "Rows", target=target("nvidia.h200_sxm"))


@pytest.mark.parametrize("body,selector", [(NO_TOPOLOGY, "NoTopology"), (OUTSIDE, "Outside"),
                                           (MISMATCH, "Mismatch"), (SPECIAL, "Special")])
def test_2_failing_performance_readiness_leaves_other_families_valid(tmp_path, body, selector):
    families = ["compute-cost", "memory"]
    if importlib.util.find_spec("tilefoundry.analysis.roofline") is not None:
        families.append("roofline")
    result = run(tmp_path, body, selector, analysis=families)
    assert result.executed[:2] == ("compute-cost", "memory")
    with pytest.raises(AnalysisError, match="^performance: "):
        run(tmp_path, body, selector, analysis=families + ["performance"])


def test_2_check_program_states_performance_readiness(tmp_path):
    """The shared gate asks the checker the same question analyze does, and a
    checker attaches nothing (the gate itself refuses one that does)."""
    module, function = load(tmp_path, OUTSIDE, "Outside")
    with pytest.raises(AnalysisError, match="has no cta execution domain"):
        check_program(module, function, level="cta", analyzers=(COST, ANALYZER))
    module, function = load(tmp_path, ROWS, "Rows")
    view = check_program(module, function, level="cta", analyzers=(COST, ANALYZER))
    from tilefoundry.analysis.check import iter_nodes

    assert all(not node._metadata.get(cls) for node in iter_nodes(view.body)
               for cls in ANALYZER.produces)


def test_2_2_checker_is_the_descriptor_input_checker():
    assert isinstance(ANALYZER.input_checker, PerformanceInputCheck)
    for method in ("check_target", "check_call", "finish"):
        assert callable(getattr(ANALYZER.input_checker, method))


def test_2_readiness_state_is_not_carried_across_calls(tmp_path):
    """The checker is module-level: a refused run leaves nothing behind that
    changes the next one."""
    with pytest.raises(AnalysisError):
        run(tmp_path, SPECIAL, "Special")
    module, function = load(tmp_path, ROWS, "Rows")
    with_target(module, H200)
    analyze(module, function, analysis="performance")
