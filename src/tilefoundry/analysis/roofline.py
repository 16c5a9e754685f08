"""roofline (analysis §1.2.3): recorded work turned into a lower time bound at
the target's published whole-device rates.

``ANALYZER`` requires compute-cost and memory and writes one
``RooflineMetadata(compute_ns, memory_ns, ideal_ns, bound_by)`` on every Call
that carries a ComputeCostMetadata and on the Function. Nothing is evaluated a
second time: the occurrence's ``ComputeCostMetadata.flops`` and the
``bandwidth_level`` entry of its ``TrafficMetadata.whole`` are the only inputs.
The Function reads its own (already loop-scaled) records, so its bound is the
summed work divided once, not a sum of per-Call times.

- ``compute_ns``: for each recorded dtype with a published rate
  (``ThroughputFacts.peak_for``), ``ceil(flops * 1e9 / rate)``; the dtype times
  are summed. A dtype with no published rate contributes nothing (no assumed
  rate).
- ``memory_ns``: ``ceil((read + write) * 1e9 / bandwidth)`` at
  ``bandwidth_level`` only; 0 when no bandwidth is published or no bytes move.
- ``ideal_ns``: ``max(compute_ns, memory_ns)``; 1 when the occurrence records
  nonzero flops or nonzero ``bandwidth_level`` bytes and neither side yields a
  bound (``bound_by="unrated"``), else 0 (``"none"``).
- ``bound_by``: ``compute`` / ``memory`` by the greater side, ``balanced`` for
  equal nonzero times.

Every division is exact integer ceiling division. Hardware is read only through
``ThroughputFacts``; a target without it is refused by the input checker
before any analysis writes (``roofline: <Class> (<name>): no Facts projection
for 'ThroughputFacts'``).
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.metadata import IRMetadata, locator
from tilefoundry.analysis.descriptor import Analyzer, TargetFactsCheck, family_facts

__all__ = [
    "RooflineMetadata",
    "ANALYZER",
    "throughput_of",
    "bound_of",
    "run_roofline",
]

NS_PER_SECOND = 1_000_000_000
RESOURCES = ("compute", "memory", "balanced", "unrated", "none")


@frozen_dataclass
class RooflineMetadata(IRMetadata):
    """A lower bound on time, and which side of the machine sets it.

    Attributes:
        compute_ns: Time the flops imply at the target's rates.
        memory_ns: Time the traffic imply at the target's bandwidth.
        ideal_ns: The ideal bound the two imply.
        bound_by: Which resource set the bound (compute, memory, balanced,
            unrated or none).
    """

    compute_ns: int = 0
    memory_ns: int = 0
    ideal_ns: int = 0
    bound_by: str = "none"

    family = "roofline"


def throughput_of(target):
    """The target's ThroughputFacts; a target without it is refused with the
    selector as prefix."""
    from tilefoundry.target.facts import ThroughputFacts

    return family_facts("roofline", target, ThroughputFacts)


def ceil_ns(amount: int, rate: int) -> int:
    """Exact integer ceiling of ``amount * 1e9 / rate`` (never through floats):
    the time of ``amount`` operations or bytes at ``rate`` per second, the one
    convention of every family that states a time."""
    return -(-(amount * NS_PER_SECOND) // rate)


def _where(node) -> str:
    if isinstance(node, Call):
        return locator(node)
    return f"function '{getattr(node, 'name', '?')}'"


def bound_of(flops, traffic, facts, where: str = "") -> RooflineMetadata:
    """The bound of one occurrence (or one Function) from its recorded
    ``flops`` ((dtype name, count) pairs) and ``traffic`` ((level,
    TrafficBytes) pairs, the whole figures), at ``facts``' rates."""
    from tilefoundry.ir.dtype import resolve_dtype

    compute_ns = 0
    worked = False
    for name, count in flops:
        try:
            dtype = resolve_dtype(name)
        except TileFoundryError:
            raise AnalysisError(
                f"roofline: {where}: recorded compute dtype {name!r} is not a DType name"
                if where else
                f"roofline: recorded compute dtype {name!r} is not a DType name") from None
        if count:
            worked = True
        rate = facts.peak_for(dtype)
        if rate is not None and count:
            compute_ns += ceil_ns(count, rate)
    moved = 0
    for level, amount in traffic:
        if level == facts.bandwidth_level:
            moved += amount.read + amount.write
    bandwidth = facts.memory_bandwidth_bytes_per_second
    memory_ns = ceil_ns(moved, bandwidth) if bandwidth and moved else 0
    if compute_ns == 0 and memory_ns == 0:
        if worked or moved:
            return RooflineMetadata(0, 0, 1, "unrated")
        return RooflineMetadata(0, 0, 0, "none")
    if compute_ns == memory_ns:
        bound = "balanced"
    elif memory_ns > compute_ns:
        bound = "memory"
    else:
        bound = "compute"
    return RooflineMetadata(compute_ns, memory_ns, max(compute_ns, memory_ns), bound)


def _records(node):
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata
    from tilefoundry.analysis.memory.records import TrafficMetadata

    cost = node.get_metadata(ComputeCostMetadata)
    if cost is None:
        raise AnalysisError(f"roofline: {_where(node)}: carries no compute-cost record to bound")
    traffic = node.get_metadata(TrafficMetadata)
    if traffic is None:
        raise AnalysisError(f"roofline: {_where(node)}: carries no traffic record to bound")
    return cost, traffic


def run_roofline(function, ctx) -> None:
    """AnalysisCallable: a RooflineMetadata on every measured Call and the Function."""
    from tilefoundry.analysis.check import iter_nodes

    facts = throughput_of(ctx.target)
    calls = [n for n in iter_nodes(function.body) if isinstance(n, Call)] \
        if function.body is not None else []
    found = []
    bounds: dict = {}  # (id(cost), id(traffic)) -> the one record: calls of one structure share both
    for call in calls:
        cost, traffic = _records(call)
        key = (id(cost), id(traffic))
        record = bounds.get(key)
        if record is None:
            record = bounds[key] = bound_of(cost.flops, traffic.whole, facts, _where(call))
        found.append((call, record))
    cost, traffic = _records(function)
    whole = bound_of(cost.flops, traffic.whole, facts, _where(function))
    for call, record in found:
        call.with_metadata(record)
    function.with_metadata(whole)


ANALYZER = Analyzer(
    selector="roofline",
    run=run_roofline,
    requires=("compute-cost", "memory"),
    produces=(RooflineMetadata,),
    input_checker=TargetFactsCheck(throughput_of),  # roofline needs ThroughputFacts
)
