"""companions.md §6.2–§6.5: CUDA architectures, devices and projections; H100."""
from __future__ import annotations

from fractions import Fraction

import pytest

from tilefoundry.target import (
    CudaTarget,
    ExplicitMemoryLevelFacts,
    ImplicitMemoryLevelFacts,
    MemoryHierarchyFacts,
    ParallelCapacityFacts,
    PerformanceServiceFacts,
    ThroughputFacts,
    UnknownTargetError,
)
from tilefoundry.errors import SelectionError

H200 = CudaTarget("nvidia.h200_sxm")
B200 = CudaTarget("nvidia.b200_sxm")
H100 = CudaTarget("nvidia.h100_sxm")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------------ §6.3 arch

@pytest.mark.parametrize("target", [H200, B200, H100], ids=lambda t: t.identity)
def test_target_6_3_shared_architecture_values(target):
    arch = target.architecture_document
    assert arch.value("compute.max_threads_per_cta") == 1024
    assert arch.value("compute.warp_size") == 32
    assert arch.value("compute.max_warps_per_cta") == 32
    assert arch.value("compute.max_resident_ctas_per_sm") == 32
    assert arch.value("memory.shared.per_sm") == 233_472
    assert arch.value("memory.shared.per_cta") == 232_448
    assert arch.value("memory.unified_l1_shared.per_sm") == 262_144
    assert arch.value("memory.register.count_per_sm") == 65_536
    assert arch.value("memory.shared.owner") == "cta"
    assert arch.value("memory.register.owner") == "thread"
    assert arch.value("memory.tensor.owner") == "cta"
    # architectures carry no FLOP rates
    assert not any(p.startswith("throughput.") for p in arch.facts)


def test_target_6_3_sm90_and_sm100_columns():
    sm90, sm100 = H200.architecture_document, B200.architecture_document
    assert (sm90.id, sm100.id) == ("nvidia.sm90", "nvidia.sm100")
    assert sm90.value("identity.name") == "sm_90"
    assert sm100.value("identity.name") == "sm_100"
    assert sm90.value("instruction.compute_dtypes") == ("f32", "f16", "bf16", "fp8e4m3")
    assert sm100.value("instruction.compute_dtypes") == ("f32", "f16", "bf16", "fp8e4m3", "f4e2m1")
    assert sm90.value("instruction.capabilities") == ("tensor_core", "wgmma", "tma")
    assert sm100.value("instruction.capabilities") == ("tensor_core", "tcgen05", "tma")
    assert sm90.value("memory.tensor.per_cta") is None  # accumulates in registers
    assert sm100.value("memory.tensor.per_cta") == 262_144
    assert sm100.value("memory.tensor.lanes") * sm100.value("memory.tensor.columns") * 4 == 262_144
    assert sm100.fact("compute.max_threads_per_cta").origin == "measured"
    assert sm100.fact("compute.warp_size").origin == "measured"


def test_target_6_3_h100_shares_the_sm90_document():
    assert H100.architecture_document is H200.architecture_document


# ---------------------------------------------------------------------- §6.4 devices

def test_target_6_4_h200_device_facts_and_origins():
    doc = H200.device_document
    expected = {
        "compute.sm_count": (132, "vendor"),
        "memory.hbm.capacity": (141_000_000_000, "vendor"),
        "memory.hbm.bandwidth": (4_800_000_000_000, "vendor"),
        "memory.l2.capacity": (50_000_000, "reference"),
        "throughput.f32": (67_000_000_000_000, "vendor"),
        "throughput.f16": (989_500_000_000_000, "derived"),
        "throughput.bf16": (989_500_000_000_000, "derived"),
        "throughput.fp8e4m3": (1_979_000_000_000_000, "derived"),
        "service.integer": (126_893_939_394, "derived"),
        "service.predicate": (126_893_939_394, "derived"),
        "service.select": (126_893_939_394, "derived"),
        "service.special": (31_723_484_848, "derived"),
        "memory.hbm.owner": ("target", "derived"),
    }
    for path, (value, origin) in expected.items():
        fact = doc.fact(path)
        assert (fact.value, fact.origin) == (value, origin), path
    assert doc.value("throughput.f4e2m1") is None  # no FP4 mode
    assert doc.value("memory.l2.bandwidth") is None


def test_target_6_4_b200_device_facts_and_origins():
    doc = B200.device_document
    expected = {
        "compute.sm_count": (148, "measured"),
        "memory.hbm.capacity": (180_000_000_000, "derived"),
        "memory.hbm.bandwidth": (7_672_320_000_000, "derived"),
        "memory.l2.capacity": (132_644_864, "measured"),
        "throughput.f32": (75_000_000_000_000, "derived"),
        "throughput.f16": (2_250_000_000_000_000, "derived"),
        "throughput.bf16": (2_250_000_000_000_000, "derived"),
        "throughput.fp8e4m3": (4_500_000_000_000_000, "derived"),
        "throughput.f4e2m1": (9_000_000_000_000_000, "derived"),
        "memory.hbm.owner": ("target", "derived"),
    }
    for path, (value, origin) in expected.items():
        fact = doc.fact(path)
        assert (fact.value, fact.origin) == (value, origin), path
    for kind, rate in (("integer", 126_689_189_189), ("predicate", 126_689_189_189),
                       ("select", 126_689_189_189), ("special", 31_672_297_297)):
        assert (doc.fact(f"service.{kind}").value, doc.fact(f"service.{kind}").origin) == \
            (rate, "derived"), kind  # companions §6.4 records none: derived as the H200's are
    assert doc.value("memory.l2.bandwidth") is None


