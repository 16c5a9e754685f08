"""The performance family's records and its nominal timeline (analysis §1.2.4):
occurrences laid out in inline (printer) order on their exact participant sets,
an authored loop one structured node whose body is solved once from the loop's
own start."""
from __future__ import annotations

from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.ir.trampoline import trampoline
from tilefoundry.analysis.performance.frontier import Frontier, runs_of

__all__ = ["TimelineMetadata", "PerformanceMetadata", "PerformanceSummaryMetadata", "arrange",
           "Timeline"]


@frozen_dataclass  # its __init__ sets fields directly: one per call of a whole model
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


@frozen_dataclass
class PerformanceMetadata(IRMetadata):
    """One occurrence's interval within one local wave of its Function.

    Attributes:
        timeline: that occurrence's CTA-local interval.
    """

    timeline: TimelineMetadata

    family = "performance"


@frozen_dataclass
class PerformanceSummaryMetadata(IRMetadata):
    """One Function's predicted time, and what reaching it took.

    Attributes:
        timeline: whole-Function envelope from zero, in ns.
        waves: physical waves required by the root topology.
    """

    timeline: TimelineMetadata
    waves: int

    family = "performance"


# ================================================================ the timeline


def arrange(function: Function, deps: dict) -> list:
    """The inline (printer) occurrence order as a tree: ``("call", call)`` and
    ``("loop", loop, body)`` items. A body item reading nothing of its loop is
    loop-invariant and stays a single occurrence before the loop."""

    seen: set[int] = set()

    def visit(node, items: list):  # a generator: see ir.trampoline
        if id(node) in seen or isinstance(node, (Var, Constant)):
            return
        seen.add(id(node))
        if isinstance(node, Tuple):
            for field in node.fields:
                yield visit(field, items)
        elif isinstance(node, GridRegionExpr):
            for init in node.inits:
                yield visit(init, items)
            body: list = []
            for value in node.yields:
                yield visit(value, body)
            kept: list = []
            for item in body:
                target = kept if node in deps.get(id(item[1]), ()) else items
                target.append(item)
            items.append(("loop", node, kept))
        elif isinstance(node, Call):
            for arg in node.args:
                yield visit(arg, items)
            items.append(("call", node))

    top: list = []
    if function.body is not None:
        trampoline(visit(function.body, top))
    return top


class Timeline:
    def __init__(self, durations: dict, places: dict):
        self.durations = durations  # id(call) -> ns (> 0 only)
        self.places = places  # id(call) -> its positions (a set, or a range in closed form)
        self.ready: dict[int, int] = {}
        self.free = Frontier()
        self.intervals: dict[int, tuple] = {}  # id(call) -> (call, start, end, trips, stride)

    def ready_of(self, node) -> int:
        if isinstance(node, Tuple):
            return max((self.ready_of(f) for f in node.fields), default=0)
        return self.ready.get(id(node), 0)

    def positions(self, items) -> list:
        """The runs of positions any call of ``items`` (loops included) runs on."""
        found: list = []
        for item in items:
            if item[0] == "call":
                found.extend(runs_of(self.places.get(id(item[1]), ())))
            else:
                found.extend(self.positions(item[2]))
        merged: list = []
        for start, stop in sorted(found):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
            else:
                merged.append((start, stop))
        return merged

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
                    busy = runs_of(self.places[id(node)])
                    start = max(start, self.free.latest(busy))
                    self.free.occupy(busy, start + length)
                    direct.append((node, start, start + length))
                self.ready[id(node)] = start + length
                end = max(end, start + length)
                continue
            loop, body = node, item[2]
            busy = self.positions(body)
            start = max([begin, self.free.latest(busy)] + [self.ready_of(v) for v in loop.inits])
            for var in (loop.induction_var, *loop.carried):
                self.ready[id(var)] = start
            body_end, inner = self.solve(body, start)
            stride = body_end - start
            trips = loop.trips
            for call, s, e in inner:
                self.intervals[id(call)] = (call, s, e, trips, stride)
            finish = start + trips * stride
            self.free.occupy(busy, finish)
            self.ready[id(loop)] = finish
            end = max(end, finish)
        return end, direct
