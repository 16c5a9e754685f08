"""roofline (analysis §1.2.3): every constraint, one test (or more) named after
its section. The golden figures are in tests/golden/test_roofline_golden.py;
here the rules are pinned on small programs and on targets whose
ThroughputFacts are changed through a Target subclass (never by branching on a
concrete class in the family)."""
from __future__ import annotations

import pytest

from tests.analysis.analysis_helpers import LOOPY, load
from tests.conftest import PROGRAMS

from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.errors import AnalysisError
from tilefoundry.ir.expr import Call
from tilefoundry.target import CudaTarget
from tilefoundry.target.facts import ThroughputFacts

roofline = pytest.importorskip("tilefoundry.analysis.roofline")
RooflineMetadata = roofline.RooflineMetadata
bound_of = roofline.bound_of

H200 = CudaTarget("nvidia.h200_sxm")


# ---------------------------------------------------------------- helpers


def _facts(rates=(("bf16", 989500000000000), ("f32", 67000000000000)),
           bandwidth=4800000000000, level="gmem") -> ThroughputFacts:
    return ThroughputFacts(tuple(rates), bandwidth, level)


def _gpu(throughput="same", **paths):
    """An H200 whose ThroughputFacts are ``throughput`` (None: not projected)
    and whose analyzer table changes ``paths``; everything else inherited."""
    attrs: dict = {"analyzer_paths": {k.replace("_", "-"): v for k, v in paths.items()}}
    if throughput != "same":
        def _facts_projections(self):
            table = CudaTarget._facts_projections(self)
            if throughput is None:
                del table[ThroughputFacts]
            else:
                table[ThroughputFacts] = lambda query: throughput
            return table

        attrs["_facts_projections"] = _facts_projections
    return type("TunedGpu", (CudaTarget,), attrs)("nvidia.h200_sxm")


def _with_target(module, target):
    object.__setattr__(module, "target", target)
    return module


def _calls(function):
    from tilefoundry.analysis.check import iter_nodes

    return [n for n in iter_nodes(function.body) if isinstance(n, Call)]


def _analyze(tmp_path, body=LOOPY, selector="Loopy", target=None, analysis="roofline", **kw):
    from tilefoundry.analysis.analyze import analyze

    module, function = load(tmp_path, body, selector)
    if target is not None:
        _with_target(module, target)
    return analyze(module, function, analysis=analysis, **kw)


def _program(selector, **kw):
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(str(PROGRAMS / selector))
    target = kw.pop("target", None)
    if target is not None:
        _with_target(module, target)
    return analyze(module, function, analysis=kw.pop("analysis", "roofline"), **kw)


def _by_binding(result):
    from tilefoundry.ir.metadata import BindingMetadata

    return {c.get_metadata(BindingMetadata).name: c for c in _calls(result.function)}


class _Amount:
    def __init__(self, read, write):
        self.read, self.write = read, write


def _fake_cost(per_call, function_flops):
    """A compute-cost analyzer that states chosen records (what roofline must
    read rather than re-derive)."""
    def run(function, ctx):
        for call in _calls(function):
            call.with_metadata(ComputeCostMetadata(flops=per_call))
        function.with_metadata(ComputeCostMetadata(flops=function_flops))

    return Analyzer("compute-cost", run, produces=(ComputeCostMetadata,))


# ---------------------------------------------------------------- the record and the descriptor


def test_1_2_3_record_fields_and_defaults():
    import dataclasses

    fields = {f.name: f.default for f in dataclasses.fields(RooflineMetadata)}
    assert fields == {"compute_ns": 0, "memory_ns": 0, "ideal_ns": 0, "bound_by": "none"}


def test_1_2_3_descriptor_requires_compute_cost_and_memory():
    analyzer = H200.get_analyzer("roofline")
    assert analyzer is roofline.ANALYZER
    assert analyzer.requires == ("compute-cost", "memory")
    assert analyzer.produces == (RooflineMetadata,)


def test_1_2_3_closure_runs_dependencies_first(tmp_path):
    result = _analyze(tmp_path)
    assert result.executed == ("compute-cost", "memory", "roofline")
    assert result.metadata_types[-1] is RooflineMetadata


# ---------------------------------------------------------------- compute_ns


def test_1_2_3_compute_ns_is_per_dtype_ceiling_summed():
    # p10's Function flops: summing the dtype times after rounding gives 11;
    # rounding the summed time once would give 10
    flops = (("f16", 4333568), ("f32", 331776), ("fp8e4m3", 4096))
    record = bound_of(flops, (), H200.get_facts(ThroughputFacts))
    assert record.compute_ns == 5 + 5 + 1 == 11


