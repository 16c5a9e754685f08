"""A small family defined only in the tests: proof that a family slots in as
one more Analyzer (and one more Target entry), with no framework change."""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.ir.expr import Call
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.target.cpu import CpuTarget


@dataclass(frozen=True)
class OpCountMetadata(IRMetadata):
    """How many flops a call's compute-cost record states, summed over dtypes."""

    total: int = 0


def _run(function, ctx):
    from tilefoundry.analysis.check import iter_nodes

    grand = 0
    for node in iter_nodes(function.body):
        if isinstance(node, Call):
            record = node.get_metadata(ComputeCostMetadata)  # read the dependency's record
            total = sum(v for _, v in record.flops)
            grand += total
            node.with_metadata(OpCountMetadata(total))
    function.with_metadata(OpCountMetadata(grand))


OP_COUNT = Analyzer("op-count", _run, requires=("compute-cost",), produces=(OpCountMetadata,))


@dataclass(frozen=True, repr=False)
class ToyTarget(CpuTarget):
    """The CPU plus one analyzer; every standard analyzer is inherited."""

    analyzer_paths = {"op-count": OP_COUNT}

    def __repr__(self) -> str:
        return "ToyTarget()"
