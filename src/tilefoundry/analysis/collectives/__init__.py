"""collectives: every Reshard at the selected level as the inter-tile op it implies.

For each Reshard reached in the view: the source and destination ownership
tables at the level (``ownership``: companions §2.2 projection, idle
participants, replication, Partial), the classifier's verdict (seed §7.2–§7.3
and guards), and for an ``op`` verdict the KTIR delivery op (a completed
Partial is reduce / reduce_scatter, seed §4–§5), written as text, read back,
verified R1–R12 and executed by the numpy executor (on the real shapes up to
``EXECUTION_LIMIT`` elements, else on the cut grid, one element per slice).

Pricing is the direct delivery the op states, no tree or ring algorithm
assumed: a consumer receives each piece it needs once from the producer that
holds it, nothing from itself. consume: the partial; scatter: one C-th of it;
gather and reduce: every other producer's partial; all_to_all and
reduce_scatter: one C-th of every other producer's partial. Bytes are
``ceil(elements * bits / 8)``. ``bytes`` sums every participant's receipts over
the coarser-level ``instances``; ``sent`` / ``received`` are the largest
participant's. The ideal time is ``ceil(max(sent, received) * 1e9 / B)`` where
the target's ``ExchangeFacts`` state B for the level, else ``unavailable``.
The Function record sums the Reshards times their recomputation factor
(``analysis.recomputation``, the loop rule compute-cost states).

This module is the family's entry (records, pricing, the run, ``ANALYZER``);
``ownership`` beside it forms the ownership tables of two ShardLayouts.

A Reshard whose tables cannot be formed (dynamic extents, a strided share, an
unprojectable mesh) is recorded ``unformable`` with a one-line finding naming
its ``file:line:col``; a failed rule or a wrong delivery is a finding too.

A record reads only the reshard's two types and its location, so within one
run it is derived once per pair of types and each renamed copy (a model's 32
layers) takes it with its own location (``_Records``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from math import prod

from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.analysis.roofline import ceil_ns
from tilefoundry.errors import TileFoundryError, VerifyError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.metadata import IRMetadata, SourceSpanMetadata, value_name

__all__ = ["CollectivesMetadata", "CollectivesSummaryMetadata", "ANALYZER",
           "run_collectives", "price"]



@dataclass(frozen=True)
class CollectivesMetadata(IRMetadata):
    """One Reshard as an inter-tile exchange at the selected level.

    Attributes:
        verdict: op, no-op, not-inter-tile, unformable, or a classifier guard
            (insufficient-information, not-a-work-division-pair, selection).
        op: The KTIR delivery op (``inter_tile_gather``...) for an ``op`` verdict.
        reason: Why there is no op (the classifier's or the table's words).
        groups: Groups of the op (one coarser unit).
        M: Destination regions per component (seed §7.2), where defined.
        K: Source regions per component, where defined.
        instances: Independent copies of the exchange (coarser-level units).
        sent: Bytes the most-sending participant sends.
        received: Bytes the most-receiving participant receives.
        bytes: Bytes moved by every participant of every instance.
        sent_by: (participant, bytes sent) of one instance, nonzero only.
        received_by: (participant, bytes received) of one instance, nonzero only.
        verifies: Whether the written op passes R1–R12 (None: no op written).
        reproduces_destination: Whether executing it leaves every destination
            participant holding its region (None: not executed).
        time_ns: Ideal exchange time, or None when the bandwidth is unpublished.
        time: ``unavailable: <why>`` when time_ns is None.
        ktir: The KTIR module holding the op, or None.
        findings: One-line findings (rule failures, unformable tables).
    """

    verdict: str = "op"
    op: str | None = None
    reason: str = ""
    groups: int = 0
    M: int | None = None
    K: int | None = None
    instances: int = 1
    sent: int = 0
    received: int = 0
    bytes: int = 0
    sent_by: tuple[tuple[str, int], ...] = ()
    received_by: tuple[tuple[str, int], ...] = ()
    verifies: bool | None = None
    reproduces_destination: bool | None = None
    time_ns: int | None = None
    time: str = ""
    ktir: str | None = None
    findings: tuple = ()

    family = "collectives"


@dataclass(frozen=True)
class CollectivesSummaryMetadata(IRMetadata):
    """The Function's reshards: how many, which ops, what they move in total.

    Attributes:
        reshards: Reshard calls reached.
        ops: (op or verdict, count) over the reshards, sorted.
        bytes: Sum of every reshard's bytes times its recomputation factor.
        time_ns: Sum of the ideal times likewise, or None when one is unavailable.
        time: ``unavailable: <why>`` when time_ns is None.
        findings: Every reshard's findings, in program order.
    """

    reshards: int = 0
    ops: tuple[tuple[str, int], ...] = ()
    bytes: int = 0
    time_ns: int | None = None
    time: str = ""
    findings: tuple = ()

    family = "collectives"


# ---------------------------------------------------------------- pricing


def _piece(kind: str, partial: int, consumers: int) -> int:
    """Elements one producer sends one consumer."""
    return partial // consumers if kind in ("scatter", "all_to_all", "reduce_scatter") else partial


def price(plan, bits: int) -> tuple[dict, dict]:
    """(sent, received) bytes per participant of one instance of the op."""
    sent: dict[int, int] = {}
    received: dict[int, int] = {}
    elements = prod(plan.partial)
    for g, producers in plan.producers.items():
        consumers = plan.consumers[g]
        piece = _piece(plan.kind, elements, len(consumers))
        nbytes = -(-piece * bits // 8)
        for c in consumers:
            for p in producers:
                if p == c:
                    continue
                sent[p] = sent.get(p, 0) + nbytes
                received[c] = received.get(c, 0) + nbytes
    return sent, received


def exchange_bandwidth(target, level: str | None) -> tuple[int | None, str]:
    """(one unit's exchange B/s, why absent) as the target states them."""
    from tilefoundry.target.facts import ExchangeFacts

    if level is None:
        return None, "no topology level is selected"
    try:
        facts = target.get_facts(ExchangeFacts)
    except TileFoundryError:
        name = getattr(target, "identity", type(target).__name__)
        return None, f"{name} states no exchange bandwidth between '{level}' units"
    if facts.level != level:
        return None, (f"the target states its exchange bandwidth for '{facts.level}', "
                      f"not '{level}'")
    if facts.bandwidth_bytes_per_second is None:
        return None, facts.reason or f"no published exchange bandwidth at '{level}'"
    return facts.bandwidth_bytes_per_second, ""


# ---------------------------------------------------------------- one reshard


def _where(call) -> str:
    span = call.get_metadata(SourceSpanMetadata)
    name = value_name(call)
    return f"{span}: reshard '{name}'" if span else f"reshard '{name}'"


def _first_line(exc: Exception) -> str:
    from tilefoundry.errors import reason_of

    return reason_of(exc)


@dataclass
class _Level:
    """One topology level a collective crosses: its participants, the levels below, and its
    link bandwidth (or why it has no time)."""

    name: str | None
    size: int
    levels: tuple
    bandwidth: int | None
    why_no_time: str


def _unplaced(source, destination, level: str) -> str:
    """Why a reshard with an unplaced side is a load or store, not an exchange."""
    def placed(ttype) -> bool:
        shard = ttype.shard
        return shard is not None and level in [t.name for t in shard.mesh.topologies]
    side = "destination" if placed(source) else "source"
    verb = "stores" if side == "destination" else "loads"
    return (f"the {side} is not placed on a '{level}' mesh: each participant {verb} its own "
            "region (priced by --memory); no exchange between participants")


def _record(source, destination, level: _Level, where: str) -> CollectivesMetadata:
    """One reshard's record: a function of its two types, the level and ``where``
    (its location, which only the record's words carry)."""
    from tilefoundry.analysis.collectives.ownership import UnformableTables, layout_pair
    from tilefoundry.ir.tensor_type import TensorType

    if level.name is None:
        return CollectivesMetadata("not-inter-tile", reason="no topology level is selected")
    if not isinstance(source, TensorType) or not isinstance(destination, TensorType):
        return CollectivesMetadata("not-inter-tile", reason="the reshard moves no single tensor")
    from tilefoundry.limits import LimitError

    try:
        pair = layout_pair(source, destination, level.name, level.levels, level.size)
        if pair is None:
            return CollectivesMetadata("not-inter-tile", reason=_unplaced(source, destination, level.name))
        from tilefoundry.intertile.tables import parse_tables

        tables = parse_tables(pair.data, where)
    except LimitError as exc:
        raise LimitError(f"{where}: {exc}") from None
    except (UnformableTables, VerifyError) as exc:
        why = _first_line(exc).removeprefix(f"{where}: ")
        finding = f"{where}: collectives: tables cannot be formed: {why}"
        return CollectivesMetadata("unformable", reason=why, findings=(finding,))
    return _classified(where, tables, pair, source, level)


def _classified(where: str, tables, pair, source, level: _Level) -> CollectivesMetadata:
    from tilefoundry.intertile import delivery as ops
    from tilefoundry.intertile.classify import classify_tables

    cls = classify_tables(tables)
    shape = dict(groups=len(cls.groups), M=cls.M, K=cls.K, instances=pair.source.instances)
    if cls.verdict != "op":
        return CollectivesMetadata(cls.verdict, reason=cls.reason, **shape)
    try:
        plan = ops.plan_delivery(tables, cls, pair.source.reduction, source.dtype.name)
    except VerifyError as exc:
        return CollectivesMetadata("insufficient-information", reason=_first_line(exc), **shape)
    sent, received = price(plan, source.dtype.bits)
    moved = sum(received.values()) * pair.source.instances
    most = max([*sent.values(), *received.values(), 0])
    time_ns = ceil_ns(most, level.bandwidth) if level.bandwidth else None
    text = ops.ktir_text(plan)
    checked = _check(where, tables, plan, text, pair.data)
    return CollectivesMetadata(
        "op", "inter_tile_" + plan.kind, "", **shape,
        sent=max(sent.values(), default=0), received=max(received.values(), default=0),
        bytes=moved, sent_by=_by_core(sent), received_by=_by_core(received),
        verifies=checked[0], reproduces_destination=checked[1], time_ns=time_ns,
        time="" if time_ns is not None else f"unavailable: {level.why_no_time}",
        ktir=text, findings=checked[2])


def _by_core(amounts: dict) -> tuple:
    return tuple((str(core), amounts[core]) for core in sorted(amounts))


def _check(where: str, tables, plan, text, data) -> tuple:
    """(verifies, reproduces_destination, findings) of the written op."""
    from tilefoundry.intertile import delivery as ops

    if text is None:
        return None, None, (f"{where}: collectives: {plan.opname}: a tile family of the "
                            "classified groups has no affine spelling, so no KTIR text is "
                            "written",)
    diagnostics, produce, delivery = ops.check_text(text, tables.cores)
    if diagnostics:
        return False, None, tuple(f"{where}: collectives: {d.rule} {d.op}: {d.message}"
                                  for d in diagnostics)
    if tables.volume() > ops.EXECUTION_LIMIT:
        tables, plan, produce, delivery = _on_grid(data, plan)
    try:
        same = ops.reproduces_destination(tables, plan, produce, delivery)
    except VerifyError as exc:
        return True, False, (f"{where}: collectives: {plan.opname} cannot be executed: "
                             f"{_first_line(exc)}",)
    if not same:
        return True, False, (f"{where}: collectives: {plan.opname} verifies but does not "
                             "reproduce the destination layout (the core order is not the "
                             "regions' order, seed §1.2)",)
    return True, True, ()


def _on_grid(data, plan):
    """The same relayout on the cut grid (one element per slice), for execution."""
    from tilefoundry.intertile import delivery as ops
    from tilefoundry.intertile.classify import classify_tables
    from tilefoundry.intertile.tables import parse_tables

    grid = parse_tables({k: v for k, v in data.items() if k != "tensor"}, "<grid>")
    if ops.PARTIAL_AXIS in data["tensor"] and ops.PARTIAL_AXIS not in grid.axes:
        raise VerifyError("the grid lost the partial axis")
    small = ops.plan_delivery(grid, classify_tables(grid), plan.reduction, plan.elem)
    _, produce, delivery = ops.check_text(ops.ktir_text(small), grid.cores)
    return grid, small, produce, delivery


# ---------------------------------------------------------------- one record per structure

#: stands for a reshard's location while the record of its structure is derived:
#: no location or record text holds a NUL, so each one in a record is this mark
_HERE = "\x00reshard\x00"


class _Records:
    """The records of one run, derived once per (source type, destination type).

    A whole model's layers are renamed copies (docs/architecture.md, "A whole
    model is answered by structure"): a record reads nothing of its call but the
    two types and the call's location, and the level is one per run. So the
    record is derived once with ``_HERE`` for the location and each call takes it
    with its own location written in (only the fields that name it are copied)."""

    def __init__(self, level: _Level):
        self.level = level
        self.by_types: dict = {}

    def record(self, call) -> CollectivesMetadata:
        key = (call.args[0].type, call.type)
        found = self.by_types.get(key)
        if found is None:
            try:
                record = _record(*key, self.level, _HERE)
            except TileFoundryError:  # a refusal names the location: raise it as it is
                return _record(*key, self.level, _where(call))
            found = self.by_types[key] = (record, _marked_fields(record))
        record, marked = found
        if not marked:
            return record
        where = _where(call)
        return replace(record, **{name: _placed(getattr(record, name), where)
                                  for name in marked})


def _marked(value) -> bool:
    if isinstance(value, str):
        return _HERE in value
    return isinstance(value, tuple) and any(_marked(v) for v in value)


def _marked_fields(record: CollectivesMetadata) -> tuple[str, ...]:
    """The fields of ``record`` that name the reshard's location."""
    return tuple(f.name for f in fields(record) if _marked(getattr(record, f.name)))


def _placed(value, where: str):
    if isinstance(value, str):
        return value.replace(_HERE, where)
    if isinstance(value, tuple):
        return tuple(_placed(v, where) for v in value)
    return value


def fresh_record(call, level: _Level) -> CollectivesMetadata:
    """``call``'s record derived afresh (what every memoised record must equal)."""
    return _record(call.args[0].type, call.type, level, _where(call))


# ---------------------------------------------------------------- the family


def _level(ctx) -> _Level:
    names = tuple(t.name for t in ctx.topologies)
    size = next((t.size for t in ctx.topologies if t.name == ctx.level), 0)
    bandwidth, why = exchange_bandwidth(ctx.target, ctx.level)
    return _Level(ctx.level, size if isinstance(size, int) else 0, names, bandwidth, why)


def _summary(calls, records, factors) -> CollectivesSummaryMetadata:
    ops: dict[str, int] = {}
    total, time_ns, why = 0, 0, ""
    findings: list[str] = []
    for call, record in zip(calls, records):
        key = record.op or record.verdict
        ops[key] = ops.get(key, 0) + 1
        factor = factors.get(id(call), 1)
        total += record.bytes * factor
        findings.extend(record.findings)
        if record.op is None:
            continue
        if record.time_ns is None:
            why = why or record.time
        elif time_ns is not None:
            time_ns += record.time_ns * factor
    if why:
        time_ns = None
    return CollectivesSummaryMetadata(len(calls), tuple(sorted(ops.items())), total,
                                      time_ns, why, tuple(findings))


def run_collectives(function, ctx) -> None:
    """AnalysisCallable: a CollectivesMetadata on every Reshard, a summary on the Function."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.analysis.recomputation import recomputation_factors
    from tilefoundry.ops.sharding import Reshard

    body = iter_nodes(function.body) if function.body is not None else []
    calls = [n for n in body if isinstance(n, Call) and isinstance(n.op, Reshard)]
    level = _level(ctx)
    memo = _Records(level)
    records = [memo.record(call) for call in calls]
    factors = recomputation_factors(function, call_sites=getattr(ctx, "call_sites", None))
    for call, record in zip(calls, records):
        call.with_metadata(record)
    function.with_metadata(_summary(calls, records, factors))


ANALYZER = Analyzer(
    selector="collectives",
    run=run_collectives,
    produces=(CollectivesMetadata, CollectivesSummaryMetadata),
)
