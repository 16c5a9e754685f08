"""compute-cost (analysis §1.2.1): the logical work of every authored Call.

Per reachable primitive Call, the registered cost evaluator runs twice: over the
types as written (``flops``, ``service``) and over the types projected to one
unit of the analysed level, read in their logical axes (``flops_per_unit``,
``service_per_unit``; companions §2.7). A Call's record states one occurrence.
The Function record sums every Call's record times its recomputation factor:
the product of the trip counts of the authored loops whose induction variable or
carried value the Call transitively reads (a loop-invariant Call keeps 1).
The same rule holds for a Function Call, whose callee total is multiplied by the
call site's factor: in the inlined view an inlined primitive therefore also
takes every loop that an argument of an enclosing call site reads, so a callee
computation that reads none of the loop-variant arguments is still repeated
with the call (analysis §1.2.1). The factors are the framework's
(``analysis/recomputation.py``): every family that counts executions reads them.

No target fact is read. Evaluations are memoised by structural key (op, operand
types, result type, level) within one call, so repeated layers cost one
evaluation; nothing is cached across calls.
"""
from __future__ import annotations

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import IRMetadata, SourceSpanMetadata, value_name
from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.analysis.recomputation import occurrence_weights, recomputation_factors

__all__ = ["ComputeCostMetadata", "ANALYZER", "run_compute_cost"]


@frozen_dataclass
class ComputeCostMetadata(IRMetadata):
    """One Call's logical work, as the authored program states it.

    Attributes:
        flops: Flop count per compute DType name, sorted by name.
        flops_per_unit: Flop count performed by one unit of the analysed topology level.
        service: Result count per service kind, sorted by kind.
        service_per_unit: Result count per service kind for one unit of the analysed level.
    """

    flops: tuple[tuple[str, int], ...] = ()
    flops_per_unit: tuple[tuple[str, int], ...] = ()
    service: tuple[tuple[str, int], ...] = ()
    service_per_unit: tuple[tuple[str, int], ...] = ()

    family = "compute-cost"


def _sorted(mapping: dict) -> tuple:
    return tuple(sorted((getattr(k, "name", k), int(v)) for k, v in mapping.items()))


def _add(total: dict, pairs: tuple, factor: int) -> None:
    for key, value in pairs:
        total[key] = total.get(key, 0) + value * factor


def _missing_evaluator(call) -> AnalysisError:
    name = type(call.op).__name__
    span = call.get_metadata(SourceSpanMetadata)
    label = value_name(call)
    where = f"  at {span} variable '{label}'" if span else f"  at {label}"
    return AnalysisError(f"{name}: no cost evaluator registered for {name}\n{where}")


def _evaluation_error(call, exc) -> AnalysisError:
    name = type(call.op).__name__
    span = call.get_metadata(SourceSpanMetadata)
    label = value_name(call)
    where = f"  at {span} variable '{label}'" if span else f"  at {label}"
    from tilefoundry.errors import reason_of

    first = reason_of(exc)
    return AnalysisError(f"{name}: compute-cost: {first}\n{where}")


# ---------------------------------------------------------------- the analysis


def _postorder_calls(function: Function) -> list:
    from tilefoundry.analysis.check import iter_nodes

    return [n for n in iter_nodes(function.body) if isinstance(n, Call)] if function.body is not None else []


def evaluate_call(call, whole, local, memo: dict) -> ComputeCostMetadata:
    """The record of one occurrence (no loop factor), memoised by structural key."""
    from tilefoundry.semantics.op_registry import COST_EVALUATORS

    structure = call.structure  # a structure met before: its record, with no key built
    if structure is not None:
        record = memo.get(structure)
        if record is not None:
            return record
    handler = COST_EVALUATORS.get(type(call.op))
    if handler is None:
        raise _missing_evaluator(call)
    key = (call.op, tuple(a.type for a in call.args), call.type)
    try:
        record = memo.get(key)
    except TypeError:  # an unhashable attribute: evaluate every time
        key, record = None, None
    if record is not None:
        if structure is not None:
            memo[structure] = record
        return record
    try:
        cost_whole = handler(call, whole.bind(call))
        cost_unit = handler(call, local.bind(call)) if local.level is not None else cost_whole
    except TileFoundryError as exc:
        raise _evaluation_error(call, exc) from None
    except (TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
        raise _evaluation_error(call, exc) from None
    record = ComputeCostMetadata(
        flops=_sorted(cost_whole.flops),
        flops_per_unit=_sorted(cost_unit.flops),
        service=_sorted(cost_whole.service),
        service_per_unit=_sorted(cost_unit.service),
    )
    if key is not None:
        memo[key] = record
        if structure is not None:
            memo[structure] = record
    return record


def run_compute_cost(function: Function, ctx) -> None:
    """AnalysisCallable: attach a ComputeCostMetadata to every Call and the Function."""
    whole, local = ctx.whole, ctx.local
    memo: dict = {}
    calls = _postorder_calls(function)
    records = {}
    for call in calls:
        records[id(call)] = evaluate_call(call, whole, local, memo)
    factors = recomputation_factors(function, call_sites=getattr(ctx, "call_sites", None))
    totals = {"flops": {}, "flops_per_unit": {}, "service": {}, "service_per_unit": {}}
    for call in calls:
        call.with_metadata(records[id(call)])
    for record, weight in occurrence_weights(records.items(), factors):
        for name, total in totals.items():
            _add(total, getattr(record, name), weight)
    function.with_metadata(ComputeCostMetadata(**{k: _sorted(v) for k, v in totals.items()}))


ANALYZER = Analyzer(
    selector="compute-cost",
    run=run_compute_cost,
    requires=(),
    produces=(ComputeCostMetadata,),
)
