"""The performance readiness check and the memory family count one view's
calls with one BoundaryCounter (``analysis.memory.counter_for``): a call
structure the check has counted is not counted again by the family, and every
figure equals what counters made afresh give."""
from __future__ import annotations

import collections

from tests.models.zoo_cache import namespace
from tilefoundry.analysis import memory
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.memory import TrafficMetadata, traffic
from tilefoundry.analysis.performance import PerformanceInputCheck
from tilefoundry.dsl.loader import resolve_selector
from tilefoundry.ir.expr import Call

DIMS = {"ctx_len": 1024}


def _layer():
    module = resolve_selector(namespace("llama3_8b.py"), "Llama3_8B_H200.layer0")
    return module, module.entry_function()


def _traffic(result):
    function = result.function
    calls = [n for n in iter_nodes(function.body) if isinstance(n, Call)]
    return ([c.get_metadata(TrafficMetadata) for c in calls], function.get_metadata(TrafficMetadata))


def test_counter_is_one_per_view_and_level():
    module, function = _layer()
    view = analyze(module, function, analysis=("memory",), dims=DIMS).function
    first = memory.counter_for(view, "cta", ())
    assert memory.counter_for(view, "cta", []) is first
    assert memory.counter_for(view, None, ()) is not first
    assert memory.counter_for(_layer()[1], "cta", ()) is not first  # another function


def test_readiness_and_memory_count_each_structure_once(monkeypatch):
    module, function = _layer()
    counted, asked = collections.Counter(), []
    count, unit_moved = traffic.call_traffic, PerformanceInputCheck._unit_moved

    def counting(call, *args):
        counted[memory._key(call)] += 1
        return count(call, *args)

    def asking(call, state):
        asked.append(call)
        return unit_moved(call, state)

    monkeypatch.setattr(traffic, "call_traffic", counting)
    monkeypatch.setattr(PerformanceInputCheck, "_unit_moved", staticmethod(asking))
    shared = _traffic(analyze(module, function, analysis=("memory", "performance"), dims=DIMS))
    assert asked, "the layer has calls outside a cta Mesh, which readiness counts"
    assert max(counted.values()) == 1

    monkeypatch.setattr(memory, "counter_for", lambda f, level, tops: traffic.BoundaryCounter(level, tops))
    fresh = _traffic(analyze(module, function, analysis=("memory", "performance"), dims=DIMS))
    assert shared == fresh


def test_records_key_is_derived_once_per_call_structure(monkeypatch):
    """The readiness check and the family find a call's records by its typed
    structure (``Call.structure``), which fixes memory's records key: the key
    is derived once per distinct structure, not once per call."""
    module, function = _layer()
    derived = collections.Counter()
    key = memory._key

    def deriving(call):
        derived[call.structure] += 1
        return key(call)

    monkeypatch.setattr(memory, "_key", deriving)
    result = analyze(module, function, analysis=("memory", "performance"), dims=DIMS)
    calls = [n for n in iter_nodes(result.function.body) if isinstance(n, Call)]
    structures = {c.structure for c in calls}
    assert None not in structures and len(structures) < len(calls)  # the layer repeats structures
    assert set(derived) == structures
    assert max(derived.values()) == 1