def test_target_6_4_b200_derivations_reproduce():
    doc = B200.device_document
    assert 1_440_000_000_000 // 8 == doc.value("memory.hbm.capacity")
    bus, clock = doc.value("memory.hbm.bus_width"), doc.value("memory.hbm.clock")
    assert (bus, clock) == (7680, 3_996_000_000)
    assert bus // 8 * clock * 2 == doc.value("memory.hbm.bandwidth")
    assert 600 * 10**12 // 8 == doc.value("throughput.f32")
    assert 36 * 10**15 // 8 // 2 == doc.value("throughput.bf16") == doc.value("throughput.f16")
    assert 72 * 10**15 // 8 // 2 == doc.value("throughput.fp8e4m3")
    assert 72 * 10**15 // 8 == doc.value("throughput.f4e2m1")  # already dense


def test_target_6_4_h200_sparse_peaks_halved():
    doc = H200.device_document
    assert 1979 * 10**12 // 2 == doc.value("throughput.bf16") == doc.value("throughput.f16")
    assert 3958 * 10**12 // 2 == doc.value("throughput.fp8e4m3")


@pytest.mark.parametrize("target,f32,sms", [(H200, 67 * 10**12, 132), (H100, 669 * 10**11, 132),
                                            (B200, 75 * 10**12, 148)],
                         ids=["h200", "h100", "b200"])
def test_target_6_4_service_envelopes_derive_from_the_f32_clock(target, f32, sms):
    doc = target.device_document
    clock = Fraction(f32, sms * 128 * 2)  # FP32 peak / (SMs x 128 results/clk x 2 FLOP)
    assert doc.value("compute.fp32_results_per_clock_per_sm") == 128
    assert round(clock) == doc.value("compute.effective_clock")
    for kind, per_clock in (("integer", 64), ("predicate", 64), ("select", 64), ("special", 16)):
        assert round(clock * per_clock) == doc.value(f"service.{kind}"), kind


def test_target_6_4_h200_effective_clock_is_1982717803():
    assert H200.device_document.value("compute.effective_clock") == 1_982_717_803


def test_target_6_4_unknown_device_lists_valid_ids():
    with pytest.raises(UnknownTargetError) as info:
        CudaTarget("nvidia.a100_sxm")
    assert str(info.value) == ("CudaTarget: unknown device 'nvidia.a100_sxm'; valid: "
                               "['nvidia.b200_sxm', 'nvidia.h100_sxm', 'nvidia.h200_sxm']")
    assert isinstance(info.value, SelectionError)
    with pytest.raises(UnknownTargetError):
        CudaTarget("nvidia.sm90")  # an architecture is not a device
    with pytest.raises(UnknownTargetError):
        CudaTarget("apple.m2_pro")  # another family's device
    with pytest.raises(UnknownTargetError):
        CudaTarget("../hardware/nvidia_h200_sxm")


# ------------------------------------------------------------------ §6.5 projections

@pytest.mark.parametrize("target,hbm,l2,tmem", [
    (H200, 141_000_000_000, 50_000_000, None),
    (B200, 180_000_000_000, 132_644_864, 262_144),
    (H100, 80_000_000_000, 50_000_000, None),
], ids=["h200", "b200", "h100"])
def test_target_6_5_memory_hierarchy_projection(target, hbm, l2, tmem):
    facts = target.get_facts(MemoryHierarchyFacts)
    assert facts.explicit_levels == (
        ExplicitMemoryLevelFacts("gmem", hbm, "device", "target"),
        ExplicitMemoryLevelFacts("smem", 232_448, "cta", "cta"),
        ExplicitMemoryLevelFacts("rmem", 262_144, "sm", "thread"),
        ExplicitMemoryLevelFacts("tmem", tmem, "cta", "cta"),
    )
    assert facts.implicit_levels == (ImplicitMemoryLevelFacts("l1", None, "sm"),
                                     ImplicitMemoryLevelFacts("l2", l2, "device"))


def test_target_6_5_rmem_is_registers_times_four():
    for target in (H200, B200):
        arch = target.architecture_document
        assert arch.value("memory.register.count_per_sm") * 4 == \
            arch.value("memory.register.bytes_per_sm")


