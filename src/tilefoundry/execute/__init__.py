"""Running a typed program in numpy (issue 20): the logical run, the placed run
participant by participant, and twins.

It reads ``ir``, ``ops`` (through the evaluator registry) and ``semantics``,
never ``analysis``: a run does not depend on a cost model. The caller (the
facade ``tilefoundry.execution``) hands it an inlined, dims-bound Function
(the program view) and its arguments.

- ``run_logical(function, arguments)``: the outputs, by name.
- ``error_bounds.run_bounded(function, arguments)``: the outputs and a forward
  error bound per element (``check --against``).
- ``check_placed(function, arguments)``: the placed run held against the
  logical one at every Reshard and output (``PlacedReport``).
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.execute.blas_threads import one_blas_thread
from tilefoundry.execute.compare import rounding_depths
from tilefoundry.execute.interpreter import run_body
from tilefoundry.execute.lockstep import Lockstep, PlacedMismatch, Stop
from tilefoundry.execute.logical import LogicalDomain, output_leaves

__all__ = ["run_logical", "check_placed", "PlacedReport", "PlacedMismatch", "output_names",
           "output_leaves"]


def output_names(function) -> list[str]:
    return [name for name, _, _ in output_leaves(function.body.type)]


def _outputs(function, value) -> list:
    return [(v, t) for _, v, t in output_leaves(function.body.type, value)]


def run_logical(function, arguments: dict, *, limit: int | None = None) -> dict:
    """Execute ``function`` (param Var -> array) and return output name -> array."""
    domain = LogicalDomain()
    with one_blas_thread():  # execute/blas_threads.py: why
        value = run_body(function, arguments, domain, limit=limit)
    return {name: domain.output(v, t)
            for name, (v, t) in zip(output_names(function), _outputs(function, value))}


@dataclass(frozen=True)
class PlacedReport:
    """What ``check --placed`` found.

    Attributes:
        passed: no placed value differed from its logical value.
        compared: how many assembled values were held against the logical run.
        mismatch: the first difference, or None.
        gathered: ops run once on assembled operands (their evaluator reads
            global coordinates), not on boxes.
        whole_values: placed values held whole (no per-axis box).
        outputs: output name -> logical value.
    """

    passed: bool
    compared: int
    mismatch: PlacedMismatch | None
    gathered: int
    whole_values: int
    outputs: dict


def check_placed(function, arguments: dict, *, limit: int | None = None,
                 mutation: str | None = None) -> PlacedReport:
    """Run ``function`` logically and as placed in lockstep."""
    domain = Lockstep(rounding_depths(function), mutation=mutation)
    pairs = {param: (value, value) for param, value in arguments.items()}
    # a parameter placed on a mesh arrives dealt out in boxes
    pairs = {param: (value, domain.placed.deal(value, param.type)) for param, (value, _) in pairs.items()}
    outputs: dict = {}
    try:
        with one_blas_thread():  # execute/blas_threads.py: why
            value = run_body(function, pairs, domain, limit=limit)
        for name, ((logical, placed), type_) in zip(output_names(function), _outputs_pairs(function, value)):
            logical = domain.logical.output(logical, type_)
            assembled, disagreement = domain.placed.assemble(placed, type_)
            outputs[name] = logical
            domain.hold(_ReturnSite(function, name), type_, logical, assembled, disagreement,
                        function.body)
    except Stop:  # the first mismatch is recorded; nothing after it is compared
        pass
    placed = domain.placed
    return PlacedReport(domain.mismatch is None, domain.compared, domain.mismatch,
                        placed.gathered, placed.whole_values, outputs)


def _outputs_pairs(function, value):
    logical, placed = value
    type_ = function.body.type
    return [((lv, pv), t) for (_, lv, t), (_, pv, _) in
            zip(output_leaves(type_, logical), output_leaves(type_, placed))]


class _ReturnSite:
    """The return, as the statement a mismatch names."""

    class _Op:
        name = "return"

    op = _Op()

    def __init__(self, function, name):
        self.function = function
        self.args = (function.body,)
        self._name = name

    def get_metadata(self, cls):
        return self.function.body.get_metadata(cls)
