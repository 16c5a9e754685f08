"""Spec analysis.md Facts aggregates (§1.2.2 memory, §1.2.3 rates, §1.2.4 capacity)."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from tilefoundry.target import (
    AmxTarget,
    CudaTarget,
    ExplicitMemoryLevelFacts,
    ImplicitMemoryLevelFacts,
    MemoryHierarchyFacts,
    MemoryLevelRelation,
    MemoryRelationKind,
    ParallelCapacityFacts,
    PerformanceServiceFacts,
    ThroughputFacts,
    TopologyLimitFacts,
)

H200 = CudaTarget("nvidia.h200_sxm")
B200 = CudaTarget("nvidia.b200_sxm")
H100 = CudaTarget("nvidia.h100_sxm")
AMX = AmxTarget()
MEMORY_TARGETS = (H200, B200, H100, AMX)


def _field_names(cls):
    return tuple(f.name for f in dataclasses.fields(cls))


def test_analysis_facts_field_names_match_spec():
    assert _field_names(ExplicitMemoryLevelFacts) == ("name", "capacity_bytes", "scope", "owner")
    assert _field_names(ImplicitMemoryLevelFacts) == ("name", "capacity_bytes", "scope")
    assert _field_names(MemoryLevelRelation) == ("kind", "near", "far", "shared_capacity_bytes")
    assert _field_names(MemoryHierarchyFacts) == ("explicit_levels", "implicit_levels", "relations")
    assert _field_names(ThroughputFacts) == ("peak_flops_per_second",
                                             "memory_bandwidth_bytes_per_second",
                                             "bandwidth_level")
    assert _field_names(PerformanceServiceFacts) == ("unit_flops", "unit_ops", "unit_bandwidth",
                                                     "unit")
    assert _field_names(ParallelCapacityFacts) == ("topology", "parallel_units")
    assert _field_names(TopologyLimitFacts) == ("topology", "max_static_extent")
    assert {k.value for k in MemoryRelationKind} == {"caches", "shares_capacity_with"}


def test_analysis_facts_are_frozen_dataclasses():
    for cls in (ExplicitMemoryLevelFacts, ImplicitMemoryLevelFacts, MemoryLevelRelation,
                MemoryHierarchyFacts, ThroughputFacts, PerformanceServiceFacts,
                ParallelCapacityFacts, TopologyLimitFacts):
        assert cls.__dataclass_params__.frozen, cls


# ------------------------------------------------------------------ ThroughputFacts

def test_analysis_facts_peak_for_published_rate():
    facts = H200.get_facts(ThroughputFacts)
    assert facts.peak_for("bf16") == 989_500_000_000_000
    assert facts.peak_for(SimpleNamespace(name="f32")) == 67_000_000_000_000  # a DType-like


def test_analysis_facts_peak_for_unpublished_is_none():
    facts = H200.get_facts(ThroughputFacts)
    assert facts.peak_for("f4e2m1") is None      # Hopper: no FP4 mode
    assert facts.peak_for("i32") is None
    assert facts.peak_for("f8e8m0") is None
    assert AMX.get_facts(ThroughputFacts).peak_for("f16") is None  # AMX states f32 only


def test_analysis_facts_bandwidth_level_selects_one_level():
    for target in (H200, B200, H100, AMX):
        assert target.get_facts(ThroughputFacts).bandwidth_level == "gmem"


def test_analysis_facts_no_float_enters_a_record():
    with pytest.raises(TypeError):
        ThroughputFacts((("f32", 67e12),), 4_800_000_000_000, "gmem")
    with pytest.raises(TypeError):
        ThroughputFacts((), 4.8e12, "gmem")
    with pytest.raises(TypeError):
        PerformanceServiceFacts((), (("integer", 1.5),), (), "cta")
    with pytest.raises(TypeError):
        ExplicitMemoryLevelFacts("smem", 232448.0, "cta", "cta")
    with pytest.raises(TypeError):
        ParallelCapacityFacts("cta", True)


def test_analysis_facts_every_projected_number_is_an_int():
    def walk(value):
        if isinstance(value, float):
            raise AssertionError(f"float in a Facts record: {value!r}")
        if dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, tuple):
            for v in value:
                walk(v)

    count = 0
    for target in MEMORY_TARGETS:
        for facts_type in (MemoryHierarchyFacts, ThroughputFacts, ParallelCapacityFacts):
            walk(target.get_facts(facts_type))
            count += 1
    for target in (H200, B200, H100):
        walk(target.get_facts(PerformanceServiceFacts))
        count += 1
    assert count == 15


def test_analysis_facts_rate_tables_sorted_and_unique():
    assert [d for d, _ in B200.get_facts(ThroughputFacts).peak_flops_per_second] == \
        ["bf16", "f16", "f32", "f4e2m1", "fp8e4m3"]
    built = ThroughputFacts((("f32", 2), ("bf16", 1)), None, "gmem")
    assert built.peak_flops_per_second == (("bf16", 1), ("f32", 2))
    with pytest.raises(ValueError, match="repeats a key"):
        ThroughputFacts((("f32", 2), ("f32", 3)), None, "gmem")
    with pytest.raises(ValueError):
        ThroughputFacts((("f32", 0),), None, "gmem")  # a stated rate is positive


# ---------------------------------------------------------- PerformanceServiceFacts

def test_analysis_facts_service_lookups_none_when_unstated():
    facts = H200.get_facts(PerformanceServiceFacts)
    assert facts.flops("f4e2m1") is None
    assert facts.ops("local-copy") is None
    assert facts.bandwidth("smem") is None
    assert facts.bandwidth("rmem") is None
    integer_only = dataclasses.replace(facts, unit_ops=(("integer", 7),))
    for kind in ("predicate", "select", "special"):
        assert integer_only.ops(kind) is None  # an unstated kind never takes another's rate


def test_analysis_facts_service_lookups_when_stated():
    facts = H200.get_facts(PerformanceServiceFacts)
    assert facts.flops("bf16") == 7_496_212_121_212
    assert facts.flops(SimpleNamespace(name="f32")) == 507_575_757_575
    assert facts.ops("special") == 31_723_484_848
    assert facts.bandwidth("gmem") == 36_363_636_363
    assert facts.unit == "cta"


def test_analysis_facts_service_kinds_are_the_four_named():
    for target in (H200, H100):
        kinds = [k for k, _ in target.get_facts(PerformanceServiceFacts).unit_ops]
        assert kinds == ["integer", "predicate", "select", "special"]


def test_analysis_facts_service_provenance_names_the_published_row():
    # each service kind MUST say in its provenance which published row it came from
    for target in (H200, H100):
        doc = target.device_document
        for kind in ("integer", "predicate", "select", "special"):
            fact = doc.fact(f"service.{kind}")
            assert fact.origin == "derived"
            assert "best-practices-guide" in fact.source
            assert "throughput-of-native-arithmetic-instructions" in fact.source
            assert "results/clock/SM" in fact.derivation
            assert "row" in fact.derivation


def test_analysis_facts_unit_rates_stated_for_the_capacity_level():
    # performance readiness: rates for the same level as ParallelCapacityFacts
    for target in (H200, B200, H100):
        assert target.get_facts(PerformanceServiceFacts).unit == \
            target.get_facts(ParallelCapacityFacts).topology


# ------------------------------------------------------------ MemoryHierarchyFacts

def test_analysis_facts_memory_two_flat_tuples_and_edges():
    for target in MEMORY_TARGETS:
        facts = target.get_facts(MemoryHierarchyFacts)
        assert isinstance(facts.explicit_levels, tuple)
        assert isinstance(facts.implicit_levels, tuple)
        assert isinstance(facts.relations, tuple)
        assert all(isinstance(r, MemoryLevelRelation) for r in facts.relations)


def test_analysis_facts_gpu_projection_states_cache_and_sharing_edges():
    for target in (H200, B200, H100):
        facts = target.get_facts(MemoryHierarchyFacts)
        names = {lv.name for lv in facts.explicit_levels}
        assert {"gmem", "smem", "rmem", "tmem"} <= names
        assert {lv.name for lv in facts.implicit_levels} == {"l1", "l2"}
        assert MemoryLevelRelation(MemoryRelationKind.CACHES, "l1", "l2") in facts.relations
        assert MemoryLevelRelation(MemoryRelationKind.CACHES, "l2", "gmem") in facts.relations
        assert MemoryLevelRelation(MemoryRelationKind.SHARES_CAPACITY_WITH, "l1", "smem",
                                   262_144) in facts.relations


def test_analysis_facts_program_dependent_cache_has_no_fixed_capacity():
    for target in (H200, B200, H100):
        l1 = [lv for lv in target.get_facts(MemoryHierarchyFacts).implicit_levels
              if lv.name == "l1"][0]
        assert l1.capacity_bytes is None


def test_analysis_facts_no_sharing_means_no_sharing_edge():
    facts = AMX.get_facts(MemoryHierarchyFacts)
    assert all(r.kind is MemoryRelationKind.CACHES for r in facts.relations)


def test_analysis_facts_explicit_owner_is_declared_topology_or_target():
    for target in MEMORY_TARGETS:
        for level in target.get_facts(MemoryHierarchyFacts).explicit_levels:
            assert level.owner in target.topology_levels + ("target",), (target, level)


def test_analysis_facts_implicit_cache_carries_no_owner():
    assert "owner" not in _field_names(ImplicitMemoryLevelFacts)
    for target in MEMORY_TARGETS:
        for level in target.get_facts(MemoryHierarchyFacts).implicit_levels:
            assert not hasattr(level, "owner")


def test_analysis_facts_memory_rejects_edges_to_unknown_levels():
    gmem = ExplicitMemoryLevelFacts("gmem", None, "device", "target")
    with pytest.raises(ValueError, match="unknown level 'l2'"):
        MemoryHierarchyFacts((gmem,), (), (MemoryLevelRelation(MemoryRelationKind.CACHES,
                                                              "l2", "gmem"),))
    with pytest.raises(ValueError, match="repeats"):
        MemoryHierarchyFacts((gmem, gmem), (), ())
    with pytest.raises(ValueError, match="caches edge"):
        MemoryLevelRelation(MemoryRelationKind.CACHES, "l1", "l2", 5)


# ----------------------------------------------------------- ParallelCapacityFacts

def test_analysis_facts_parallel_capacity_positive():
    with pytest.raises(ValueError):
        ParallelCapacityFacts("cta", 0)
    assert H200.get_facts(ParallelCapacityFacts) == ParallelCapacityFacts("cta", 132)


def test_analysis_facts_parallel_units_kept_out_of_unit_rates():
    # parallel_units is policy: the one-unit rates are device rates / SM count,
    # unchanged by any capacity value
    thr = H200.get_facts(ThroughputFacts)
    svc = H200.get_facts(PerformanceServiceFacts)
    sms = H200.sm_count
    for dtype, rate in thr.peak_flops_per_second:
        assert svc.flops(dtype) == rate // sms
