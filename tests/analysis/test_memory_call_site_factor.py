"""memory multiplies a call's traffic by the same recomputation factor as
compute-cost (analysis §1.2.1, §1.2.2): a Function called inside a loop reruns
its whole inlined body every trip, the statements of it that read no
loop-variant value included."""
from __future__ import annotations

from tests.analysis.analysis_helpers import load
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.memory.records import LoopFootprintMetadata, TrafficMetadata
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.ir.expr import GridRegionExpr

PROGRAM = """
@module(entry="run", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Helper:
    @func
    def scaled(a: Tensor[(8, 8), "f32"], b: Tensor[(8, 8), "f32"]) -> Tensor[(8, 8), "f32"]:
        t = b * 2.0
        return a + t

    @func
    def run(x: Tensor[(8, 8), "f32"], y: Tensor[(8, 8), "f32"]) -> Tensor[(8, 8), "f32"]:
        acc = x
        for k in range(4):
            acc = scaled(acc, y)
        return acc
"""


def _analysed(tmp_path):
    module, function = load(tmp_path, PROGRAM, "Helper")
    return analyze(module, function, analysis=("memory", "compute-cost"))


def test_memory_1_2_2_function_call_factor_covers_its_callee(tmp_path):
    """t = b * 2.0 reads only y, but its call scaled(acc, y) reads the carried
    acc, so it runs 4 times: it reads y (256 B) and writes t (256 B) in gmem and
    reads the literal (4 B) in rmem; a + t reads 512 B and writes 256 B. Whole
    function: gmem read 4 x (256 + 512) = 3072, write 4 x (256 + 256) = 2048,
    rmem read 4 x 4 = 16 (counted once, the literal's statement would give
    2304, 1280 and 4)."""
    result = _analysed(tmp_path)
    whole = dict(result.function.get_metadata(TrafficMetadata).whole)
    assert (whole["gmem"].read, whole["gmem"].write) == (3072, 2048)
    assert whole["rmem"].read == 16
    # the same factor as compute-cost's: (64 + 64) flops x 4 trips
    assert dict(result.function.get_metadata(ComputeCostMetadata).flops) == {"f32": 512}


def test_memory_1_2_2_loop_footprint_counts_the_callee_body_per_trip(tmp_path):
    """The loop's footprint reads y on every trip through the callee (4 x 256 B
    in all, the same 256 B each time), so y is one of its buffers."""
    result = _analysed(tmp_path)
    loop = next(n for n in iter_nodes(result.function.body) if isinstance(n, GridRegionExpr))
    rows = {(r.buffer, r.level): r for r in loop.get_metadata(LoopFootprintMetadata).footprints}
    y = rows[("y", "gmem")]
    assert (y.bytes, y.repeated_bytes) == (256, 1024)
