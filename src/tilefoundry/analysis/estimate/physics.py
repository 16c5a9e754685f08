"""The estimate's physics (docs/estimate.md): one kernel's demands, read off
its statements, turned into time on the GPU the target's documents describe.

- Occupancy: CTAs resident per SM from the per-CTA shared-memory and register
  footprint, threads and the resident-CTA ceiling; waves and the tail wave.
- Memory: DRAM bytes after L2 reuse (a window several CTAs of one wave read
  comes from DRAM once while the kernel's working set does not fit L2; from
  DRAM once for the whole kernel when it does), at the sustained HBM rate;
  every requested byte through L2 at its sustained rate; an SM's share of the
  L2 fabric bounds what a few CTAs can pull; the reads the running CTAs hold
  in flight bound the rate (Little's law with the M/M/1 loaded latency).
- Compute: tensor cores at their sustained fraction for contractions with a
  tensor path, the CUDA-core FP32 rate for every other flop, special and
  integer units at their own rates, shared memory at its bank rate.
- The CTA's path: statements in order; a loop whose loads do not depend on
  what it carries overlaps them with its compute (max per trip, plus fill and
  drain), any other loop runs each trip's load then compute; a trip's compute
  is at least its recurrence (the chain through what the loop carries); a
  dependent load pays the DRAM round trip.
- Cross-CTA work: a Partial completed over CTAs writes and reads its partials
  through L2 after a grid-wide wait.
- Launch: the gap between graph-replayed kernels, or the host's launch interval.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilefoundry.analysis.estimate.kernels import Kernel, Loop, Statement
from tilefoundry.analysis.estimate.timings import EstimateOptions, KernelEstimate

__all__ = ["price_kernel", "occupancy", "not_modelled"]

PPM = 1_000_000
NS = 1e9


def not_modelled(facts, options: EstimateOptions) -> tuple[str, ...]:
    """Effects left out: switched off, or with no document fact on this target."""
    missing = set(options.disabled)
    if facts.l2_bandwidth is None or facts.l2_capacity is None:
        missing.add("l2")
    if facts.dram_latency_ns is None:
        missing.add("latency")
    if facts.graph_gap_ns is None or facts.stream_interval_ns is None:
        missing.add("launch")
    if facts.shared_bandwidth_per_sm is None:
        missing.add("smem")
    return tuple(sorted(missing))


# ================================================================ rates


@dataclass
class _Rates:
    facts: object
    options: EstimateOptions
    sms: int = field(init=False)

    def __post_init__(self):
        self.sms = self.facts.sm_count

    def _efficiency(self, ppm: int) -> float:
        return ppm / PPM if self.options.on("efficiency") else 1.0

    def tensor_sm(self, dtype: str) -> float:
        return (self.facts.tensor_for(dtype) * self._efficiency(self.facts.tensor_efficiency_ppm)
                / self.sms)

    @property
    def core_sm(self) -> float:
        return self.facts.core_flops_per_second / self.sms

    @property
    def hbm(self) -> float:
        return self.facts.hbm_bandwidth * self._efficiency(self.facts.hbm_efficiency_ppm)

    @property
    def l2(self) -> float | None:
        return self.facts.l2_bandwidth if self.options.on("l2") else None

    @property
    def latency(self) -> float:
        on = self.options.on("latency") and self.facts.dram_latency_ns is not None
        return self.facts.dram_latency_ns / NS if on else 0.0


# ================================================================ occupancy


def occupancy(kernel: Kernel, smem_cta: int, regs_cta: int, facts, options) -> int:
    """CTAs one SM holds at once: the tightest of its shared memory, register
    file, thread slots and resident-CTA ceiling (at least one)."""
    if not options.on("occupancy"):
        return 1
    limits = [facts.max_ctas_per_sm]
    if smem_cta:
        limits.append(facts.shared_per_sm // smem_cta)
    if regs_cta:
        limits.append(facts.registers_per_sm // regs_cta)
    if kernel.threads and facts.max_threads_per_sm:
        limits.append(facts.max_threads_per_sm // kernel.threads)
    return max(1, min(limits))


def _waves(ctas: int, slots: int, sms: int, options) -> list[tuple[int, int, float]]:
    """(how many waves, CTAs in each, CTAs on one SM): the full waves, then the
    tail, in closed form (a grid of 2**63 CTAs is two groups); with waves off,
    one even spread of all CTAs (no quantisation)."""
    if not options.on("waves"):
        return [(1, ctas, ctas / sms)]
    full, tail = divmod(ctas, slots)
    groups = [(full, slots, -(-slots // sms))] if full else []
    return groups + ([(1, tail, -(-tail // sms))] if tail else [])


def _wave_count(waves: list) -> int:
    return sum(count for count, _, _ in waves)


#: waves whose windows are counted one by one; past it each wave is taken to read
#: the kernel's whole distinct footprint (an upper bound)
_COUNTED_WAVES = 4096


# ================================================================ memory


def _flatten(items: list, multiplier: int = 1):
    """(statement, executions per launch) of every statement of a kernel."""
    for item in items:
        if isinstance(item, Loop):
            yield from _flatten(item.items, multiplier * item.trips)
        else:
            yield item, multiplier


_DISTINCT: dict = {}


def _distinct(shape: tuple, varying: tuple, start: int, stop: int) -> int:
    """How many different windows CTAs ``start..stop-1`` (launch order: the
    mesh's last cta axis fastest) read, when windows differ along ``varying``."""
    key = (shape, varying, start, stop)
    found = _DISTINCT.get(key)
    if found is None:
        if not varying:
            found = 1
        else:
            coords = np.unravel_index(np.arange(start, stop), shape)
            picked = [coords[i] for i in varying]
            found = int(len(np.unique(np.ravel_multi_index(picked, [shape[i] for i in varying]))))
        if len(_DISTINCT) > 4096:
            _DISTINCT.clear()
        _DISTINCT[key] = found
    return found


def _dram_read(statement: Statement, kernel: Kernel, waves: list, fits: bool, l2_on: bool) -> int:
    """Bytes one execution of ``statement`` reads from DRAM."""
    requested = statement.cta_read * kernel.ctas
    distinct = min(statement.dram_read, requested) if requested else statement.dram_read
    if not l2_on:
        return max(requested, distinct)
    if fits or not requested:
        return distinct
    count = _wave_count(waves)
    if statement.varying is None or not kernel.cta_shape or count > _COUNTED_WAVES \
            or any(running > _COUNTED_WAVES for _, running, _ in waves):
        per_wave = distinct * count
    else:
        start, per_wave = 0, 0
        for times, running, _ in waves:
            for _ in range(times):
                stop = start + int(running)
                per_wave += statement.cta_read * _distinct(kernel.cta_shape, statement.varying,
                                                           start, stop)
                start = stop
    return min(requested, max(distinct, per_wave))


# ================================================================ pricing


@dataclass
class _Priced:
    loads: dict = field(default_factory=dict)  # "hbm" / "l2" -> one CTA path's load time
    kind: str = "hbm"  # what bounds this kernel's loads
    weight: int = 1  # how many waves the path being priced stands for
    effects: dict = field(default_factory=dict)
    statements: dict = field(default_factory=dict)  # id(call) -> (ns, bound)

    def add(self, effect: str, ns: float) -> None:
        if ns:
            self.effects[effect] = self.effects.get(effect, 0.0) + ns * self.weight


@dataclass
class _Memory:
    """What a kernel asks of DRAM and L2: bytes and the time each takes."""

    dram: int
    requested: int
    hbm_s: float
    l2_s: float
    queue_s: float = 0.0  # the DRAM round trips the reads wait beyond their transfer

    @property
    def seconds(self) -> float:
        return max(self.hbm_s + self.queue_s, self.l2_s)


def _memory(kernel: Kernel, flat: list, waves: list, rates: _Rates) -> _Memory:
    """DRAM bytes after L2 reuse (every byte once when the kernel's distinct
    footprint fits the L2, else once per wave that reads it) and the bytes the
    CTAs request through L2, each at its sustained rate."""
    facts = rates.facts
    written = sum(s.dram_write * n for s, n in flat)
    distinct = sum(s.dram_read * n for s, n in flat)
    l2_on = rates.l2 is not None
    fits = facts.l2_capacity is not None and distinct + written <= facts.l2_capacity
    read = sum(_dram_read(s, kernel, waves, fits, l2_on) * n for s, n in flat)
    dram = written + read
    requested = sum((s.cta_read + s.cta_write) * n for s, n in flat) * kernel.ctas
    return _Memory(dram, requested, dram / rates.hbm, requested / rates.l2 if l2_on else 0.0,
                   _queue(kernel, read, waves, rates))


def _queue(kernel: Kernel, read: int, waves: list, rates: _Rates) -> float:
    """Little's law: the device holds at most the running CTAs' read windows in
    flight, so ``read`` bytes take ``read / in_flight`` round trips, each
    waiting one DRAM latency beyond its transfer. This is the M/M/1 loaded
    latency: rate = 1 / (1 / sustained + latency / in_flight)."""
    window = _window(kernel.items)
    running = max((r for _, r, _ in waves), default=0)
    if not read or not window or not running or not rates.latency:
        return 0.0
    return read / (window * running) * rates.latency


def _window(items: list) -> int:
    """The most global bytes one CTA has requested and not yet received: a
    statement's whole read (a tile load is issued at once), a loop's trip of
    reads, two trips when the loop prefetches the next one (double buffering)."""
    widest = 0
    for item in items:
        if isinstance(item, Loop):
            trip = sum(i.cta_read for i in item.items if isinstance(i, Statement))
            widest = max(widest, trip * (2 if item.overlapped else 1), _window(item.items))
        else:
            widest = max(widest, item.cta_read)
    return widest


def price_kernel(kernel: Kernel, index: int, smem_cta: int, regs_cta: int, facts,
                 options: EstimateOptions) -> tuple[KernelEstimate, dict]:
    """One launch's time and each statement's share (id(call) -> (ns, bound))."""
    rates = _Rates(facts, options)
    per_sm = occupancy(kernel, smem_cta, regs_cta, facts, options)
    waves = _waves(kernel.ctas, rates.sms * per_sm, rates.sms, options)
    flat = list(_flatten(kernel.items))
    memory = _memory(kernel, flat, waves, rates)
    priced = _Priced(kind="hbm" if memory.hbm_s >= memory.l2_s else "l2")
    priced.add("hbm", memory.hbm_s)
    priced.add("latency", memory.queue_s)
    priced.add("l2", memory.l2_s)
    body = max(_body(kernel, waves, rates, memory, priced), memory.seconds)
    for kind, seconds in priced.loads.items():  # a CTA path's loads at its share of the rate
        priced.effects[kind] = max(priced.effects.get(kind, 0.0), seconds)
    cross = _cross_cta(flat, rates, facts, options)
    priced.add("cross-cta", cross)
    launch = _launch(body + cross, facts, options)
    priced.add("launch", launch)
    repeat = kernel.repeat
    record = KernelEstimate(
        index, kernel.site, kernel.ctas, per_sm, _wave_count(waves),
        max(1, round((body + cross + launch) * NS)) * repeat, _bound(priced.effects, body, launch),
        tuple(sorted((k, round(v * NS) * repeat) for k, v in priced.effects.items())),
        memory.dram * repeat, memory.requested * repeat,
        any(isinstance(i, Loop) and i.overlapped for i in kernel.items))
    return record, _shares(priced, flat, body)


def _body(kernel: Kernel, waves: list, rates: _Rates, memory: _Memory, priced: _Priced) -> float:
    """The waves' CTA paths one after the other. In a single wave a CTA's loads
    get its share of the aggregate memory rate; with several, while one CTA
    computes other SMs' CTAs keep the memory system busy, so its loads run at
    its SM's port (the aggregate memory time stays the kernel's floor)."""
    aggregate = memory.requested / memory.seconds if memory.seconds > 0 else None
    if aggregate and _wave_count(waves) > 1:
        aggregate = float("inf")
    port = rates.facts.shared_bandwidth_per_sm  # an SM's loads land in its L1/shared banks
    body = 0.0
    for count, running, resident in waves:  # a group of like waves: one path, times its count
        priced.weight = count
        body += count * _path(kernel, kernel.items, rates, running, resident, aggregate, port,
                              priced, first=True)
    priced.weight = 1
    return body


def _shares(priced: _Priced, flat: list, body: float) -> dict:
    """Each statement's share of the kernel's body, in proportion to its own
    busy time, so that a statement's share times its executions adds up to the
    body (the launch, and latency outside any statement, are the rest)."""
    runs = {id(s.call): n for s, n in flat}
    busy = sum(v * runs.get(key, 1) for key, (v, _) in priced.statements.items())
    scale = body / busy if busy > 0 else 0.0
    return {key: (max(0, round(v * scale * NS)), bound)
            for key, (v, bound) in priced.statements.items()}


def _launch(kernel_s: float, facts, options) -> float:
    if not options.on("launch") or facts.graph_gap_ns is None:
        return 0.0
    if options.launch == "graph":
        return facts.graph_gap_ns / NS
    interval = facts.stream_interval_ns / NS
    return max(facts.graph_gap_ns / NS, interval - kernel_s)


def _cross_cta(flat, rates: _Rates, facts, options) -> float:
    """A Partial completed over CTAs: every CTA's partial written and read
    back through L2 once all have arrived (a grid-wide wait: one DRAM round
    trip and one kernel boundary). A split value gathered across the CTAs of
    the launch that made it waits the same barrier (its bytes are the memory
    family's already); a reduce across them is a Partial completed."""
    if not options.on("cross-cta"):
        return 0.0
    moved = sum(s.cross_cta_bytes * n for s, n in flat)
    if not moved and not any(s.grid_sync for s, _ in flat):
        return 0.0
    bandwidth = rates.l2 or rates.hbm
    wait = (facts.graph_gap_ns or 0) / NS + rates.latency
    return 2 * moved / bandwidth + wait


def _bound(effects: dict, body: float, launch: float) -> str:
    if launch > body:
        return "launch"
    names = {"cross-cta": "l2"}
    best = max(effects.items(), key=lambda kv: (kv[1], kv[0]), default=("latency", 0.0))
    return names.get(best[0], best[0])


def _statement_times(s: Statement, kernel: Kernel, rates: _Rates, resident: float,
                     cta_rate: float | None, priced: _Priced, executions: int) -> dict:
    """Seconds one CTA keeps each unit busy for one execution of ``s``:
    ``load`` (its global bytes at the CTA's share of the memory rate, with
    the shared-memory writes of a load: a copy engine's, not the SM's),
    ``tensor``, ``cuda-core``, ``special``, ``smem``. Each unit's busy time
    goes to the breakdown."""
    ctas = max(kernel.ctas, 1)
    facts = rates.facts
    smem = _unit(s.smem_bytes, ctas, facts.shared_bandwidth_per_sm, resident)
    units = {
        "tensor": sum(f / ctas / (rates.tensor_sm(dt) / resident) for dt, f in s.tensor.items()),
        "cuda-core": s.core_flops / ctas / (rates.core_sm / resident)
        + _unit(s.integer_ops, ctas, facts.integer_ops_per_second_per_sm, resident),
        "special": _unit(s.special_ops, ctas, facts.special_ops_per_second_per_sm, resident),
        "smem": 0.0 if s.reads_gmem else smem,
    }
    for name, seconds in units.items():
        priced.add(name, seconds * executions)
    load = (s.cta_read + s.cta_write) / cta_rate if cta_rate else 0.0
    priced.loads[priced.kind] = (priced.loads.get(priced.kind, 0.0)
                                 + load * executions * priced.weight)
    units["load"] = max(load, smem) if s.reads_gmem else load
    return units


def _compute(units: dict) -> float:
    """One statement's compute: its units in turn on one SM's issue slots, or
    shared memory when that is longer."""
    return max(units["tensor"] + units["cuda-core"] + units["special"], units["smem"])


def _bound_of(units: dict, kind: str) -> str:
    named = {**units, kind: units["load"]}
    named.pop("load")
    return max(named.items(), key=lambda kv: kv[1])[0]


def _unit(amount: int, ctas: int, rate_per_sm: int | None, resident: float) -> float:
    if not amount or not rate_per_sm:
        return 0.0
    return amount / ctas / (rate_per_sm / resident)


def _path(kernel: Kernel, items: list, rates: _Rates, running: int, resident: float,
          aggregate: float | None, port: float | None, priced: _Priced,
          first: bool) -> float:
    """One CTA's time through ``items`` in a wave of ``running`` CTAs, with
    ``resident`` of them on its SM: straight-line statements one after the
    other (each waits for what it reads)."""
    cta_rate = None
    if aggregate:
        cta_rate = aggregate / max(running, 1)
        if port and port / resident < cta_rate:
            cta_rate = port / resident  # the SM's port, not the memory system, bounds it
            if aggregate != float("inf"):  # one wave of few CTAs: the SMs' L2 ports bound it
                priced.kind = "l2"
    latency = rates.latency
    elapsed = 0.0
    loaded = not first
    for item in items:
        if isinstance(item, Loop):
            elapsed += _loop(kernel, item, rates, resident, cta_rate, priced, latency, 1)
            loaded = True
            continue
        units = _statement_times(item, kernel, rates, resident, cta_rate, priced, 1)
        load, compute = units["load"], _compute(units)
        wait = latency if item.reads_gmem and (item.dependent or not loaded) else 0.0
        loaded = loaded or item.reads_gmem
        priced.add("latency", wait)
        spent = max(load + wait, compute)
        bound = "latency" if wait > max(load, compute) else _bound_of(units, priced.kind)
        _share(priced, item, spent, bound)
        elapsed += spent
    return elapsed


def _loop(kernel, loop: Loop, rates, resident, cta_rate, priced, latency, outer: int) -> float:
    """One CTA's time through a loop. Across trips the units work side by
    side (the next trip's MMA runs while the CUDA cores finish this one), so a
    trip's compute is its busiest unit, or its recurrence when that is longer.
    Overlapped, each trip is the longer of its
    loads and its compute, plus the shorter once (fill and drain) and one
    round trip; serial, each trip is its loads, its compute and a round trip."""
    executions = outer * loop.trips
    if not executions:  # a loop of no trips (range(5, 0)) runs nothing
        return 0.0
    busy = {"load": 0.0, "tensor": 0.0, "cuda-core": 0.0, "special": 0.0, "smem": 0.0}
    nested = 0.0
    reads = False
    spent = []  # each item's compute, for the recurrence
    for item in loop.items:
        if isinstance(item, Loop):
            spent.append(_loop(kernel, item, rates, resident, cta_rate, priced, latency,
                               executions))
            nested += spent[-1]
            continue
        units = _statement_times(item, kernel, rates, resident, cta_rate, priced, executions)
        _share(priced, item, max(units["load"], _compute(units)), _bound_of(units, priced.kind))
        for name, seconds in units.items():
            busy[name] += seconds
        spent.append(_compute(units))
        reads = reads or item.reads_gmem
    trip_load = busy.pop("load")
    trip_compute = max(max(busy.values()) + nested, _recurrence_time(loop, spent) / resident)
    wait = latency if reads else 0.0
    if loop.overlapped and rates.options.on("overlap"):
        priced.add("latency", wait * outer)
        return loop.trips * max(trip_load, trip_compute) + min(trip_load, trip_compute) + wait
    priced.add("latency", wait * executions)
    return loop.trips * (trip_load + trip_compute + wait)


def _recurrence_time(loop: Loop, spent: list) -> float:
    """The longest chain of the loop's recurrent statements, each at its
    compute time: one CTA cannot start a trip's recurrence before the last
    trip's has ended. ``spent`` is at the CTA's share of its SM, so the
    caller divides by the CTAs resident: co-resident CTAs run their chains
    side by side, filling each other's idle units."""
    if not loop.recurrence:
        return 0.0
    finish: dict = {}
    for index in sorted(loop.recurrence):
        before = max((finish[p] for p in loop.recurrence[index] if p in finish), default=0.0)
        finish[index] = before + spent[index]
    return max(finish.values())


def _share(priced: _Priced, statement: Statement, seconds: float, bound: str) -> None:
    key = id(statement.call)
    ns, _ = priced.statements.get(key, (0.0, bound))
    priced.statements[key] = (ns + seconds * priced.weight, bound)
