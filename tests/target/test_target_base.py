"""companions.md §6.1 (base contract) and spec analysis.md §2.2 (get_analyzer)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import pytest

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.target import (
    AmxTarget,
    AnalyzerUnavailableError,
    CpuTarget,
    CudaTarget,
    MemoryHierarchyFacts,
    NoFactsProjectionError,
    ParallelCapacityFacts,
    PerformanceServiceFacts,
    Target,
    TargetError,
    ThroughputFacts,
    TopologyLimitFacts,
    TopologyValidationError,
    register_target,
)
from tilefoundry.target.base import STANDARD_ANALYZERS

H200 = CudaTarget("nvidia.h200_sxm")


# ------------------------------------------------------------------ values, identity

def test_target_6_1_targets_are_immutable_values():
    with pytest.raises(dataclasses.FrozenInstanceError):
        H200.device = "nvidia.b200_sxm"
    with pytest.raises(dataclasses.FrozenInstanceError):
        AmxTarget().device = "x"


def test_target_6_1_targets_compare_and_hash_by_value():
    assert CudaTarget("nvidia.h200_sxm") == H200
    assert hash(CudaTarget("nvidia.h200_sxm")) == hash(H200)
    assert CudaTarget("nvidia.b200_sxm") != H200
    assert AmxTarget() == AmxTarget("apple.m2_pro")
    assert CpuTarget() == CpuTarget()
    assert CpuTarget() != AmxTarget()
    assert len({H200, CudaTarget("nvidia.h200_sxm"), CpuTarget(), CpuTarget()}) == 2


def test_target_6_1_class_variables_name_and_levels():
    assert (CudaTarget.name, CudaTarget.topology_levels) == ("cuda", ("cta", "thread"))
    assert (AmxTarget.name, AmxTarget.topology_levels) == ("amx", ("core", "amx"))
    assert (CpuTarget.name, CpuTarget.topology_levels) == ("cpu", ())


def test_target_6_1_identity_is_device_document_id_else_name():
    assert H200.identity == "nvidia.h200_sxm"
    assert CudaTarget("nvidia.b200_sxm").identity == "nvidia.b200_sxm"
    assert AmxTarget().identity == "apple.m2_pro"
    assert CpuTarget().identity == "cpu"


def test_target_6_1_available_lists_constructible_values():
    assert CudaTarget.available() == (CudaTarget("nvidia.b200_sxm"),
                                      CudaTarget("nvidia.h100_sxm"),
                                      CudaTarget("nvidia.h200_sxm"))
    assert AmxTarget.available() == (AmxTarget("apple.m2_pro"),)
    assert CpuTarget.available() == (CpuTarget(),)


def test_target_6_1_repr_is_the_constructor():
    assert repr(H200) == 'CudaTarget("nvidia.h200_sxm")'
    assert repr(AmxTarget()) == 'AmxTarget("apple.m2_pro")'
    assert repr(CpuTarget()) == "CpuTarget()"


# -------------------------------------------------------------------- registration

def test_target_6_1_register_same_class_is_idempotent(clean_registry):
    assert register_target(CudaTarget) is CudaTarget
    assert register_target(CudaTarget) is CudaTarget
    assert clean_registry.registered_targets()["cuda"] is CudaTarget


def test_target_6_1_register_other_class_claiming_name_fails(clean_registry):
    class Impostor(Target):
        name: ClassVar[str] = "cuda"

    with pytest.raises(TargetError, match=r"name 'cuda' is already registered to .*CudaTarget"):
        register_target(Impostor)
    assert clean_registry.registered_targets()["cuda"] is CudaTarget


def test_target_6_1_register_new_class_is_listed(clean_registry):
    @register_target
    @dataclass(frozen=True)
    class ToyTarget(Target):
        name: ClassVar[str] = "toy"
        topology_levels: ClassVar[tuple[str, ...]] = ("tile",)

    assert clean_registry.registered_targets()["toy"] is ToyTarget
    assert ToyTarget() in clean_registry.available_targets()
    assert clean_registry.resolve_identity("toy") == ToyTarget()


def test_target_6_1_register_requires_target_subclass_with_own_name(clean_registry):
    with pytest.raises(TargetError, match="not a Target subclass"):
        register_target(int)

    class Nameless(Target):
        pass

    with pytest.raises(TargetError, match="declares no 'name'"):
        register_target(Nameless)


# --------------------------------------------------------------------------- facts

def test_target_6_1_get_facts_unknown_projection_message():
    with pytest.raises(NoFactsProjectionError) as info:
        AmxTarget().get_facts(PerformanceServiceFacts)
    assert str(info.value) == "AmxTarget (amx): no Facts projection for 'PerformanceServiceFacts'"
    with pytest.raises(NoFactsProjectionError) as info:
        CpuTarget().get_facts(MemoryHierarchyFacts)
    assert str(info.value) == "CpuTarget (cpu): no Facts projection for 'MemoryHierarchyFacts'"


def test_target_6_1_get_facts_failure_is_an_analysis_error():
    with pytest.raises(AnalysisError):
        CpuTarget().get_facts(ParallelCapacityFacts)


def test_target_6_1_get_facts_no_fallback_for_foreign_type():
    class NotAFacts:
        pass

    with pytest.raises(NoFactsProjectionError, match="no Facts projection for 'NotAFacts'"):
        H200.get_facts(NotAFacts)


def test_target_6_1_get_facts_returns_frozen_aggregates():
    for facts_type in (MemoryHierarchyFacts, ThroughputFacts, PerformanceServiceFacts,
                       ParallelCapacityFacts):
        facts = H200.get_facts(facts_type)
        assert isinstance(facts, facts_type)
        assert dataclasses.is_dataclass(facts)
        first = dataclasses.fields(facts)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(facts, first, None)


def test_target_6_1_get_facts_is_stable_across_calls():
    assert H200.get_facts(ThroughputFacts) == CudaTarget("nvidia.h200_sxm").get_facts(ThroughputFacts)


def test_target_6_1_topology_limit_facts_query_is_the_level():
    assert H200.get_facts(TopologyLimitFacts, "thread") == TopologyLimitFacts("thread", 1024)
    assert H200.get_facts(TopologyLimitFacts, "cta") == TopologyLimitFacts("cta", None)
    assert AmxTarget().get_facts(TopologyLimitFacts, "core") == TopologyLimitFacts("core", 8)
    assert AmxTarget().get_facts(TopologyLimitFacts, "amx") == TopologyLimitFacts("amx", 1)
    with pytest.raises(TargetError, match="needs the topology level"):
        H200.get_facts(TopologyLimitFacts)
    with pytest.raises(TopologyValidationError, match="unsupported topology level 'warp'"):
        H200.get_facts(TopologyLimitFacts, "warp")


def test_target_6_1_query_refused_where_an_aggregate_takes_none():
    with pytest.raises(TargetError, match="'ThroughputFacts' takes no query"):
        H200.get_facts(ThroughputFacts, "cta")


# ------------------------------------------------------------------------ topology

def test_target_6_1_unknown_level_message():
    with pytest.raises(TopologyValidationError) as info:
        H200.validate_program_topology("core", 4)
    assert str(info.value) == ("CudaTarget (cuda): unsupported topology level 'core'; "
                               "supported levels are ('cta', 'thread')")


def test_target_6_1_nonpositive_extent_message():
    for extent in (0, -3):
        with pytest.raises(TopologyValidationError) as info:
            H200.validate_program_topology("cta", extent)
        assert str(info.value) == f"CudaTarget (cuda): topology 'cta' extent {extent} must be positive"


def test_target_6_1_over_limit_extent_message():
    with pytest.raises(TopologyValidationError) as info:
        H200.validate_program_topology("thread", 1025)
    assert str(info.value) == ("CudaTarget (cuda): topology 'thread' extent 1025 must satisfy "
                               "1 <= extent <= 1024")
    with pytest.raises(TopologyValidationError) as info:
        AmxTarget().validate_program_topology("core", 9)
    assert str(info.value) == "AmxTarget (amx): topology 'core' extent 9 must satisfy 1 <= extent <= 8"


def test_target_6_1_valid_extents_pass():
    H200.validate_program_topology("cta", 1_000_000)  # no static cta limit
    H200.validate_program_topology("thread", 1024)
    AmxTarget().validate_program_topology("core", 8)
    AmxTarget().validate_program_topology("amx", 1)
    with pytest.raises(TopologyValidationError):
        AmxTarget().validate_program_topology("amx", 2)


def test_target_6_2_amx_refuses_symbolic_extents():
    with pytest.raises(TopologyValidationError, match="extent N must be a static integer"):
        AmxTarget().validate_program_topology("core", "N")
    H200.validate_program_topology("cta", "N")  # CUDA: checked once concrete


def test_target_6_2_cpu_refuses_every_level():
    with pytest.raises(TopologyValidationError) as info:
        CpuTarget().validate_program_topology("cta", 1)
    assert str(info.value) == ("CpuTarget (cpu): unsupported topology level 'cta'; "
                               "supported levels are ()")


def test_target_6_2_topology_limit():
    assert H200.topology_limit("cta") == 132  # scheduling: SM count
    assert CudaTarget("nvidia.b200_sxm").topology_limit("cta") == 148
    assert H200.topology_limit("thread") == 1024
    assert AmxTarget().topology_limit("core") == 8
    assert AmxTarget().topology_limit("amx") == 1
    with pytest.raises(TopologyValidationError, match="unsupported topology level 'x'"):
        H200.topology_limit("x")


# ----------------------------------------------------------------------- analyzers

def test_analysis_2_2_base_supplies_four_standard_analyzers(fake_analysis_modules):
    for target in (H200, AmxTarget(), CpuTarget()):
        for selector in ("compute-cost", "memory", "roofline", "performance"):
            assert target.get_analyzer(selector) is fake_analysis_modules[selector]
    assert set(STANDARD_ANALYZERS) == {"compute-cost", "memory", "roofline", "performance",
                                       "collectives", "estimate"}


def test_target_6_1_unknown_analyzer_message():
    with pytest.raises(AnalyzerUnavailableError) as info:
        H200.get_analyzer("bogus")
    assert str(info.value) == "CudaTarget (cuda): no analyzer for 'bogus'"
    assert isinstance(info.value, AnalysisError)


def test_analysis_2_2_analyzer_is_imported_lazily(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "tilefoundry.analysis.roofline", raising=False)

    class Lazy(Target):
        name: ClassVar[str] = "lazy"
        analyzer_paths = {"roofline": "tilefoundry_no_such_module.roofline:ANALYZER"}

    with pytest.raises(AnalyzerUnavailableError,
                       match="analyzer 'roofline' is declared at 'tilefoundry_no_such_module"):
        Lazy().get_analyzer("roofline")


def test_analysis_2_2_missing_attribute_is_reported(fake_analysis_modules):
    class Broken(Target):
        name: ClassVar[str] = "broken"
        analyzer_paths = {"memory": "tests_fake_custom_analysis:NOPE"}

    with pytest.raises(AnalyzerUnavailableError, match="has no attribute 'NOPE'"):
        Broken().get_analyzer("memory")


def test_analysis_2_2_subclass_inherits_overrides_and_refuses(fake_analysis_modules):
    @dataclass(frozen=True)
    class TunedGpu(Target):
        name: ClassVar[str] = "tuned"
        topology_levels: ClassVar[tuple[str, ...]] = ("cta",)
        analyzer_paths = {
            "memory": "tests_fake_custom_analysis:ANALYZER",   # override one
            "performance": None,                              # refuse one
            "occupancy": "tests_fake_custom_analysis:EXTRA",  # add one
        }

    gpu = TunedGpu()
    assert gpu.get_analyzer("compute-cost") is fake_analysis_modules["compute-cost"]
    assert gpu.get_analyzer("roofline") is fake_analysis_modules["roofline"]
    assert gpu.get_analyzer("memory") is fake_analysis_modules["custom-memory"]
    assert gpu.get_analyzer("occupancy") is fake_analysis_modules["occupancy"]
    with pytest.raises(AnalyzerUnavailableError) as info:
        gpu.get_analyzer("performance")
    assert str(info.value) == "TunedGpu (tuned): refuses analyzer 'performance' on this hardware"
    assert gpu.analyzer_selectors() == ("collectives", "compute-cost", "estimate", "memory",
                                        "occupancy", "roofline")
    # the base class is untouched
    assert H200.get_analyzer("memory") is fake_analysis_modules["memory"]

    class Grandchild(TunedGpu):
        name: ClassVar[str] = "grandchild"
        analyzer_paths = {"performance": "tilefoundry.analysis.performance:ANALYZER"}

    child = Grandchild()
    assert child.get_analyzer("memory") is fake_analysis_modules["custom-memory"]
    assert child.get_analyzer("performance") is fake_analysis_modules["performance"]


def test_analysis_2_2_subclass_may_override_method_and_delegate(fake_analysis_modules):
    sentinel = object()

    class Delegating(Target):
        name: ClassVar[str] = "delegating"

        def get_analyzer(self, selector):
            if selector == "roofline":
                return sentinel
            return super().get_analyzer(selector)

    target = Delegating()
    assert target.get_analyzer("roofline") is sentinel
    assert target.get_analyzer("memory") is fake_analysis_modules["memory"]


def test_analysis_2_2_object_entry_is_the_analyzer_itself():
    marker = object()

    class Direct(Target):
        name: ClassVar[str] = "direct"
        analyzer_paths = {"compute-cost": marker}

    assert Direct().get_analyzer("compute-cost") is marker


def test_target_errors_are_tilefoundry_errors():
    for cls in (TargetError, NoFactsProjectionError, AnalyzerUnavailableError,
                TopologyValidationError):
        assert issubclass(cls, TileFoundryError)


def test_analysis_2_2_broken_analyzer_module_is_not_masked(monkeypatch, tmp_path):
    """A missing dependency *inside* an existing analyzer module is a bug: it propagates."""
    import sys

    (tmp_path / "tests_fake_broken_analysis.py").write_text(
        "import tilefoundry_definitely_missing_dependency\nANALYZER = object()\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class Fragile(Target):
        name: ClassVar[str] = "fragile"
        analyzer_paths = {"memory": "tests_fake_broken_analysis:ANALYZER"}

    with pytest.raises(ModuleNotFoundError, match="tilefoundry_definitely_missing_dependency"):
        Fragile().get_analyzer("memory")
    sys.modules.pop("tests_fake_broken_analysis", None)
