"""memory (analysis §1.2.2): MUSTs not pinned by the golden programs."""
from __future__ import annotations

import pytest

from tests.analysis.analysis_helpers import HEADER, load

pytest.importorskip("tilefoundry.analysis.memory")

VIEWS = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Views:
    @func
    def f(x: Tensor[(8, 64), "f32"]) -> Tensor[(64, 8), "f32"]:
        y = tf.reshape(x, (64, 8))
        z = tf.transpose(x, (1, 0))
        return y + z
"""

EMPTY = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class Empty:
    @func
    def f(x: Tensor[(8,), "f32", "rmem"]) -> Tensor[(8,), "f32", "rmem"]:
        return x
"""


def _run(tmp_path, body, selector, analysis="memory"):
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.render.report import render_analysis

    module, function = load(tmp_path, body, selector)
    result = analyze(module, function, analysis=analysis)
    return result, render_analysis(result)


def test_1_2_2_reshape_and_transpose_get_no_lifetime_and_parameters_persist(tmp_path):
    from tilefoundry.analysis.memory import MemoryMetadata

    result, _ = _run(tmp_path, VIEWS, "Views")
    memory = result.function.get_metadata(MemoryMetadata)
    names = [lt.binding for lt in memory.lifetimes]
    assert names[0] == "x" and memory.lifetimes[0].persistent
    assert len(names) == 2  # x and the add; neither view allocates
    last = memory.lifetimes[-1].last_used_at
    assert memory.lifetimes[0].last_used_at == last


def test_1_2_2_transpose_still_moves_its_bytes_reshape_moves_nothing(tmp_path):
    from tilefoundry.analysis.memory import TrafficMetadata
    from tilefoundry.ir.expr import Call

    result, _ = _run(tmp_path, VIEWS, "Views")
    from tilefoundry.analysis.check import iter_nodes

    by_op = {type(n.op).__name__: n.get_metadata(TrafficMetadata)
             for n in iter_nodes(result.function.body) if isinstance(n, Call)}
    assert by_op["Reshape"].whole == ()
    assert dict(by_op["Transpose"].whole)["gmem"].read == 2048


def test_1_2_2_two_operands_naming_one_value_keep_distinct_positions(tmp_path):
    from tilefoundry.analysis.memory import TrafficMetadata

    src = VIEWS.replace("return y + z", "return z + z")
    result, _ = _run(tmp_path, src, "Views")
    add = result.function.body
    ops = add.get_metadata(TrafficMetadata).operands
    assert len(ops) == 3 and ops[0] == ops[1] and ops[0].read == 2048


def test_1_2_2_function_traffic_has_no_operands(tmp_path):
    from tilefoundry.analysis.memory import TrafficMetadata

    result, rendering = _run(tmp_path, VIEWS, "Views")
    assert result.function.get_metadata(TrafficMetadata).operands == ()
    assert "operands" not in rendering.report["function_records"]["traffic"]


def test_1_2_2_empty_footprint_prints_the_bare_family_spec_over_reference(tmp_path):
    """programs/README §6: the reference prints ``peak-footprint=``."""
    from tilefoundry.analysis.memory import MemoryMetadata
    from tilefoundry.render.forms import form_of

    assert form_of(MemoryMetadata).summary(MemoryMetadata(), {}) == ["peak-footprint"]


def test_1_2_2_no_level_means_no_allocation(tmp_path):
    from tilefoundry.analysis.memory import MemoryMetadata

    result, _ = _run(tmp_path, EMPTY.replace('"rmem"', '"gmem"'), "Empty")
    assert result.function.get_metadata(MemoryMetadata).allocation is None


def test_1_2_2_allocation_fits_at_once_without_searching():
    from tilefoundry.analysis.memory.allocation import Buffer, solve_packing

    result = solve_packing([Buffer(0, 2, 4), Buffer(1, 3, 4)], 8)
    assert (result.status, result.searched) == ("optimal", False)


def test_1_2_2_allocation_peak_over_capacity_refused_without_searching():
    from tilefoundry.analysis.memory.allocation import Buffer, solve_packing

    result = solve_packing([Buffer(0, 2, 5), Buffer(1, 3, 5)], 8)
    assert (result.status, result.searched) == ("infeasible", False)


def test_1_2_2_allocation_searches_when_buffers_reuse_bytes():
    from tilefoundry.analysis.memory.allocation import Buffer, solve_packing

    buffers = [Buffer(0, 2, 4), Buffer(2, 4, 4), Buffer(0, 4, 4)]
    result = solve_packing(buffers, 8)
    assert result.status == "optimal" and result.searched
    a, b, c = result.offsets
    assert {a, c} == {0, 4} and {b, c} == {0, 4}


def test_1_2_2_cpu_target_refused_before_any_record(tmp_path):
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.errors import AnalysisError

    src = EMPTY.replace('target=CudaTarget("nvidia.h200_sxm")', "target=CpuTarget()")
    module, function = load(tmp_path, src, "Empty")
    with pytest.raises(AnalysisError, match="^memory: CpuTarget \\(cpu\\): no Facts projection "
                                            "for 'MemoryHierarchyFacts'$"):
        analyze(module, function, analysis=["compute-cost", "memory"])


def test_1_2_2_cache_pressure_statuses():
    from tilefoundry.analysis.memory.loop_footprints import cache_pressure
    from tilefoundry.analysis.memory.records import BufferFootprint, LoopFootprintMetadata
    from tilefoundry.target import CudaTarget
    from tilefoundry.target.facts import MemoryHierarchyFacts

    facts = CudaTarget("nvidia.h200_sxm").get_facts(MemoryHierarchyFacts)
    row = BufferFootprint("a", "gmem", 10, 60_000_000, 10)
    assert cache_pressure(LoopFootprintMetadata((row,), True), facts, ())[0]["status"] == "exceeds"
    small = BufferFootprint("a", "gmem", 10, 100, 10)
    assert cache_pressure(LoopFootprintMetadata((small,), False), facts, ())[0]["status"] == "lower-bound"
    assert cache_pressure(LoopFootprintMetadata((small,), True), facts, ())[0] == {
        "cache_level": "l2", "backing_level": "gmem", "device_bytes": 100,
        "capacity_bytes": 50000000, "status": "fits"}
    dropped = BufferFootprint("a", "gmem", 10, 5, 10)  # device_bytes < bytes
    assert cache_pressure(LoopFootprintMetadata((dropped,), True), facts, ()) == []


_ = HEADER
