"""performance (analysis §1.2.4): a CTA-local nominal timeline of the program
as written, scaled by the target's parallel capacity.

``ANALYZER`` requires compute-cost and memory and writes:

- ``PerformanceMetadata(timeline)`` on every Call with a modeled duration;
- ``PerformanceSummaryMetadata(timeline, waves)`` on the Function.

An occurrence's duration is read off its dependencies' records: the greater of
its compute side (``flops_per_unit`` / ``unit_flops`` per dtype plus
``service_per_unit`` / ``unit_ops`` per kind, each an exact integer ceiling in
ns) and its movement side (the ``bandwidth_level`` entry of
``TrafficMetadata.per_unit``, read plus write, / ``unit_bandwidth``). An
occurrence with none of those quantities is structural: no record, but it
still passes its producers' precedence on. Occurrences are laid out in inline
(printer) order on their exact participant sets; an authored loop is one
structured node whose body is solved once from the loop's own start.

The readiness checker (analysis §1.2, §2; companions §7.6) refuses, before any
analysis writes, a target without a positive parallel capacity for the selected
level, rates not stated for that level, and a timed occurrence without one valid
execution placement. Nothing of it makes the program invalid for compute-cost,
memory or roofline: it is bound only when performance is in the closure.

This module is the family's entry (the readiness check, the run, ``ANALYZER``);
beside it: ``timeline`` (the records and the timeline's layout), ``rates`` (what
is read of the target; one occurrence's duration) and ``participants`` (where
an occurrence runs, its execution placement).
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import ExecutionDomainMetadata, locator
from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.analysis.performance.participants import participants, placement
from tilefoundry.analysis.performance.rates import PerformanceRates, duration, moved_bytes, rates_of
from tilefoundry.analysis.performance.timeline import (
    PerformanceMetadata, PerformanceSummaryMetadata, Timeline, TimelineMetadata, arrange,
)

__all__ = [
    "TimelineMetadata",
    "PerformanceMetadata",
    "PerformanceSummaryMetadata",
    "PerformanceInputCheck",
    "PerformanceRates",
    "ANALYZER",
    "rates_of",
    "participants",
    "run_performance",
]


# ================================================================ readiness


class _CheckState:
    def __init__(self, ctx):
        self.ctx = ctx
        topologies = getattr(ctx.local, "topologies", ())
        self.topologies = topologies
        self.rates = rates_of(ctx.target, ctx.level, topologies)
        self.costs: dict = {}
        self.meshes: dict = {}
        self.counter = None  # memory's BoundaryCounter of this view, found on first use
        self.passed: set = set()  # the structures already found ready (_ready_key)


class PerformanceInputCheck:
    """Performance readiness (analysis §1.2, §2): a positive parallel capacity for
    the selected level, rates for that level, and one valid execution placement
    for every occurrence that will take time. Costing here is a question: the
    per-unit quantities are asked of the evaluator and the memory relations and
    never attached."""

    def __init__(self):
        self._state: _CheckState | None = None

    def _for(self, ctx) -> _CheckState:
        state = self._state
        if state is None or state.ctx is not ctx:  # another run's (or none): start afresh
            state = self._state = _CheckState(ctx)
        return state

    def check_target(self, ctx) -> None:
        self._state = _CheckState(ctx)

    def check_call(self, call, ctx) -> None:
        state = self._for(ctx)
        key = _ready_key(call, self._counter(state))
        if key is not None and key in state.passed:
            return
        self._check(call, state)
        if key is not None:
            state.passed.add(key)

    def _check(self, call, state: _CheckState) -> None:
        rates = state.rates
        cost = self._unit_cost(call, state)
        if cost is None:  # no evaluator: compute-cost refuses it with its own error
            return
        flops = tuple((k, v) for k, v in cost.flops.items() if v)
        service = tuple((k, v) for k, v in cost.service.items() if v)
        # a rate missing for work that is there refuses (never priced at zero)
        duration(call, flops, service, 0, rates)
        positions, why = placement(call, rates.level, rates.extent, state.meshes)
        bandwidth = rates.service.bandwidth(rates.bandwidth_level)
        if (flops or service) and why is not None:
            raise AnalysisError(why)
        if why is None and bandwidth is not None:
            return
        moved = self._unit_moved(call, state)
        if moved:
            duration(call, (), (), moved, rates)
            if why is not None:
                raise AnalysisError(why)

    def finish(self, function, ctx) -> None:
        self._for(ctx)
        self._state = None

    @staticmethod
    def _unit_cost(call, state: _CheckState):
        key = (call.op, tuple(a.type for a in call.args), call.type)
        try:
            if key in state.costs:
                return state.costs[key]
        except TypeError:
            key = None
        try:
            cost = state.ctx.local.evaluate(call)
        except (LookupError, TileFoundryError, TypeError, ValueError, IndexError,
                ZeroDivisionError):
            cost = None
        if key is not None:
            state.costs[key] = cost
        return cost

    @staticmethod
    def _counter(state: _CheckState):
        """Memory's BoundaryCounter of this view, found on first use."""
        if state.counter is None:
            from tilefoundry.analysis.memory import counter_for

            state.counter = counter_for(state.ctx.function, state.ctx.level, state.topologies)
        return state.counter

    @staticmethod
    def _unit_moved(call, state: _CheckState) -> int:
        """Per-unit bytes at bandwidth_level, asked of memory's own counting."""
        from types import SimpleNamespace

        from tilefoundry.analysis.memory import call_traffic_records

        asked = SimpleNamespace(level=state.ctx.level, topologies=state.topologies,
                                whole=state.ctx.whole)
        try:
            record = call_traffic_records([call], asked, PerformanceInputCheck._counter(state))[id(call)]
        except TileFoundryError:
            return 0  # memory refuses it itself, with its own error
        return moved_bytes(record.per_unit, state.rates.bandwidth_level)


