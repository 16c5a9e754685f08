"""estimate (docs/estimate.md): a time that holds on the GPU.

The analysis spec's ``performance`` is a deterministic comparison figure that
leaves out launch overhead, occupancy and utilisation, and the golden programs
hold it to the reference; it stays as it is. ``estimate`` is the time users
take ``predicted-ns`` for: the program's kernels back to back, each priced by
what the hardware does (``physics.py``: occupancy and waves, L2 reuse, sustained
HBM / L2 / tensor / CUDA-core rates, overlap read off the loop's dependences,
DRAM latency, cross-CTA partials, launches), from facts the target's documents
state with their sources (``EstimateFacts``).

``ANALYZER`` requires compute-cost and memory and writes:

- ``EstimateMetadata(ns, bound_by, kernel)`` on every Call that takes time;
- ``EstimateSummaryMetadata(predicted_ns, bound_by, launch, kernels,
  not_modelled)`` on the Function.

A target with no ``EstimateFacts`` (a CPU, a multi-core accelerator) is refused
before any analysis writes. Options (``EstimateOptions``) arrive as
``ctx.options["estimate"]``: the launch mode and the effects switched off.
"""
from __future__ import annotations

from collections.abc import Mapping

from tilefoundry.analysis.descriptor import Analyzer, TargetFactsCheck, family_facts
from tilefoundry.analysis.estimate.kernels import kernels_of
from tilefoundry.analysis.estimate.physics import not_modelled, price_kernel
from tilefoundry.analysis.estimate.timings import (
    BOUNDS, EFFECTS, LAUNCH_MODES, EstimateMetadata, EstimateOptions, EstimateSummaryMetadata,
    KernelEstimate,
)

__all__ = ["ANALYZER", "BOUNDS", "EFFECTS", "LAUNCH_MODES", "EstimateMetadata",
           "EstimateOptions", "EstimateSummaryMetadata", "KernelEstimate", "estimate_facts",
           "options_of", "run_estimate"]


def estimate_facts(target):
    """The target's EstimateFacts; a target without them is refused with the
    selector as prefix."""
    from tilefoundry.target.facts import EstimateFacts

    return family_facts("estimate", target, EstimateFacts)


def options_of(options) -> EstimateOptions:
    """The EstimateOptions an analyze run carries (``options["estimate"]``, or
    the options themselves), else the defaults. The public boundary
    (``api.checked_estimate``, the CLI) builds and checks them."""
    if isinstance(options, EstimateOptions):
        return options
    if isinstance(options, Mapping) and isinstance(options.get("estimate"), EstimateOptions):
        return options["estimate"]
    return EstimateOptions()


def _footprints(function) -> tuple[int, int]:
    """Per-CTA shared-memory and register bytes: the function's peaks (a
    kernel holds at most its function's peak, so occupancy is never
    overstated)."""
    from tilefoundry.analysis.memory.records import MemoryMetadata

    memory = function.get_metadata(MemoryMetadata)
    peaks = {row.level: row.peak_bytes for row in memory.footprint} if memory else {}
    return peaks.get("smem", 0), peaks.get("rmem", 0)


def _declared_threads(topologies) -> int | None:
    """A CTA's threads as the module declares them: its ``thread`` topology's
    size (``Topology("thread", 512)``), when that is a number."""
    for topology in topologies or ():
        if topology.name == "thread" and isinstance(topology.size, int):
            return topology.size
    return None


def _program_bound(kernels: list[KernelEstimate]) -> str:
    by_bound: dict[str, int] = {}
    for kernel in kernels:
        by_bound[kernel.bound_by] = by_bound.get(kernel.bound_by, 0) + kernel.ns
    return max(by_bound.items(), key=lambda kv: (kv[1], kv[0]), default=("latency", 0))[0]


def _price(kernel, index: int, machine: tuple, priced: dict):
    """``price_kernel``, once per kernel structure: a kernel of the same
    structure takes the record (its own index and site) and the statement
    shares by position."""
    import dataclasses

    structure = kernel.structure
    found = priced.get(structure) if structure is not None else None
    if found is None:
        record, shares = price_kernel(kernel, index, *machine)
        if structure is not None:
            calls = kernel.calls()
            priced[structure] = (record, [shares.get(id(c)) if c is not None else None
                                          for c in calls])
        return record, shares
    template, by_position = found
    record = dataclasses.replace(template, index=index, site=kernel.site)
    return record, {id(call): share for call, share in zip(kernel.calls(), by_position)
                    if call is not None and share is not None}


def run_estimate(function, ctx) -> None:
    """AnalysisCallable: an EstimateMetadata on every timed Call and the
    EstimateSummaryMetadata on the Function."""
    from tilefoundry.analysis.performance.timeline import arrange
    from tilefoundry.analysis.recomputation import loop_dependence

    facts = estimate_facts(ctx.target)
    options = options_of(ctx.options)
    deps = loop_dependence(function, getattr(ctx, "call_sites", None))
    kernels = kernels_of(arrange(function, deps), facts, ctx.level,
                         declared_threads=_declared_threads(getattr(ctx, "topologies", ())))
    smem_cta, regs_cta = _footprints(function)
    estimates: list[KernelEstimate] = []
    shares: dict = {}
    priced: dict = {}  # kernel structure -> (record, shares by position): 32 layers priced once
    for index, kernel in enumerate(kernels):
        record, statement_shares = _price(kernel, index, (smem_cta, regs_cta, facts, options),
                                          priced)
        estimates.append(record)
        for key, (ns, bound) in statement_shares.items():
            shares[key] = EstimateMetadata(ns, bound, index)
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import Call

    if function.body is not None:
        for node in iter_nodes(function.body):
            if isinstance(node, Call) and id(node) in shares:
                node.with_metadata(shares[id(node)])
    total = sum(k.ns for k in estimates)
    function.with_metadata(EstimateSummaryMetadata(
        total, _program_bound(estimates), options.launch, tuple(estimates),
        not_modelled(facts, options)))


ANALYZER = Analyzer(
    selector="estimate",
    run=run_estimate,
    requires=("compute-cost", "memory"),
    produces=(EstimateMetadata, EstimateSummaryMetadata),
    input_checker=TargetFactsCheck(estimate_facts),  # estimate needs EstimateFacts
)
