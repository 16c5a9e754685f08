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
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import ExecutionDomainMetadata, IRMetadata, locator
from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.analysis.roofline import ceil_ns

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



# ================================================================ records


@dataclass(frozen=True)
class TimelineMetadata:
    """One interval on the nominal timeline: a value, never a record of its own.

    Attributes:
        start_ns: modeled start, in ns.
        end_ns: modeled end, in ns.
        trips: number of executions represented by this interval.
        stride_ns: start-to-start distance between repeated executions.
    """

    start_ns: int = 0
    end_ns: int = 0
    trips: int = 1
    stride_ns: int = 0


@dataclass(frozen=True)
class PerformanceMetadata(IRMetadata):
    """One occurrence's interval within one local wave of its Function.

    Attributes:
        timeline: that occurrence's CTA-local interval.
    """

    timeline: TimelineMetadata

    family = "performance"


@dataclass(frozen=True)
class PerformanceSummaryMetadata(IRMetadata):
    """One Function's predicted time, and what reaching it took.

    Attributes:
        timeline: whole-Function envelope from zero, in ns.
        waves: physical waves required by the root topology.
    """

    timeline: TimelineMetadata
    waves: int

    family = "performance"


# ================================================================ facts


@dataclass(frozen=True)
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
    try:
        return target.get_facts(facts_type)
    except TileFoundryError as exc:
        raise AnalysisError(f"performance: {exc}") from None


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


# ================================================================ placement


