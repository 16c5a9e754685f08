"""Loop footprints (analysis §1.2.2 LoopFootprintMetadata, BufferFootprint):
a boundary with no relation makes the record a lower bound and never fails
the analysis; a window whose start is computed from the loop variable moves
with every trip; a loop-invariant call is no access of the loop."""
from __future__ import annotations

import pytest

from tests.analysis.analysis_helpers import LOOPY, load

pytest.importorskip("tilefoundry.analysis.memory")

PROGRAMS = """
DEPTH = 512


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class M:
    @func
    def lower(x: Tensor[(8, 64), "f32"]) -> Tensor[(2, 16), "f32", "rmem"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            acc = tf.exp(tf.zeros(Tensor[(2, 16), "f32", "rmem"]))
            for i in tile(64, 16):
                xs = tf.reshard(x[:, i], (8 @ m.c, 16), "rmem")
                acc = acc + tf.reshape(tf.local(xs), (2, 16))
            return acc

    @func
    def strided(a: Tensor[(8, DEPTH), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), (4,), ("w",)) as grid:
            # the carry enters with the type the body gives it (a window placed in smem)
            acc = tf.reshard(tf.zeros(Tensor[(8, 64), "f32"]), (8, 64), "smem")
            for kk in tile(DEPTH, 256):
                start = kk + grid.w * 64
                acc = acc + tf.reshard(a[:, start : start + 64], (8, 64), "smem")
            return tf.reshard(acc, (8, 64), "gmem")
"""


def _loop_record(tmp_path, body, selector):
    """(LoopFootprintMetadata of the one loop, rendered text)."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.analysis.memory import LoopFootprintMetadata
    from tilefoundry.ir.expr import GridRegionExpr
    from tilefoundry.render.report import render_analysis

    module, function = load(tmp_path, body, selector)
    result = analyze(module, function, analysis="memory")
    loops = [n for n in iter_nodes(result.function.body) if isinstance(n, GridRegionExpr)]
    assert len(loops) == 1
    return loops[0].get_metadata(LoopFootprintMetadata), render_analysis(result).text


def _rows(record) -> dict:
    return {(r.buffer, r.level): (r.bytes, r.device_bytes, r.repeated_bytes) for r in record.footprints}


def test_analysis_1_2_2_missing_relation_is_lower_bound(tmp_path):
    # `local` states no relation for its operand: the loop's record is the
    # available lower bound (known false), its other rows kept, nothing raised
    record, text = _loop_record(tmp_path, PROGRAMS, "M.lower")
    assert record.known is False
    # x: one participant's 2 rows of each 16-wide window, over the 4 trips
    assert _rows(record)[("x", "gmem")] == (2 * 64 * 4, 8 * 64 * 4, 4 * 2 * 16 * 4)
    assert "status=lower-bound" in text


def test_analysis_1_2_2_window_start_computed_from_loop_variable_counts_every_trip(tmp_path):
    # start = kk + 64 * w: each worker reads a different 64-wide window on each
    # of the 2 trips, so one participant reaches 2 windows and the device the
    # whole (8, 512) source -- not one window settled at kk = 0
    record, text = _loop_record(tmp_path, PROGRAMS, "M.strided")
    assert record.known is True
    assert _rows(record)[("a", "gmem")] == (2 * 8 * 64 * 4, 8 * 512 * 4, 2 * 8 * 64 * 4)
    assert "status=complete" in text


def test_analysis_1_2_2_loop_invariant_call_is_no_access_of_the_loop(tmp_path):
    # the matmul reads neither the induction variable nor the carry: it runs
    # once (as its traffic is counted), so x and w are no rows of the loop
    record, _ = _loop_record(tmp_path, LOOPY, "Loopy")
    buffers = {buffer for buffer, _ in _rows(record)}
    assert "x" not in buffers and "w" not in buffers
    assert "acc" in buffers
