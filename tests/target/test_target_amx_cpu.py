"""companions.md §6.6 (AMX), §6.7 (CPU) and the Facts side of §6.8 (support matrix)."""
from __future__ import annotations

import pytest

from tilefoundry.target import (
    AmxTarget,
    CpuTarget,
    CudaTarget,
    ExplicitMemoryLevelFacts,
    ImplicitMemoryLevelFacts,
    MemoryHierarchyFacts,
    MemoryLevelRelation,
    MemoryRelationKind,
    NoFactsProjectionError,
    ParallelCapacityFacts,
    PerformanceServiceFacts,
    ThroughputFacts,
    TopologyLimitFacts,
    UnknownTargetError,
)

AMX = AmxTarget()


def test_target_6_6_amx_architecture_document():
    arch = AMX.architecture_document
    assert arch.id == "apple.amx"
    assert arch.value("identity.name") == "apple_amx"
    assert arch.value("instruction.compute_dtypes") == ("f16", "f32")
    assert arch.value("instruction.capabilities") == ("amx_outer_product",
                                                      "amx_resident_accumulator")
    assert arch.value("compute.units_per_core") == 1
    assert arch.value("register.x_file") == 512
    assert arch.value("register.y_file") == 512
    assert arch.value("register.z_file") == 4096
    assert arch.value("register.owner") == "amx"
    assert arch.value("geometry.f32_outer_product") == "16x16"
    assert arch.value("geometry.f32_accumulator_tile") == "32x32"
    assert arch.value("throughput.f32_instruction_peak") is None  # unavailable
    # Apple publishes nothing: every available fact is reference or derived from it
    for fact in arch.sorted_facts():
        if fact.available:
            assert fact.origin in ("reference", "derived"), fact.path
            assert "corsix/amx" in fact.source, fact.path


def test_target_6_6_m2_pro_device_document():
    dev = AMX.device_document
    assert dev.id == "apple.m2_pro"
    assert dev.value("identity.name") == "apple_m2_pro"
    expected = {
        "compute.performance_core_count": (8, "measured"),
        "compute.efficiency_core_count": (4, "measured"),
        "compute.amx_unit_count": (2, "estimated"),
        "memory.l1d.per_performance_core": (131_072, "measured"),
        "memory.l1d.per_efficiency_core": (65_536, "measured"),
        "memory.l2.per_performance_cluster": (16 * 2**20, "measured"),
        "memory.l2.per_efficiency_cluster": (4 * 2**20, "measured"),
        "memory.cache_line": (128, "measured"),
        "memory.unified.capacity": (34_359_738_368, "measured"),
        "memory.unified.bandwidth": (200_000_000_000, "vendor"),
        "throughput.amx.f32": (504_900_000_000, "measured"),
        "throughput.neon.f32": (107_700_000_000, "measured"),
    }
    for path, (value, origin) in expected.items():
        fact = dev.fact(path)
        assert (fact.value, fact.origin) == (value, origin), path
    assert dev.value("memory.unified.owner") == "target"
    for figure in ("504.9", "767.8", "967.5", "1108.3"):
        assert figure in dev.fact("compute.amx_unit_count").conditions


def test_target_6_6_amx_projections():
    facts = AMX.get_facts(MemoryHierarchyFacts)
    unified = 34_359_738_368
    assert facts.explicit_levels == (
        ExplicitMemoryLevelFacts("host", unified, "device", "target"),
        ExplicitMemoryLevelFacts("gmem", unified, "device", "target"),
        ExplicitMemoryLevelFacts("rmem", 4608, "amx", "amx"),
    )
    assert facts.implicit_levels == (ImplicitMemoryLevelFacts("l1d", 131_072, "core"),
                                     ImplicitMemoryLevelFacts("l2", 16_777_216, "cluster"))
    assert facts.relations == (MemoryLevelRelation(MemoryRelationKind.CACHES, "l1d", "l2"),
                               MemoryLevelRelation(MemoryRelationKind.CACHES, "l2", "gmem"))
    assert AMX.architecture_document.value("register.resident_bytes") == 512 + 4096
    assert AMX.get_facts(ThroughputFacts) == ThroughputFacts((("f32", 504_900_000_000),),
                                                             200_000_000_000, "gmem")
    assert AMX.get_facts(ParallelCapacityFacts) == ParallelCapacityFacts("core", 8)


def test_target_6_6_amx_has_no_performance_service_facts():
    with pytest.raises(NoFactsProjectionError) as info:
        AMX.get_facts(PerformanceServiceFacts)
    assert str(info.value) == "AmxTarget (amx): no Facts projection for 'PerformanceServiceFacts'"


def test_target_6_6_amx_cache_scopes_never_match_device():
    for level in AMX.get_facts(MemoryHierarchyFacts).implicit_levels:
        assert level.scope != "device"


def test_target_6_6_amx_neon_rate_is_not_projected():
    assert AMX.get_facts(ThroughputFacts).peak_flops_per_second == (("f32", 504_900_000_000),)


def test_target_6_6_amx_unknown_device():
    with pytest.raises(UnknownTargetError, match=r"valid: \['apple.m2_pro'\]"):
        AmxTarget("apple.m4_max")


def test_target_6_7_cpu_states_nothing():
    cpu = CpuTarget()
    assert cpu.identity == "cpu"
    assert cpu.topology_levels == ()
    assert cpu.documents == ()
    for facts_type in (TopologyLimitFacts, MemoryHierarchyFacts, ThroughputFacts,
                       PerformanceServiceFacts, ParallelCapacityFacts):
        with pytest.raises(NoFactsProjectionError,
                           match=f"^CpuTarget \\(cpu\\): no Facts projection for '{facts_type.__name__}'$"):
            cpu.get_facts(facts_type)


# §6.8, the Facts each family rests on (spec §1.2 table): memory needs
# MemoryHierarchyFacts, roofline ThroughputFacts, performance ThroughputFacts,
# ParallelCapacityFacts, MemoryHierarchyFacts and PerformanceServiceFacts.
FAMILY_FACTS = {
    "memory": (MemoryHierarchyFacts,),
    "roofline": (MemoryHierarchyFacts, ThroughputFacts),  # via its memory dependency
    "performance": (MemoryHierarchyFacts, ThroughputFacts, ParallelCapacityFacts,
                    PerformanceServiceFacts),
}


def _projects(target, facts_types):
    try:
        for facts_type in facts_types:
            target.get_facts(facts_type)
    except NoFactsProjectionError:
        return False
    return True


@pytest.mark.parametrize("target,memory,roofline,performance", [
    (CudaTarget("nvidia.h200_sxm"), True, True, True),
    (CudaTarget("nvidia.b200_sxm"), True, True, True),
    (AmxTarget(), True, True, False),
    (CpuTarget(), False, False, False),
], ids=["h200", "b200", "amx", "cpu"])
def test_target_6_8_support_matrix_facts(target, memory, roofline, performance):
    assert _projects(target, FAMILY_FACTS["memory"]) is memory
    assert _projects(target, FAMILY_FACTS["roofline"]) is roofline
    assert _projects(target, FAMILY_FACTS["performance"]) is performance


def test_target_6_8_b200_states_every_service_rate():
    # the zoo's B200 decode steps (exp, rsqrt, where) are priced, not refused
    svc = CudaTarget("nvidia.b200_sxm").get_facts(PerformanceServiceFacts)
    assert [kind for kind, _ in svc.unit_ops] == ["integer", "predicate", "select", "special"]
    assert all(rate > 0 for _, rate in svc.unit_ops)
    assert svc.flops("f32") is not None