def test_1_2_3_function_uses_its_summed_flops_not_a_sum_of_call_times(tmp_path):
    result = _analyze(tmp_path)
    facts = H200.get_facts(ThroughputFacts)
    function = result.function
    cost = function.get_metadata(ComputeCostMetadata)
    record = function.get_metadata(RooflineMetadata)
    assert record.compute_ns == bound_of(cost.flops, (), facts).compute_ns
    # the loop's matmul is invariant (factor 1), its accumulate runs 3 times;
    # both read off the already-scaled Function record, never multiplied here
    assert dict(cost.flops)["f32"] == 2 * 8 * 64 * 128 + 3 * 8 * 128 == 134144
    assert record.compute_ns == -(-134144 * 10**9 // 67000000000000) == 3
    # a sum of per-occurrence times over the trips would say 2 + 3 * 1
    calls = _calls(function)
    matmul = next(c for c in calls if type(c.op).__name__ == "MatMul")
    add = next(c for c in calls if type(c.op).__name__ == "Binary")
    per_call = (matmul.get_metadata(RooflineMetadata).compute_ns
                + 3 * add.get_metadata(RooflineMetadata).compute_ns)
    assert per_call == 5 != record.compute_ns


def test_1_2_3_call_record_is_one_occurrence(tmp_path):
    result = _analyze(tmp_path)
    calls = _by_binding(result)
    matmul = next(c for c in calls.values() if type(c.op).__name__ == "MatMul")
    assert matmul.get_metadata(RooflineMetadata).compute_ns == -(-(2 * 8 * 64 * 128) * 10**9
                                                                  // 67000000000000)


# ---------------------------------------------------------------- memory_ns


def test_1_2_3_memory_ns_reads_and_writes_at_bandwidth_level():
    facts = _facts()
    traffic = (("gmem", _Amount(65536, 32768)), ("rmem", _Amount(10**9, 10**9)))
    record = bound_of((), traffic, facts)
    assert record.memory_ns == -(-98304 * 10**9 // 4800000000000) == 21
    assert record.bound_by == "memory" and record.ideal_ns == 21


def test_1_2_3_bandwidth_level_selects_the_level_rather_than_summing():
    result = _program("p01_rownorm_mesh.py:RowNormTiles")
    from tilefoundry.analysis.memory.records import TrafficMetadata

    function = result.function
    whole = dict(function.get_metadata(TrafficMetadata).whole)
    assert set(whole) == {"gmem", "rmem"}
    gmem = whole["gmem"].read + whole["gmem"].write
    assert function.get_metadata(RooflineMetadata).memory_ns == -(-gmem * 10**9 // 4800000000000)
    # a cast moving only rmem bytes has no memory time
    calls = _by_binding(result)
    assert calls["v1"].get_metadata(RooflineMetadata).memory_ns == 0
    # the same program priced at another level divides that level's bytes
    tuned = _gpu(_facts(level="rmem"))
    moved = _program("p01_rownorm_mesh.py:RowNormTiles", target=tuned)
    rmem = whole["rmem"].read + whole["rmem"].write
    assert moved.function.get_metadata(RooflineMetadata).memory_ns == \
        -(-rmem * 10**9 // 4800000000000)


def test_1_2_3_memory_ns_zero_without_bandwidth_or_bytes():
    assert bound_of((), (("gmem", _Amount(0, 0)),), _facts()).memory_ns == 0
    assert bound_of((("f32", 67),), (("gmem", _Amount(5, 5)),), _facts(bandwidth=None)) \
        == RooflineMetadata(1, 0, 1, "compute")


def test_1_2_3_function_uses_its_summed_traffic():
    result = _program("p03_tiled_gemm.py:TiledGemm")
    from tilefoundry.analysis.memory.records import TrafficMetadata

    function = result.function
    gmem = dict(function.get_metadata(TrafficMetadata).whole)["gmem"]
    assert function.get_metadata(RooflineMetadata).memory_ns == \
        -(-(gmem.read + gmem.write) * 10**9 // 4800000000000) == 465


# ---------------------------------------------------------------- ideal_ns and bound_by


@pytest.mark.parametrize("flops,traffic,facts,expected", [
    # neither side: none
    ((), (), _facts(), RooflineMetadata(0, 0, 0, "none")),
    # movement only at a level with no published bandwidth: none
    ((), (("rmem", _Amount(64, 64)),), _facts(), RooflineMetadata(0, 0, 0, "none")),
    # flops whose dtype has no published rate: one ns, unrated
    ((("f16", 4096),), (), _facts(), RooflineMetadata(0, 0, 1, "unrated")),
    # bandwidth-level bytes with no published bandwidth: one ns, unrated
    ((), (("gmem", _Amount(8, 0)),), _facts(bandwidth=None), RooflineMetadata(0, 0, 1, "unrated")),
    # equal nonzero times: balanced
    ((("f32", 16384),), (("gmem", _Amount(32, 0)),), _facts(), RooflineMetadata(1, 1, 1, "balanced")),
    # memory greater
    ((("f32", 16384),), (("gmem", _Amount(32768, 0)),), _facts(), RooflineMetadata(1, 7, 7, "memory")),
    # compute greater
    ((("f32", 67 * 10**6),), (("gmem", _Amount(32, 0)),), _facts(), RooflineMetadata(1000, 1, 1000, "compute")),
    # zero flops of an unrated dtype earn nothing
    ((("f16", 0),), (), _facts(), RooflineMetadata(0, 0, 0, "none")),
])
def test_1_2_3_ideal_ns_and_bound_by(flops, traffic, facts, expected):
    assert bound_of(flops, traffic, facts) == expected


def test_1_2_3_ideal_ns_is_the_maximum_of_the_two_times():
    record = bound_of((("f32", 67 * 10**6),), (("gmem", _Amount(4800 * 10**6, 0)),), _facts())
    assert (record.compute_ns, record.memory_ns, record.ideal_ns) == (1000, 1000000, 1000000)


def test_1_2_3_service_work_is_not_priced_by_roofline():
    # p01 v6 = rsqrt: special service and rmem bytes only -> no bound, the bare family
    result = _program("p01_rownorm_mesh.py:RowNormTiles")
    v6 = _by_binding(result)["v6"]
    assert dict(v6.get_metadata(ComputeCostMetadata).service) == {"special": 8}
    assert v6.get_metadata(RooflineMetadata) == RooflineMetadata(0, 0, 0, "none")


def test_1_2_3_unrated_dtype_on_a_program(tmp_path):
    # a target that publishes no f32 rate: every f32-only call is owed one ns
    tuned = _gpu(_facts(rates=(("bf16", 989500000000000),)))
    result = _analyze(tmp_path, target=tuned)
    calls = _calls(result.function)
    matmul = next(c for c in calls if type(c.op).__name__ == "MatMul")
    record = matmul.get_metadata(RooflineMetadata)
    assert record.compute_ns == 0
    # its gmem reads still bound it
    assert record.bound_by == "memory" and record.ideal_ns == record.memory_ns > 0
    add = next(c for c in calls if type(c.op).__name__ == "Binary")
    assert add.get_metadata(RooflineMetadata).compute_ns == 0


# ---------------------------------------------------------------- constraints


def test_1_2_3_peak_for_none_for_unpublished_dtype_no_assumed_rate():
    facts = H200.get_facts(ThroughputFacts)
    assert facts.peak_for("i32") is None and facts.peak_for("f8e8m0") is None
    # an unrated dtype contributes no time: no rate stands in for it
    assert bound_of((("f8e8m0", 10**12), ("f32", 67)), (), facts) == \
        RooflineMetadata(1, 0, 1, "compute")


def test_1_2_3_exact_integer_ceiling_division_no_floating_point():
    facts = _facts(rates=(("f32", 10**9 + 7),), bandwidth=10**9 + 9)
    flops = 10**20 + 1
    record = bound_of((("f32", flops),), (("gmem", _Amount(flops, 0)),), facts)
    assert record.compute_ns == -(-flops * 10**9 // (10**9 + 7))
    assert record.memory_ns == -(-flops * 10**9 // (10**9 + 9))
    assert record.compute_ns != int(-(-flops * 1e9 // (10**9 + 7)))  # float would be off
    assert isinstance(record.compute_ns, int) and isinstance(record.memory_ns, int)


def test_1_2_3_records_on_every_reachable_call_and_the_function():
    result = _program("p06_module_tree.py:MiniStack")
    calls = _calls(result.function)
    assert len(calls) > 100
    assert all(isinstance(c.get_metadata(RooflineMetadata), RooflineMetadata) for c in calls)
    assert isinstance(result.function.get_metadata(RooflineMetadata), RooflineMetadata)


def test_1_2_3_reads_compute_cost_records_rather_than_evaluating(tmp_path):
    # one second of bf16 work per call, stated by a stand-in compute-cost
    second = 989500000000000
    tuned = _gpu(compute_cost=_fake_cost((("bf16", second),), (("bf16", 2 * second),)))
    result = _analyze(tmp_path, target=tuned)
    for call in _calls(result.function):
        assert call.get_metadata(RooflineMetadata).compute_ns == 10**9
    assert result.function.get_metadata(RooflineMetadata).compute_ns == 2 * 10**9


def test_1_2_3_recorded_dtype_not_a_dtype_name_raises(tmp_path):
    tuned = _gpu(compute_cost=_fake_cost((("f99", 5),), (("f99", 15),)))
    with pytest.raises(AnalysisError) as caught:
        _analyze(tmp_path, target=tuned)
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    assert message.startswith("roofline: ") and "'f99' is not a DType name" in message
    assert "binding=" in message  # names where


def test_1_2_3_target_without_throughput_facts_refused_before_any_write(tmp_path):
    from tilefoundry.analysis.analyze import analyze

    tuned = _gpu(None)
    module, function = load(tmp_path, LOOPY, "Loopy")
    _with_target(module, tuned)
    with pytest.raises(AnalysisError) as caught:
        analyze(module, function, analysis="roofline")
    assert str(caught.value) == \
        "roofline: TunedGpu (cuda): no Facts projection for 'ThroughputFacts'"
    assert function.get_metadata(ComputeCostMetadata) is None
    # the same program stays valid for roofline's dependencies
    assert analyze(module, function, analysis=["compute-cost", "memory"]).executed == \
        ("compute-cost", "memory")


def test_1_2_3_cpu_target_refused_by_its_memory_dependency():
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.analysis.analyze import analyze

    module, function = load_selection(str(PROGRAMS / "p15_cpu_host_scale.py:HostScale"))
    with pytest.raises(AnalysisError, match=r"^memory: CpuTarget \(cpu\): no Facts projection "
                                            r"for 'MemoryHierarchyFacts'$"):
        analyze(module, function, analysis="roofline")


def test_1_2_3_unplaced_program_valid_for_roofline():
    # p02 has no topology, so performance readiness fails; roofline does not care
    result = _program("p02_dense_bias_gelu.py:DenseBiasGelu")
    assert result.level is None
    assert result.function.get_metadata(RooflineMetadata) == RooflineMetadata(115, 723, 723, "memory")


def test_1_2_3_roofline_is_independent_of_the_per_unit_level():
    cta = _program("p01_rownorm_mesh.py:RowNormTiles")
    thread = _program("p01_rownorm_mesh.py:RowNormTiles", level="thread")
    assert thread.level == "thread"
    assert [c.get_metadata(RooflineMetadata) for c in _calls(cta.function)] == \
        [c.get_metadata(RooflineMetadata) for c in _calls(thread.function)]
    assert cta.function.get_metadata(RooflineMetadata) == \
        thread.function.get_metadata(RooflineMetadata)


def test_1_2_3_rerun_refreshes_with_no_cross_call_cache(tmp_path):
    from tilefoundry.analysis.analyze import analyze

    module, function = load(tmp_path, LOOPY, "Loopy")
    first = analyze(module, function, analysis="roofline")
    second = analyze(module, function, analysis="roofline")
    assert first.function is not second.function
    assert first.function.get_metadata(RooflineMetadata) == \
        second.function.get_metadata(RooflineMetadata)


# ---------------------------------------------------------------- rendered forms (companions §7.2)


def test_1_2_3_comment_states_ideal_ns_and_bound_by_defaults_omitted():
    from tilefoundry.render.forms import record_comment

    assert record_comment(RooflineMetadata(0, 7, 7, "memory")) == "roofline ideal-ns=7 bound-by=memory"
    assert record_comment(RooflineMetadata()) == "roofline"
    assert record_comment(RooflineMetadata(0, 0, 1, "unrated")) == "roofline ideal-ns=1 bound-by=unrated"


def test_1_2_3_json_projection_is_every_field():
    from tilefoundry.render.forms import record_json

    assert record_json(RooflineMetadata(2, 21, 21, "memory")) == \
        {"compute_ns": 2, "memory_ns": 21, "ideal_ns": 21, "bound_by": "memory"}
    assert record_json(RooflineMetadata()) == \
        {"compute_ns": 0, "memory_ns": 0, "ideal_ns": 0, "bound_by": "none"}
