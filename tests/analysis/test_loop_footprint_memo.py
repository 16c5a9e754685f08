"""Loop footprints memoised by loop structure (analysis §1.2.2 LoopFootprintMetadata):
a loop whose structure was recorded takes that record with its own buffers'
names, and must be exactly the record derived afresh. Every loop of every
program here is checked against the unmemoised derivation."""
from __future__ import annotations

import json

import pytest

from tests.analysis.analysis_helpers import load
from tests.conftest import PROGRAMS
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.memory import loop_footprints as lf

# one GEMV kernel inlined per weight: identical loops over different buffers,
# three of them windows into one stacked buffer at literal starts, and a
# two-window kernel reading two windows of that buffer in one loop
STACKED = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Stacked:
    @func
    def gemv(x: Tensor[(1, 64), "f32"], w: Tensor[(64, 32), "f32"]) -> Tensor[(1, 32), "f32"]:
        with Mesh(("cta",), (4,), ("n",)) as g:
            xs = tf.reshard(x, (1, 64), "smem")
            acc = tf.zeros(Tensor[(1, 32 @ g.n), "f32", "rmem"])
            for kk in tile(64, 16):
                w_t = tf.reshard(w[kk, :], (16, 32 @ g.n), "smem")
                acc = acc + tf.reshard(tf.matmul(xs[:, kk], w_t), (1, 32 @ g.n), "rmem")
            return tf.reshard(acc, (1, 32 @ g.n), "gmem")

    @func
    def gemv2(x: Tensor[(1, 64), "f32"], wa: Tensor[(64, 32), "f32"], wb: Tensor[(64, 32), "f32"]) -> Tensor[(1, 32), "f32"]:
        with Mesh(("cta",), (4,), ("n",)) as g:
            xs = tf.reshard(x, (1, 64), "smem")
            acc = tf.zeros(Tensor[(1, 32 @ g.n), "f32", "rmem"])
            for kk in tile(64, 16):
                both = tf.reshard(wa[kk, :] + wb[kk, :], (16, 32 @ g.n), "smem")
                acc = acc + tf.reshard(tf.matmul(xs[:, kk], both), (1, 32 @ g.n), "rmem")
            return tf.reshard(acc, (1, 32 @ g.n), "gmem")

    @func
    def f(x: Tensor[(1, 64), "f32"], w1: ConstTensor[(64, 32), "f32"], w2: ConstTensor[(64, 32), "f32"],
          stack: Tensor[(3, 64, 32), "f32"], split: Tensor[(128, 32), "f32"],
          flat: Tensor[(256, 32), "f32"]):
        with Mesh(("cta",), (4,), ("n",)) as g:
            a = gemv(x, w1) + gemv(x, w2)
            b = gemv(x, tf.reshape(stack[0:1, :, :], (64, 32))) + gemv(x, tf.reshape(stack[2:3, :, :], (64, 32)))
            parts = tf.reshard(split, (128, 32 @ g.n), "gmem")
            c = gemv(x, parts[0:64, :]) + gemv(x, parts[64:128, :])
            d = gemv2(x, tf.reshape(stack[0:1, :, :], (64, 32)), tf.reshape(stack[1:2, :, :], (64, 32)))
            e = gemv2(x, tf.reshape(stack[0:1, :, :], (64, 32)), tf.reshape(stack[2:3, :, :], (64, 32)))
            # two windows of one buffer: overlapping rows count once, so their
            # relative starts decide the footprint (96 rows, then 128)
            o = gemv2(x, flat[0:64, :], flat[32:96, :]) + gemv2(x, flat[0:64, :], flat[64:128, :])
            return a + b + c + d + e + o
"""


@pytest.fixture
def checked(monkeypatch):
    """Every record checked against a fresh derivation; counts memo hits."""
    seen = {"loops": 0, "hits": 0}
    memoised = lf._Footprints.record

    def record(self, scope):
        before = len(self.records)
        got = memoised(self, scope)
        fresh = lf._metadata(*self._rows(scope))
        assert got == fresh, (scope.node.induction_var.name, got, fresh)
        seen["loops"] += 1
        seen["hits"] += len(self.records) == before
        return got

    monkeypatch.setattr(lf._Footprints, "record", record)
    return seen


def test_1_2_2_a_repeated_loop_takes_its_record_with_its_own_buffers(tmp_path, checked):
    module, function = load(tmp_path, STACKED, "Stacked")
    result = analyze(module, function, analysis=("memory",))
    # w2's loop takes w1's record, stack[2:3]'s takes stack[0:1]'s (a window of an
    # unsharded buffer, moved); windows of the sharded buffer, and the loops reading
    # two windows of one buffer, are keyed by their starts and derived afresh
    assert checked["loops"] == 10 and checked["hits"] == 2
    from tilefoundry.analysis.memory.records import LoopFootprintMetadata

    loops = [n for n in _loops(result.function)]
    buffers = [{f.buffer for f in n.get_metadata(LoopFootprintMetadata).footprints} for n in loops]
    # each inlined GEMV names its own weight: no record carries another loop's names
    assert len({frozenset(b) for b in buffers}) == len(buffers)


def _loops(function):
    from tilefoundry.ir.expr import GridRegionExpr, postorder

    return [n for n in postorder(function.body) if isinstance(n, GridRegionExpr)]


VALID = json.loads((PROGRAMS / "expected" / "manifest.json").read_text())["valid"]


@pytest.mark.parametrize("entry", VALID, ids=[e["stem"] for e in VALID])
def test_1_2_2_memoised_loop_records_equal_fresh_ones_on_golden_programs(entry, checked):
    from tilefoundry.analysis.analyze import analyze_served
    from tilefoundry.dsl.loader import load_selection

    if "memory" not in entry["families_ran"]:
        pytest.skip("memory not run on this program")
    module, function = load_selection(str(PROGRAMS / f"{entry['source']}:{entry['selector']}"))
    analyze_served(module, function, ("memory",), dims=entry["dims"] or None)
