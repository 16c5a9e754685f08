"""The performance timeline in the Chrome Trace Event Format
(`analyze --trace FILE`; Perfetto and chrome://tracing open it; docs/views.md).

- One process per participant class: the exact set of positions of the
  topology level an occurrence runs on (``cta 0-3``). Process 1, ``program``,
  carries the function's envelope and its waves.
- One thread per engine an occurrence's modeled duration is set by: the
  ``compute`` side (flop and service rates) or the ``memory <level>`` side
  (the bandwidth level's bytes), the greater of the two as performance takes
  it (analysis §1.2.4); a tie counts as compute.
- Each timed occurrence is a complete event (``ph: X``) at its first execution,
  ``ts``/``dur`` in µs from the report's exact ns; ``args`` carry the
  statement, its source, flops, bytes, bound-by, trips and stride, and runs
  (how often it runs in all: the HTML table's and ``--top``'s runs).
- A loop is an enclosing slice on every track holding its body, spanning all
  its trips; its ``args`` carry the trip count and stride.
- Where the estimate ran, process 1 has a third track: its kernels back to
  back from 0, each slice's ``args`` its grid and each effect's ns.

The intervals are the JSON report's (``calls[].performance.timeline``); only
the participant set and the engine are read off the records themselves.
"""
from __future__ import annotations

import json

from tilefoundry.ir.expr import Call, GridRegionExpr, body_children, postorder
from tilefoundry.ir.metadata import ExecutionDomainMetadata
from tilefoundry.render.report import source_of
from tilefoundry.render.views.top import executions_of, statement_text

__all__ = ["trace_document", "trace_json"]

PROGRAM_PID = 1


def _us(ns: int) -> float:
    # ns / 1000 as a float: its shortest repr is the exact decimal for any
    # interval this model yields (< 2**53 ns), so ts * 1000 reads back the ns
    return ns / 1000


def _compact(positions) -> str:
    """``0-3,8`` for {0, 1, 2, 3, 8} (a closed-form run is never enumerated)."""
    from tilefoundry.analysis.performance.frontier import runs_of

    return ",".join(str(a) if b == a + 1 else f"{a}-{b - 1}" for a, b in runs_of(positions))


def _engine(call, rates) -> str:
    """Which side of max(compute, movement) sets an occurrence's duration,
    asked of performance's own duration rule (never re-derived here)."""
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata
    from tilefoundry.analysis.memory.records import TrafficMetadata
    from tilefoundry.analysis.performance.rates import duration, moved_bytes

    cost = call.get_metadata(ComputeCostMetadata)
    moved = moved_bytes(call.get_metadata(TrafficMetadata).per_unit, rates.bandwidth_level)
    compute = duration(call, cost.flops_per_unit, cost.service_per_unit, 0, rates)
    movement = duration(call, (), (), moved, rates)
    return "compute" if compute >= movement else f"memory {rates.bandwidth_level}"


def _rates(result, mesh):
    from tilefoundry.analysis.performance.rates import rates_of

    return rates_of(result.module.resolve_target(), result.level, mesh.topologies)


