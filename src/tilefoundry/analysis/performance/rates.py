"""What performance reads of a target (through Facts only) and one occurrence's
modeled duration: the greater of its compute side and its movement side
(analysis §1.2.4)."""
from __future__ import annotations

from tilefoundry.errors import AnalysisError
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.metadata import locator
from tilefoundry.analysis.descriptor import family_facts
from tilefoundry.analysis.roofline import ceil_ns

__all__ = ["PerformanceRates", "rates_of", "duration", "moved_bytes"]


@frozen_record
class PerformanceRates:
    """What performance reads of one target at one level (through Facts only)."""

    level: str
    extent: int  # N: the static extent of the root topology
    parallel_units: int  # P
    service: object  # PerformanceServiceFacts
    bandwidth_level: str

    @property
    def waves(self) -> int:
        return -(-self.extent // self.parallel_units)


def _facts(target, facts_type):
    return family_facts("performance", target, facts_type)


def rates_of(target, level: str | None, topologies: tuple) -> PerformanceRates:
    """The target half of performance readiness (analysis §1.2): a positive
    ParallelCapacityFacts value for the selected level, and rates stated for
    that same level. Errors name what is missing (companions §7.6)."""
    from tilefoundry.target.facts import (
        ParallelCapacityFacts, PerformanceServiceFacts, ThroughputFacts,
    )

    capacity = _facts(target, ParallelCapacityFacts)
    if level is None:
        raise AnalysisError(
            "performance: no topology level was selected, so results cannot carry an "
            "execution placement")
    if capacity.topology != level:
        raise AnalysisError(
            f"performance: selected topology level '{level}', but the target's parallel "
            f"capacity is stated for '{capacity.topology}'")
    units = capacity.parallel_units
    if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
        raise AnalysisError(
            f"performance: the target's parallel capacity for '{level}' is {units!r}; "
            "a plan needs a positive number of parallel units")
    service = _facts(target, PerformanceServiceFacts)
    throughput = _facts(target, ThroughputFacts)
    if service.unit != level:
        raise AnalysisError(
            f"performance: the target states its one-unit throughputs for '{service.unit}', "
            f"not for the selected topology level '{level}'")
    extent = next((t.size for t in topologies if t.name == level), None)
    if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
        raise AnalysisError(
            f"performance: the root topology '{level}' has no static positive extent "
            f"({extent!r}), so its waves cannot be counted")
    return PerformanceRates(level, extent, units, service, throughput.bandwidth_level)


# ================================================================ durations


def _missing_rate(call, what: str, level: str) -> AnalysisError:
    return AnalysisError(
        f"performance: {locator(call)}: target states no one-unit throughput for {what} at "
        f"'{level}'")


def _dtype_name(call, key) -> str:
    from tilefoundry.ir.dtype import DTYPES

    name = getattr(key, "name", key)
    if not isinstance(name, str) or name not in DTYPES:
        raise AnalysisError(
            f"performance: {locator(call)}: recorded compute dtype {name!r} is not a DType name")
    return name


def duration(call, flops: tuple, service: tuple, moved: int, rates: PerformanceRates) -> int:
    """One occurrence's modeled duration in ns: max(compute side, movement side).
    Work of a dtype, kind or level without a one-unit rate refuses."""
    svc = rates.service
    compute = 0
    for key, amount in flops:
        if amount:
            name = _dtype_name(call, key)
            rate = svc.flops(name)
            if rate is None:
                raise _missing_rate(call, f"dtype '{name}'", rates.level)
            compute += ceil_ns(amount, rate)
    for kind, amount in service:
        if amount:
            rate = svc.ops(kind)
            if rate is None:
                raise _missing_rate(call, f"'{kind}' work", rates.level)
            compute += ceil_ns(amount, rate)
    movement = 0
    if moved:
        rate = svc.bandwidth(rates.bandwidth_level)
        if rate is None:
            raise _missing_rate(call, f"level '{rates.bandwidth_level}'", rates.level)
        movement = ceil_ns(moved, rate)
    return max(compute, movement)


def moved_bytes(per_unit: tuple, level: str) -> int:
    """Per-unit bytes read and written at ``level`` (the movement side of a duration)."""
    for name, amount in per_unit:
        if name == level:
            return amount.read + amount.write
    return 0