def _ready_key(call, counter):
    """What readiness reads of a call: what decides its traffic records (memory's
    ``records_key``: op, operand and result types, the literals that matter;
    its cost reads less) and its execution domain (its placement); a whole
    model repeats a few hundred of these over thousands of calls. None:
    unhashable."""
    from tilefoundry.analysis.memory import records_key

    structure = call.structure  # it fixes the traffic key: nothing to build or hash
    if structure is not None:
        return structure, call.get_metadata(ExecutionDomainMetadata)
    traffic = records_key(call, counter)
    if traffic is None:
        return None
    try:
        key = (traffic, call.get_metadata(ExecutionDomainMetadata))
        hash(key)
    except TypeError:
        return None
    return key


# ================================================================ the run


def run_performance(function: Function, ctx) -> None:
    """AnalysisCallable: a PerformanceMetadata on every timed Call and the
    PerformanceSummaryMetadata on the Function, read off compute-cost and
    memory records."""
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata
    from tilefoundry.analysis.recomputation import loop_dependence
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.analysis.memory.records import MemoryMetadata, TrafficMetadata

    rates = rates_of(ctx.target, ctx.level, ctx.topologies)
    memory = function.get_metadata(MemoryMetadata)
    if memory is None or memory.allocation is None:
        raise AnalysisError(
            f"performance: function '{function.name}': memory placed none of its buffers (no "
            "MemoryMetadata allocation), so no time can be reported for its plan")
    durations: dict[int, int] = {}
    places: dict[int, frozenset] = {}
    meshes: dict = {}
    lengths: dict = {}  # (id(cost), id(traffic)) -> one occurrence's duration
    placed: dict = {}  # (id(domain), id(type)) -> placement's answer
    nodes = list(iter_nodes(function.body)) if function.body is not None else []
    for call in nodes:
        if not isinstance(call, Call):
            continue
        cost = call.get_metadata(ComputeCostMetadata)
        traffic = call.get_metadata(TrafficMetadata)
        if cost is None or traffic is None:
            raise AnalysisError(
                f"performance: {locator(call)}: carries no "
                f"{'ComputeCostMetadata' if cost is None else 'TrafficMetadata'} record to "
                "time it by")
        # calls of one structure share their records, domain and type: each
        # distinct pair is timed and placed once (the first call states a refusal)
        timed = (id(cost), id(traffic))
        length = lengths.get(timed)
        if length is None:
            moved = moved_bytes(traffic.per_unit, rates.bandwidth_level)
            length = lengths[timed] = duration(call, cost.flops_per_unit, cost.service_per_unit,
                                               moved, rates)
        if not length:
            continue  # structural: nothing to time, no record
        where = (id(call.get_metadata(ExecutionDomainMetadata)), id(call.type))
        found = placed.get(where)
        if found is None:
            found = placed[where] = placement(call, rates.level, rates.extent, meshes)
        positions, why = found
        if why is not None:
            raise AnalysisError(why)
        durations[id(call)] = length
        places[id(call)] = positions

    deps = loop_dependence(function, getattr(ctx, "call_sites", None))
    timeline = Timeline(durations, places)
    makespan, outer = timeline.solve(arrange(function, deps), 0)
    for call, start, end in outer:
        timeline.intervals[id(call)] = (call, start, end, 1, 0)
    for call, start, end, trips, stride in timeline.intervals.values():
        call.with_metadata(PerformanceMetadata(TimelineMetadata(start, end, trips, stride)))
    function.with_metadata(PerformanceSummaryMetadata(
        TimelineMetadata(0, makespan * rates.waves, 1, 0), rates.waves))


ANALYZER = Analyzer(
    selector="performance",
    run=run_performance,
    requires=("compute-cost", "memory"),
    produces=(PerformanceMetadata, PerformanceSummaryMetadata),
    input_checker=PerformanceInputCheck(),
)
