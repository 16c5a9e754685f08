"""compute-cost on small programs written for this audit (none is a golden
program): nested and stepped range loops, a tile loop over a DimVar, tuple-
returning helpers called inside loops, a child-module call and a two-level
mesh. Every figure is computed by hand in the comment beside it (analysis
§1.2.1, companions §2.7)."""
from __future__ import annotations

import pytest

from tests.analysis.analysis_helpers import load
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.view import DerivedFunctionMetadata
from tilefoundry.errors import AnalysisError
from tilefoundry.ir.expr import Call

PROGRAMS = """
LEVELS = (Topology("cta", 2), Topology("thread", 32))
N = DimVar("n", 16, 129)
R = DimVar("r", 1, 9)


@module(entry="run", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Nested:
    @func
    def pair(a: Tensor[(4, 16), "f32"], b: Tensor[(4, 16), "f32"]):
        s = a + b
        return s, s * b

    @func
    def run(x: Tensor[(4, 16), "f32"], w: Tensor[(16, 16), "f32"]) -> Tensor[(4, 16), "f32"]:
        acc = tf.zeros(Tensor[(4, 16), "f32"])
        b = tf.full_like(x, 1.0)
        for i in range(3):
            inv = tf.matmul(x, w)
            for j in range(0, 10, 2):
                t = b * 2.0
                acc = acc + inv + t
                p, q = pair(x, acc)
                acc = q - p
            b = b + acc
        return acc * 2.0 + b


@module(entry="run", target=CpuTarget())
class Helpers:
    @func
    def scaled(a: Tensor[(8, 8), "f32"], b: Tensor[(8, 8), "f32"]) -> Tensor[(8, 8), "f32"]:
        t = b * 2.0
        return a + t

    @func
    def norm2(b: Tensor[(8, 8), "f32"]) -> Tensor[(8, 8), "f32"]:
        return b * b

    @func
    def run(x: Tensor[(8, 8), "f32"], y: Tensor[(8, 8), "f32"]) -> Tensor[(8, 8), "f32"]:
        acc = x
        for k in range(4):
            acc = scaled(acc, y)
            c = norm2(y)
            acc = acc - c
        return acc


@module(entry="gate", topologies=LEVELS)
class Act:
    @func
    def gate(h: Tensor[(64, 32), "f32"]) -> Tensor[(64, 32), "f32"]:
        with Mesh(("cta", "thread"), (2, 32), ("c", "t")) as m:
            hs = tf.reshard(h, (64 @ (m.c, m.t), 32), "rmem")
            return tf.silu(hs) * hs


@module(entry="run", target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class TwoLevel:
    act = Act.renamed("act")

    @func
    def run(x: Tensor[(64, 32), "f32"]):
        y = act(x)
        with Mesh(("cta", "thread"), (2, 32), ("c", "t")) as m:
            z = tf.reshard(x, (64, 32 @ m.t), "rmem")
            return y + y, z * z


@module(entry="scan", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Scan:
    @func
    def scan(x: Tensor[(N, 32), "f32"]) -> Tensor[(8, 32), "f32"]:
        acc = tf.zeros(Tensor[(8, 32), "f32"])
        for c in tile(N, 8):
            piece = x[c, :]
            acc = acc + piece * piece
        for r in range(2, 11, 3):
            acc = tf.maximum(acc, acc * 0.5)
        return acc


@module(entry="rep", target=CpuTarget())
class LoopOnly:
    @func
    def rep(x: Tensor[(4, 4), "f32"]) -> Tensor[(4, 4), "f32"]:
        acc = x
        for i in range(R):
            acc = acc * x
        return acc
"""


def _run(tmp_path, selector, **kw):
    module, function = load(tmp_path, PROGRAMS, selector)
    return analyze(module, function, analysis="compute-cost", **kw)


def _whole(result):
    record = result.function.get_metadata(ComputeCostMetadata)
    return dict(record.flops), dict(record.flops_per_unit)


def _calls(result):
    """(op name, one-occurrence flops, per-unit flops) in postorder."""
    rows = []
    for node in iter_nodes(result.function.body):
        if isinstance(node, Call):
            record = node.get_metadata(ComputeCostMetadata)
            kind = getattr(node.op, "kind", None)
            name = type(node.op).__name__ + (f".{getattr(kind, 'value', kind)}" if kind else "")
            rows.append((name, dict(record.flops).get("f32", 0), dict(record.flops_per_unit).get("f32", 0)))
    return rows


