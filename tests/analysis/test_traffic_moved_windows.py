"""A window at literal starts into an unsharded tensor moves only its image
(typeinfer refuses a literal window outside the tensor's box, and no
participant clips an unsharded tensor), so memory counts one such window once
for every start -- a whole model's per-layer windows of its stacked KV cache.
Every figure equals a count made afresh for each start; a window into a
sharded tensor, which a participant clips, is still counted per start."""
from __future__ import annotations

import collections

import pytest

from tests.analysis.analysis_helpers import load
from tilefoundry.analysis import memory
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.memory import TrafficMetadata, traffic
from tilefoundry.ir.expr import Call

WINDOWS = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Windows:
    @func
    def f(cache: Tensor[(4, 16, 32), "f32"]) -> Tensor[(1, 16, 32), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            split = tf.reshard(cache, (4, 16, 32 @ m.c), "gmem")
            a = tf.reshard(cache[0:1, :, :] + cache[1:2, :, :], (1, 16, 32 @ m.c), "gmem")
            b = tf.reshard(cache[3:4, :, :], (1, 16, 32 @ m.c), "gmem")
            c = split[1:2, 4:12, :] + split[2:3, 0:8, :]
            return a + b + tf.reshard(tf.concat(c, c, axis=1), (1, 16, 32 @ m.c), "gmem")
"""


def _slices(function):
    return [n for n in iter_nodes(function.body)
            if isinstance(n, Call) and type(n.op).__name__ == "Slice"]


def _figures(result):
    function = result.function
    return ([n.get_metadata(TrafficMetadata) for n in iter_nodes(function.body) if isinstance(n, Call)],
            function.get_metadata(TrafficMetadata))


@pytest.fixture
def program(tmp_path):
    return load(tmp_path, WINDOWS, "Windows")


def test_unsharded_windows_share_one_count_sharded_ones_do_not(program, monkeypatch):
    module, function = program
    counted = collections.Counter()
    count = traffic.call_traffic

    def counting(call, *args):
        if type(call.op).__name__ == "Slice":
            counted[call.args[0].type.shard is None] += 1
        return count(call, *args)

    monkeypatch.setattr(traffic, "call_traffic", counting)
    result = analyze(module, function, analysis=("memory",))
    slices = _slices(result.function)
    assert sum(s.args[0].type.shard is None for s in slices) == 3
    assert counted[True] == 1  # three starts, one count
    assert counted[False] == 2  # the sharded source's windows: one per start


def test_moved_window_figures_equal_fresh_counts(program, monkeypatch):
    module, function = program
    shared = _figures(analyze(module, function, analysis=("memory",)))
    monkeypatch.setattr(memory, "_moved_window", lambda call: False)
    fresh = _figures(analyze(module, function, analysis=("memory",)))
    assert shared == fresh
    windows = [r for r in shared[0] if r is not None]
    assert len(windows) >= 5
