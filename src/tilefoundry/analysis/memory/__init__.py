"""The memory family (analysis §1.2.2): lifetimes, footprints, placement and
traffic. This module is the family's entry (``ANALYZER``, as Targets name it:
``tilefoundry.analysis.memory:ANALYZER``), its input check and its run; the
parts it calls are beside it:

- ``records``: the family's records (TrafficMetadata ... MemoryMetadata);
- ``traffic``: what one occurrence moves, counted off its access relations;
- ``point_counts``: the number of points of an access image (isl), kept per text;
- ``footprints``: value lifetimes, level footprints, capacity advisories;
- ``loop_footprints``: authored-loop access footprints and cache pressure;
- ``allocation``: whether the addressable buffers fit (the packing solve).

``run_memory`` attaches a TrafficMetadata to every reachable Call and to the
Function, a LoopFootprintMetadata to every authored loop, and one
MemoryMetadata to the Function. Hardware is read only through
``MemoryHierarchyFacts``; a target without it is refused by the input checker
before any analysis writes (``memory: <Class> (<name>): no Facts projection
for 'MemoryHierarchyFacts'``).
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.metadata import SourceSpanMetadata, value_name
from tilefoundry.analysis.descriptor import Analyzer, TargetFactsCheck, family_facts
from tilefoundry.analysis.memory.records import (  # noqa: F401  (the family's vocabulary)
    AllocationMetadata, BufferFootprint, LevelFootprint, LoopFootprintMetadata, MemoryMetadata,
    TrafficBytes, TrafficMetadata, ValueLifetime,
)

__all__ = ["ANALYZER", "run_memory", "hierarchy_of", "AllocationMetadata",
           "BufferFootprint", "LevelFootprint", "LoopFootprintMetadata", "MemoryMetadata",
           "TrafficMetadata", "ValueLifetime"]


def hierarchy_of(target):
    from tilefoundry.target.facts import MemoryHierarchyFacts

    return family_facts("memory", target, MemoryHierarchyFacts)


def _locator(call) -> str:
    span = call.get_metadata(SourceSpanMetadata)
    label = value_name(call)
    return f"{span} variable '{label}'" if span else label


def _directions(call, whole, memo):
    from tilefoundry.semantics.op_registry import COST_EVALUATORS

    handler = COST_EVALUATORS.get(type(call.op))
    if handler is None:
        name = type(call.op).__name__
        raise AnalysisError(f"{name}: no cost evaluator registered for {name}\n  at {_locator(call)}")
    cost = handler(call, whole.bind(call))
    if len(cost.traffic) != len(call.args) + 1:
        raise AnalysisError(
            f"{_locator(call)}: its cost evaluator states {len(cost.traffic)} traffic entries for "
            f"{len(call.args) + 1} operands"
        )
    return tuple((t.read != 0, t.write != 0) for t in cost.traffic)


def records_key(call, counter):
    """``_key(call)``, once per call structure (``Call.structure``; a call
    without one, once per call) on ``counter`` (None: unhashable, counted
    afresh): _key reads only what the structure fixes."""
    slot = _slot(call)
    kept = counter.keys.get(slot)
    if kept is not None:
        return kept[1]
    try:
        key = _key(call)
        hash(key)
    except TypeError:
        key = None
    counter.keys[slot] = (call, key)  # the call kept alive: its id stays unique
    return key


def _slot(call):
    structure = call.structure
    return id(call) if structure is None else structure


def _key(call):
    """A call's traffic by what decides it: op, operand and result types, and
    the literal operands' values -- except the literal starts of a window into
    an unsharded tensor (``_moved_window``), which only move its image."""
    from tilefoundry.ir.expr import Constant, Tuple

    moved = _moved_window(call)
    literals = []
    for arg in call.args[:1] if moved else call.args:
        for node in (arg.fields if isinstance(arg, Tuple) else (arg,)):
            literals.append(node.value if isinstance(node, Constant) else None)
    if moved:
        literals.append(("moved", len(call.args[1].fields)))
    return (call.op, tuple(a.type for a in call.args), call.type, tuple(map(repr, literals)))


def _moved_window(call) -> bool:
    """A Slice at literal starts of a tensor no participant clips (unsharded):
    typeinfer refuses a literal window outside the tensor's box, so every
    start moves the same image inside it, and each count is the same (a
    layer's window of the stacked KV cache, repeated for every layer)."""
    from tilefoundry.analysis.memory.loop_structure import literal_starts
    from tilefoundry.ir.tensor_type import TensorType

    if type(call.op).__name__ != "Slice" or len(call.args) != 2 or not literal_starts(call.args[1]):
        return False
    source = call.args[0].type
    return (isinstance(source, TensorType) and source.shard is None
            and all(type(d) is int for d in (*call.op.sizes, *call.op.strides, *source.shape)))


_COUNTERS: list = []  # (function, level, topologies, counter): the last few views counted
_COUNTERS_KEPT = 2


def counter_for(function, level, topologies):
    """The BoundaryCounter of one view and level. The performance readiness
    check counts a view's calls before the family runs, and the family counts
    them all again: one counter serves both (it holds only what the calls'
    structure decides). The view is kept beside it, so its calls' ids stay
    unique while the counter's per-call tables are alive."""
    from tilefoundry.analysis.memory.traffic import BoundaryCounter

    topologies = tuple(topologies)
    for kept_function, kept_level, kept_topologies, counter in _COUNTERS:
        if kept_function is function and kept_level == level and kept_topologies == topologies:
            return counter
    counter = BoundaryCounter(level, topologies)
    _COUNTERS.insert(0, (function, level, topologies, counter))
    del _COUNTERS[_COUNTERS_KEPT:]
    return counter


def call_traffic_records(calls, ctx, counter) -> dict:
    """id(call) -> TrafficMetadata of one occurrence (memoised structurally, on
    ``counter``: the readiness check asks one call at a time, and the family
    asks again for them all, with one counter per run)."""
    from tilefoundry.analysis.memory.traffic import call_traffic

    memo = counter.records
    records = {}
    for call in calls:
        structure = call.structure
        if structure is not None:  # one memo lookup where the structure was met before
            record = memo.get(structure)
            if record is not None:
                records[id(call)] = record
                continue
        key = records_key(call, counter)
        record = memo.get(key) if key is not None else None
        if record is None:
            directions = _directions(call, ctx.whole, memo)
            try:
                whole, unit, operands = call_traffic(call, directions, counter)
            except TileFoundryError as exc:
                first = exc.reason
                if "no access relation" in first:
                    raise AnalysisError(
                        f"{_locator(call)}: states no access relations, so nothing here says "
                        "what it moves") from None
                raise AnalysisError(f"{_locator(call)}: memory: {first}") from None
            record = TrafficMetadata(
                whole=tuple((lvl, TrafficBytes(r, w)) for lvl, (r, w) in whole),
                per_unit=tuple((lvl, TrafficBytes(r, w)) for lvl, (r, w) in unit),
                operands=tuple(TrafficBytes(r, w) for r, w in operands),
            )
            if key is not None:
                memo[key] = record
        if structure is not None and key is not None:
            memo[structure] = record
        records[id(call)] = record
    return records


def _sum(weighted, field):
    total: dict = {}
    for record, factor in weighted:
        for level, tb in getattr(record, field):
            r, w = total.get(level, (0, 0))
            total[level] = (r + tb.read * factor, w + tb.write * factor)
    return tuple((lvl, TrafficBytes(r, w)) for lvl, (r, w) in sorted(total.items()))


def run_memory(function, ctx) -> None:
    """AnalysisCallable: traffic, loop footprints, lifetimes, placement."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.analysis.recomputation import occurrence_weights, recomputation_factors
    from tilefoundry.analysis.memory.footprints import (
        check_single_values, level_footprints, lifetimes_of, peak_advisories,
        sharing_advisories, value_label,
    )
    from tilefoundry.analysis.memory.loop_footprints import loop_footprints, loop_advisories
    from tilefoundry.analysis.memory.allocation import ADDRESSABLE, settle_allocation

    hierarchy = hierarchy_of(ctx.target)
    nodes = list(iter_nodes(function.body)) if function.body is not None else []
    calls = [n for n in nodes if isinstance(n, Call)]
    counter = counter_for(function, ctx.level, ctx.topologies)  # traffic, loops and readiness share it
    records = call_traffic_records(calls, ctx, counter)
    # the factor every family multiplies by (a Function call inside a loop
    # reruns its whole inlined body each trip: analysis 1.2.1)
    factors = recomputation_factors(function, call_sites=getattr(ctx, "call_sites", None))

    target_levels = tuple(getattr(ctx.target, "topology_levels", ()))
    lifetimes = lifetimes_of(function, hierarchy, ctx.topologies, target_levels, value_label)
    check_single_values(function, lifetimes, hierarchy)
    footprint = level_footprints(lifetimes, hierarchy)
    allocation = settle_allocation(lifetimes, footprint, hierarchy, ctx.level, ctx.topologies,
                                   target_levels)
    loops = loop_footprints(function, ctx, lambda call: _directions(call, ctx.whole, None), counter)
    advisories = (peak_advisories(footprint, skip=ADDRESSABLE)
                  + sharing_advisories(footprint, hierarchy)
                  + loop_advisories(loops, hierarchy, footprint))

    for call in calls:
        call.with_metadata(records[id(call)])
    for loop, record in loops:
        loop.with_metadata(record)
    weighted = occurrence_weights(records.items(), factors)
    function.with_metadata(TrafficMetadata(whole=_sum(weighted, "whole"), per_unit=_sum(weighted, "per_unit")))
    function.with_metadata(MemoryMetadata(footprint, lifetimes, tuple(advisories), allocation))


ANALYZER = Analyzer(
    selector="memory",
    run=run_memory,
    requires=(),
    produces=(TrafficMetadata, MemoryMetadata, LoopFootprintMetadata),
    input_checker=TargetFactsCheck(hierarchy_of),  # memory needs MemoryHierarchyFacts
)