def test_compute_cost_1_2_1_nested_loops_factor_by_what_each_call_reads(tmp_path):
    """matmul(x, w) reads neither loop: 2*4*16*16 = 2048, factor 1.
    t = b * 2.0 reads the OUTER carried b only: 64 x 3 = 192.
    Inner body (acc + inv, + t, the helper's add and mul, q - p) reads the inner
    carried acc, whose entry is the outer carried acc: 5 calls x 64 x (3 * 5) = 4800
    (range(0, 10, 2) has 5 trips). b = b + acc: 64 x 3 = 192. After both loops:
    acc * 2.0 and + b, once: 128. Total 2048 + 192 + 4800 + 192 + 128 = 7360."""
    result = _run(tmp_path, "Nested")
    assert _whole(result) == ({"f32": 7360}, {"f32": 7360})  # nothing split: unit = whole
    calls = _calls(result)
    assert ("MatMul", 2048, 2048) in calls
    # every Call record states ONE occurrence; only the Function repeats
    assert sorted(f for _, f, _ in calls if f) == [64] * 9 + [2048]


def test_compute_cost_1_2_1_function_call_factor_covers_its_callee(tmp_path):
    """scaled(acc, y) reads the carried acc, so its whole callee repeats 4 times,
    the b * 2.0 that reads only y included: (64 + 64) x 4 = 512. norm2(y) reads
    nothing loop-variant: 64 x 1. acc - c: 64 x 4 = 256. Total 832 (the rule
    applied to each inlined primitive alone would give 640)."""
    result = _run(tmp_path, "Helpers")
    assert _whole(result) == ({"f32": 832}, {"f32": 832})


def test_compute_cost_2_7_child_module_two_level_mesh_per_unit(tmp_path):
    """act(x) (a child Module's entry) splits 64 rows over 2 CTAs x 32 threads:
    silu, mul and y + y are 64*32 = 2048 each, 1024 per CTA (32 rows), 32 per
    thread (one row). z = x split on the THREAD axis only: 2048 whole; a finer
    split never divides, so 2048 per CTA; 64 per thread (one column)."""
    cta = _run(tmp_path, "TwoLevel")
    assert cta.level == "cta"
    assert _whole(cta) == ({"f32": 8192}, {"f32": 3 * 1024 + 2048})
    assert [(f, u) for _, f, u in _calls(cta) if f] == [(2048, 1024)] * 3 + [(2048, 2048)]
    thread = _run(tmp_path, "TwoLevel", level="thread")
    assert _whole(thread) == ({"f32": 8192}, {"f32": 3 * 32 + 64})
    assert [(f, u) for _, f, u in _calls(thread) if f] == [(2048, 32)] * 3 + [(2048, 64)]


@pytest.mark.parametrize("n, flops", [(64, 5632), (128, 9728)])
def test_compute_cost_1_2_1_tile_loop_over_dimvar_and_stepped_range(tmp_path, n, flops):
    """tile(n, 8) has n/8 trips of piece * piece and acc + ... (256 each);
    range(2, 11, 3) = 2, 5, 8 has 3 trips of acc * 0.5 and maximum (256 each).
    n=64: 2*256*8 + 2*256*3 = 5632; n=128: 2*256*16 + 1536 = 9728."""
    result = _run(tmp_path, "Scan", dims={"n": n})
    assert _whole(result)[0] == {"f32": flops}


def test_analysis_2_extents_identify_a_size_the_signature_cannot(tmp_path):
    """`r` bounds a loop only: the signature is the same at every extent, and the
    recorded extents (not the signature) say which size each view is at."""
    module, function = load(tmp_path, PROGRAMS, "LoopOnly")
    three = analyze(module, function, analysis="compute-cost", dims={"r": 3})
    five = analyze(module, function, analysis="compute-cost", dims={"r": 5})
    assert [p.type for p in three.function.params] == [p.type for p in five.function.params]
    assert three.function.get_metadata(DerivedFunctionMetadata).extents == (("r", 3),)
    assert five.function.get_metadata(DerivedFunctionMetadata).extents == (("r", 5),)
    assert _whole(three)[0] == {"f32": 16 * 3} and _whole(five)[0] == {"f32": 16 * 5}
    origin = three.function.get_metadata(DerivedFunctionMetadata).origin
    assert origin is five.function.get_metadata(DerivedFunctionMetadata).origin
    assert origin is function and origin is not three.function


def test_analysis_2_loop_bound_dimension_must_be_bound(tmp_path):
    with pytest.raises(AnalysisError, match="analyze needs one EXTENT for every open dimension: r "):
        _run(tmp_path, "LoopOnly")