def test_target_6_5_throughput_projection():
    assert H200.get_facts(ThroughputFacts) == ThroughputFacts(
        (("bf16", 989_500_000_000_000), ("f16", 989_500_000_000_000),
         ("f32", 67_000_000_000_000), ("fp8e4m3", 1_979_000_000_000_000)),
        4_800_000_000_000, "gmem")
    assert B200.get_facts(ThroughputFacts) == ThroughputFacts(
        (("bf16", 2_250_000_000_000_000), ("f16", 2_250_000_000_000_000),
         ("f32", 75_000_000_000_000), ("f4e2m1", 9_000_000_000_000_000),
         ("fp8e4m3", 4_500_000_000_000_000)),
        7_672_320_000_000, "gmem")


def test_target_6_5_h200_unit_rates_table():
    facts = H200.get_facts(PerformanceServiceFacts)
    assert facts == PerformanceServiceFacts(
        unit_flops=(("bf16", 7_496_212_121_212), ("f16", 7_496_212_121_212),
                    ("f32", 507_575_757_575), ("fp8e4m3", 14_992_424_242_424)),
        unit_ops=(("integer", 126_893_939_394), ("predicate", 126_893_939_394),
                  ("select", 126_893_939_394), ("special", 31_723_484_848)),
        unit_bandwidth=(("gmem", 36_363_636_363),),
        unit="cta")
    assert facts.flops("f4e2m1") is None


def test_target_6_5_b200_unit_rates_table():
    facts = B200.get_facts(PerformanceServiceFacts)
    assert facts == PerformanceServiceFacts(
        unit_flops=(("bf16", 15_202_702_702_702), ("f16", 15_202_702_702_702),
                    ("f32", 506_756_756_756), ("f4e2m1", 60_810_810_810_810),
                    ("fp8e4m3", 30_405_405_405_405)),
        # companions §6.5 states none; derived as the H200's are (nvidia_b200_sxm.toml)
        unit_ops=(("integer", 126_689_189_189), ("predicate", 126_689_189_189),
                  ("select", 126_689_189_189), ("special", 31_672_297_297)),
        unit_bandwidth=(("gmem", 51_840_000_000),),
        unit="cta")


def test_target_6_5_unit_rates_are_integer_division_by_sm_count():
    for target in (H200, B200, H100):
        thr = target.get_facts(ThroughputFacts)
        svc = target.get_facts(PerformanceServiceFacts)
        sms = target.sm_count
        assert svc.unit_flops == tuple((d, r // sms) for d, r in thr.peak_flops_per_second)
        assert svc.bandwidth("gmem") == thr.memory_bandwidth_bytes_per_second // sms


def test_target_6_5_services_copied_from_the_document():
    svc = H200.get_facts(PerformanceServiceFacts)
    for kind, rate in svc.unit_ops:
        assert H200.device_document.value(f"service.{kind}") == rate


def test_target_6_5_parallel_capacity_is_sm_count():
    assert H200.get_facts(ParallelCapacityFacts) == ParallelCapacityFacts("cta", 132)
    assert B200.get_facts(ParallelCapacityFacts) == ParallelCapacityFacts("cta", 148)
    assert H100.get_facts(ParallelCapacityFacts) == ParallelCapacityFacts("cta", 132)


def test_target_6_5_observed_h200_row_split_durations():
    svc = H200.get_facts(PerformanceServiceFacts)
    assert _ceil_div(1024 * 10**9, svc.bandwidth("gmem")) == 29
    assert _ceil_div(256 * 10**9, svc.ops("special")) == 9
    assert _ceil_div(256 * 10**9, svc.flops("f32")) == 1


# ------------------------------------------------------------------------------ H100

def test_target_h100_published_figures():
    doc = H100.device_document
    expected = {
        "compute.sm_count": 132,
        "memory.hbm.capacity": 80_000_000_000,
        "memory.hbm.bandwidth": 3_350_000_000_000,
        "memory.l2.capacity": 50_000_000,
        "throughput.bf16": 989_400_000_000_000,
        "throughput.f16": 989_400_000_000_000,
        "throughput.fp8e4m3": 1_978_900_000_000_000,
        "throughput.f32": 66_900_000_000_000,
    }
    for path, value in expected.items():
        assert doc.value(path) == value, path
        assert doc.fact(path).origin == "vendor", path
    assert doc.value("throughput.f4e2m1") is None
    arch = H100.architecture_document
    assert arch.value("memory.shared.per_sm") == 228 * 1024
    assert arch.value("memory.shared.per_cta") == 227 * 1024
    assert arch.value("memory.unified_l1_shared.per_sm") == 256 * 1024


def test_target_h100_projections():
    assert H100.get_facts(ThroughputFacts).memory_bandwidth_bytes_per_second == 3_350_000_000_000
    svc = H100.get_facts(PerformanceServiceFacts)
    assert svc.unit_flops == (("bf16", 7_495_454_545_454), ("f16", 7_495_454_545_454),
                              ("f32", 506_818_181_818), ("fp8e4m3", 14_991_666_666_666))
    assert svc.unit_ops == (("integer", 126_704_545_455), ("predicate", 126_704_545_455),
                            ("select", 126_704_545_455), ("special", 31_676_136_364))
    assert svc.unit_bandwidth == (("gmem", 25_378_787_878),)
    assert H100.topology_limit("cta") == 132