def _occurrences(result, labels: dict, calls: dict) -> list:
    """(call, report entry, participants, engine) of every timed call."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.analysis.performance.participants import participants

    found = []
    for node in iter_nodes(result.function.body):
        entry = calls.get(labels.get(id(node)))
        if not isinstance(node, Call) or entry is None or "performance" not in entry:
            continue
        mesh = node.get_metadata(ExecutionDomainMetadata).at(result.level)
        size = next(t.size for t in mesh.topologies if t.name == result.level)
        found.append((node, entry, participants(mesh, result.level, size),
                      _engine(node, _rates(result, mesh))))
    return found


def _body_calls(loop) -> set:
    """ids of the nodes of ``loop``'s own body (a nested loop's body is its
    own: only its inits are entered), reached from its yields."""
    return {id(node) for result in loop.yields
            for node in postorder(result, children=_own_operands)}


def _own_operands(node) -> tuple:
    return node.inits if isinstance(node, GridRegionExpr) else body_children(node)


def _loops(result, occurrences: list) -> list:
    """(loop, body occurrences, start_ns, stride_ns) of every loop with timed
    body work. A body occurrence repeats with the loop's trips; the loop
    starts where its last-finishing first-trip work ends minus one stride."""
    from tilefoundry.analysis.check import iter_nodes

    loops = []
    for node in iter_nodes(result.function.body):
        if not isinstance(node, GridRegionExpr):
            continue
        body = _body_calls(node)
        inside = [o for o in occurrences if id(o[0]) in body
                  and o[1]["performance"]["timeline"]["trips"] == node.trips
                  and o[1]["performance"]["timeline"]["stride_ns"] > 0]
        if not inside:
            continue
        stride = inside[0][1]["performance"]["timeline"]["stride_ns"]
        last_end = max(o[1]["performance"]["timeline"]["end_ns"] for o in inside)
        loops.append((node, inside, last_end - stride, stride))
    return loops


def _event(name, pid, tid, start_ns, end_ns, args) -> dict:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": _us(start_ns),
            "dur": _us(end_ns - start_ns), "args": args}


def _meta(kind, pid, tid, name) -> dict:
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def _occurrence_event(entry, program, pid, tid, positions, level, runs: int) -> dict:
    timeline = entry["performance"]["timeline"]
    statement = statement_text(program, entry["value"])
    flops = sum(entry.get("compute-cost", {}).get("flops", {}).values())
    moved = sum(m["read"] + m["write"] for m in entry.get("traffic", {}).get("whole", {}).values())
    args = {"value": entry["value"], "statement": statement, "source": entry["source"],
            "flops": flops, "bytes": moved,
            "bound_by": entry.get("roofline", {}).get("bound_by"),
            "trips": timeline["trips"], "stride_ns": timeline["stride_ns"], "runs": runs,
            "start_ns": timeline["start_ns"], "end_ns": timeline["end_ns"],
            "participants": f"{level} {_compact(positions)}"}
    return _event(statement.split("(", 1)[0], pid, tid, timeline["start_ns"],
                  timeline["end_ns"], args)


def _program_events(report: dict) -> list:
    """The envelope and its waves on process 1: wave 0 is the CTA-local plan,
    later waves repeat it (their occurrences are not copied, analysis §1.2.4)."""
    performance = report["function_records"]["performance"]
    end, waves = performance["timeline"]["end_ns"], performance["waves"]
    makespan = end // waves
    root = f"{report['module']}::{report['function']}"
    events = [_meta("process_name", PROGRAM_PID, 0, f"program {root}"),
              _meta("thread_name", PROGRAM_PID, 1, "envelope"),
              _meta("thread_name", PROGRAM_PID, 2, "waves"),
              _event(f"{root} predicted-ns={end}", PROGRAM_PID, 1, 0, end,
                     {"predicted_ns": end, "waves": waves, "target": report["target"]}),
              _event("wave 0", PROGRAM_PID, 2, 0, makespan, {"wave": 0, "waves": waves})]
    if waves > 1:
        events.append(_event(f"waves 1..{waves - 1} (repeat wave 0)", PROGRAM_PID, 2, makespan,
                             end, {"first_wave": 1, "last_wave": waves - 1, "waves": waves}))
    return events


def _estimate_events(report: dict) -> list:
    """The estimate's kernels back to back on their own track of process 1,
    each slice carrying its grid and its effects (docs/estimate.md)."""
    estimate = report["function_records"].get("estimate")
    if not estimate:
        return []
    events = [_meta("thread_name", PROGRAM_PID, 3,
                    f"estimate (kernels, {estimate['launch']} launch)")]
    start = 0
    for kernel in estimate["kernels"]:
        args = {"site": kernel["site"], "bound_by": kernel["bound_by"], "ctas": kernel["ctas"],
                "ctas_per_sm": kernel["ctas_per_sm"], "waves": kernel["waves"],
                "dram_bytes": kernel["dram_bytes"], "l2_bytes": kernel["l2_bytes"],
                **{f"{name}_ns": ns for name, ns in kernel["effects"].items()}}
        events.append(_event(f"kernel {kernel['index']} ({kernel['bound_by']})", PROGRAM_PID, 3,
                             start, start + kernel["ns"], args))
        start += kernel["ns"]
    return events


def trace_document(result, rendering) -> dict:
    """The trace of one analysed result (performance in its closure)."""
    report = rendering.report
    calls = {entry["value"]: entry for entry in report["calls"]}
    occurrences = _occurrences(result, rendering.labels, calls)
    executions = executions_of(result, rendering)
    events = _program_events(report) + _estimate_events(report)
    tracks: dict = {}  # (positions, engine) -> (pid, tid)
    pids: dict = {}
    for node, entry, positions, engine in occurrences:
        if positions not in pids:
            pids[positions] = len(pids) + 2
            events.append(_meta("process_name", pids[positions], 0,
                                f"{result.level} {_compact(positions)}"))
        if (positions, engine) not in tracks:
            tid = 1 if engine == "compute" else 2
            tracks[(positions, engine)] = (pids[positions], tid)
            events.append(_meta("thread_name", pids[positions], tid, engine))
        pid, tid = tracks[(positions, engine)]
        events.append(_occurrence_event(entry, report["program"], pid, tid, positions,
                                        result.level, executions.get(entry["value"], 1)))
    for loop, inside, start, stride in _loops(result, occurrences):
        used = {tracks[(positions, engine)] for _, _, positions, engine in inside}
        args = {"trips": loop.trips, "stride_ns": stride, "source": source_of(loop)}
        for pid, tid in sorted(used):
            events.append(_event(f"loop {loop.induction_var.name} x{loop.trips}", pid, tid,
                                 start, start + loop.trips * stride, args))
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"target": report["target"], "module": report["module"],
                          "function": report["function"], "topology": report["topology"],
                          "tool": report["tool"]}}


def trace_json(result, rendering) -> str:
    return json.dumps(trace_document(result, rendering), indent=1) + "\n"