def _level_layout(mesh, level: str):
    """(shape, strides, offset) of ``level``'s own position layout in ``mesh``
    (companions §2.2), or None when the mesh does not name ``level``."""
    from tilefoundry.ir.shard import ComposedLayout, c_order_strides

    if not any(t.name == level for t in mesh.topologies):
        return None
    levels = mesh.axis_levels()
    axes = [i for i, name in enumerate(levels) if name == level]
    names = [t.name for t in mesh.topologies]
    finer = 1
    for topology in mesh.topologies[names.index(level) + 1:]:
        finer *= topology.size
    layout = mesh.layout
    offset = 0
    if isinstance(layout, ComposedLayout):
        if layout.inner is not None:
            raise AnalysisError(
                f"its {level} Mesh has a non-identity inner layout, so its positions are not "
                "projectable")
        offset = layout.offset
        layout = layout.outer
    strides = layout.strides or c_order_strides(layout.shape)
    shape, steps = [], []
    for i in axes:
        stride = strides[i]
        if stride % finer:
            raise AnalysisError(
                f"its {level} Mesh stride {stride} is not a multiple of the {finer} finer "
                "positions, so its positions are not projectable")
        shape.append(layout.shape[i])
        steps.append(stride // finer)
    if offset % finer:
        raise AnalysisError(f"its {level} Mesh slice offset {offset} is not projectable")
    return tuple(shape), tuple(steps), offset // finer


def participants(mesh, level: str, size: int) -> frozenset | None:
    """The exact image of ``mesh``'s ``level`` positions (shard §5, companions
    §2.2): static, duplicate-free, inside ``[0, size)``; an unsliced mesh covers
    the whole level. None when the mesh does not name the level."""
    from tilefoundry.ir.dim import is_static

    found = _level_layout(mesh, level)
    if found is None:
        return None
    shape, steps, offset = found
    if not all(is_static(e) for e in shape):
        raise AnalysisError(f"its {level} Mesh has a symbolic extent, so its positions are not static")
    image = [offset + sum(c * s for c, s in zip(coord, steps))
             for coord in product(*(range(e) for e in shape))]
    positions = frozenset(image)
    if len(positions) != len(image):
        raise AnalysisError(f"its {level} Mesh names a position twice, so its participants are not exact")
    if image and (min(image) < 0 or max(image) >= size):
        raise AnalysisError(
            f"its {level} Mesh reaches positions {sorted(positions)} outside [0, {size})")
    if not mesh.is_sliced and len(positions) != size:
        raise AnalysisError(
            f"its unsliced {level} Mesh covers {len(positions)} of the {size} positions; "
            "a strict subset needs a slice")
    return positions


def _result_meshes(call):
    """The meshes the call's result leaves are laid out on (looking through a
    static-offset view to its outer shard)."""
    from tilefoundry.ir.shard import ComposedLayout, ShardLayout
    from tilefoundry.ir.tensor_type import tensor_leaves

    meshes = []
    for leaf in tensor_leaves(call.type):
        shard = leaf.shard
        if isinstance(shard, ComposedLayout) and isinstance(shard.outer, ShardLayout):
            shard = shard.outer
        if isinstance(shard, ShardLayout) and shard.mesh not in meshes:
            meshes.append(shard.mesh)
    return meshes


def _positions(mesh, level, size, call, memo: dict):
    key = mesh
    if key not in memo:
        try:
            memo[key] = participants(mesh, level, size)
        except AnalysisError as exc:
            raise AnalysisError(f"performance: {locator(call)}: {exc}") from None
    return memo[key]


def placement(call, level: str, size: int, memo: dict) -> tuple[frozenset | None, str | None]:
    """(participants, None) for a valid execution placement, else (None, why).

    The execution region is the innermost enclosing Mesh naming ``level``; a
    result laid out on a Mesh naming ``level`` must be laid out on exactly those
    positions; a result carrying no ShardLayout does not unplace it."""
    domain = call.get_metadata(ExecutionDomainMetadata)
    mesh = domain.at(level) if domain is not None else None
    if mesh is None:
        return None, (
            f"performance: {locator(call)}: has no {level} execution domain; it was authored "
            f"outside any {level} Mesh, and where its result was laid out does not say where "
            f"the work ran. Write it inside a Mesh of that level")
    try:
        runs_on = _positions(mesh, level, size, call, memo)
        laid = [(m, _positions(m, level, size, call, memo)) for m in _result_meshes(call)]
    except AnalysisError as exc:
        return None, str(exc)
    for _, laid_out in laid:
        if laid_out is not None and laid_out != runs_on:
            return None, (
                f"performance: {locator(call)}: runs on {level} positions {sorted(runs_on)} but "
                f"its result is laid out on {sorted(laid_out)}; a result cannot be placed where "
                "the work that made it never ran")
    return runs_on, None


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


# ================================================================ readiness


class _CheckState:
    def __init__(self, ctx):
        self.ctx = ctx
        topologies = getattr(ctx.local, "topologies", ())
        self.topologies = topologies
        self.rates = rates_of(ctx.target, ctx.level, topologies)
        self.costs: dict = {}
        self.meshes: dict = {}
        self.counter = None  # memory's BoundaryCounter for this run, made on first use


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
    def _unit_moved(call, state: _CheckState) -> int:
        """Per-unit bytes at bandwidth_level, asked of memory's own counting."""
        from types import SimpleNamespace

        from tilefoundry.analysis.memory import call_traffic_records
        from tilefoundry.analysis.memory.traffic import BoundaryCounter

        asked = SimpleNamespace(level=state.ctx.level, topologies=state.topologies,
                                whole=state.ctx.whole)
        if state.counter is None:
            state.counter = BoundaryCounter(state.ctx.level, state.topologies)
        try:
            record = call_traffic_records([call], asked, state.counter)[id(call)]
        except TileFoundryError:
            return 0  # memory refuses it itself, with its own error
        return moved_bytes(record.per_unit, state.rates.bandwidth_level)


# ================================================================ the timeline


def _arrange(function: Function, deps: dict) -> list:
    """The inline (printer) occurrence order as a tree: ``("call", call)`` and
    ``("loop", loop, body)`` items. A body item reading nothing of its loop is
    loop-invariant and stays a single occurrence before the loop."""

    seen: set[int] = set()

    def visit(node, items: list):
        if id(node) in seen or isinstance(node, (Var, Constant)):
            return
        seen.add(id(node))
        if isinstance(node, Tuple):
            for field in node.fields:
                visit(field, items)
        elif isinstance(node, GridRegionExpr):
            for init in node.inits:
                visit(init, items)
            body: list = []
            for value in node.yields:
                visit(value, body)
            kept: list = []
            for item in body:
                target = kept if node in deps.get(id(item[1]), ()) else items
                target.append(item)
            items.append(("loop", node, kept))
        elif isinstance(node, Call):
            for arg in node.args:
                visit(arg, items)
            items.append(("call", node))

    top: list = []
    if function.body is not None:
        visit(function.body, top)
    return top


class _Timeline:
    def __init__(self, durations: dict, places: dict):
        self.durations = durations  # id(call) -> ns (> 0 only)
        self.places = places  # id(call) -> frozenset of positions
        self.ready: dict[int, int] = {}
        self.free: dict[int, int] = {}
        self.intervals: dict[int, tuple] = {}  # id(call) -> (call, start, end, trips, stride)

    def ready_of(self, node) -> int:
        if isinstance(node, Tuple):
            return max((self.ready_of(f) for f in node.fields), default=0)
        return self.ready.get(id(node), 0)

    def positions(self, items) -> set:
        found: set = set()
        for item in items:
            if item[0] == "call":
                found |= self.places.get(id(item[1]), frozenset())
            else:
                found |= self.positions(item[2])
        return found

    def solve(self, items: list, begin: int) -> tuple[int, list]:
        """Lay ``items`` out from ``begin``; return (end, the calls directly here)."""
        end = begin
        direct = []
        for item in items:
            node = item[1]
            if item[0] == "call":
                start = max([begin] + [self.ready_of(a) for a in node.args])
                length = self.durations.get(id(node), 0)
                if length:
                    busy = self.places[id(node)]
                    start = max([start] + [self.free.get(p, 0) for p in busy])
                    for p in busy:
                        self.free[p] = start + length
                    direct.append((node, start, start + length))
                self.ready[id(node)] = start + length
                end = max(end, start + length)
                continue
            loop, body = node, item[2]
            busy = self.positions(body)
            start = max([begin] + [self.ready_of(v) for v in loop.inits]
                        + [self.free.get(p, 0) for p in busy])
            for var in (loop.induction_var, *loop.carried):
                self.ready[id(var)] = start
            body_end, inner = self.solve(body, start)
            stride = body_end - start
            trips = loop.trips
            for call, s, e in inner:
                self.intervals[id(call)] = (call, s, e, trips, stride)
            finish = start + trips * stride
            for p in busy:
                self.free[p] = finish
            self.ready[id(loop)] = finish
            end = max(end, finish)
        return end, direct


def run_performance(function: Function, ctx) -> None:
    """AnalysisCallable: a PerformanceMetadata on every timed Call and the
    PerformanceSummaryMetadata on the Function, read off compute-cost and
    memory records."""
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata, loop_dependence
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
        moved = moved_bytes(traffic.per_unit, rates.bandwidth_level)
        length = duration(call, cost.flops_per_unit, cost.service_per_unit, moved, rates)
        if not length:
            continue  # structural: nothing to time, no record
        positions, why = placement(call, rates.level, rates.extent, meshes)
        if why is not None:
            raise AnalysisError(why)
        durations[id(call)] = length
        places[id(call)] = positions

    deps = loop_dependence(function, getattr(ctx, "call_sites", None))
    timeline = _Timeline(durations, places)
    makespan, outer = timeline.solve(_arrange(function, deps), 0)
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
