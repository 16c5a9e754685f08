"""File-level checks: pair every future with its uses and verify each exchange."""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.intertile.ir import DeliveryOp, Function, Module, ProduceOp
from tilefoundry.intertile.model import Delivery, enumerate_groups
from tilefoundry.intertile.verifier import Diagnostic, verify_exchange


def exchanges(fn: Function) -> list[tuple[ProduceOp, list[DeliveryOp]]]:
    """Each produce with the delivery ops that read its future, in order."""
    out = []
    for p in fn.produces():
        name = p.results[0] if p.results else None
        if name is None:
            raise VerifyError(f"{p.loc}: inter_tile_produce has no result; name the future")
        uses = [op for op in fn.ops if isinstance(op, DeliveryOp) and op.operands[0] == name]
        out.append((p, uses))
    for op in fn.ops:
        if isinstance(op, DeliveryOp) and not any(op.operands[0] == (p.results or [None])[0]
                                                 for p in fn.produces()):
            raise VerifyError(f"{op.loc}: {op.name} reads {op.operands[0]}, which is not the "
                              "result of an inter_tile_produce; deliver a produced future")
    return out


def _check_future_type(produce: ProduceOp, d: Delivery) -> None:
    parts, groups = (d.future_type or (produce.model.partial_types, produce.model.groups))[:2]
    if tuple(parts) != tuple(produce.model.partial_types):
        raise VerifyError(f"{d.loc}: {d.opname} spells the future's partial types as "
                          f"{[t.text() for t in parts]}, the produce op yields "
                          f"{[t.text() for t in produce.model.partial_types]}; repeat the "
                          "produce op's future type")
    if groups != produce.model.groups and (
            enumerate_groups(groups, d.loc) != enumerate_groups(produce.model.groups, d.loc)):
        raise VerifyError(f"{d.loc}: {d.opname} names a different group set from its produce "
                          "op; the group set lives in the future type — repeat it")


def check_function(fn: Function, tiles: int | None = None) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for produce, uses in exchanges(fn):
        for u in uses:
            _check_future_type(produce, u.model)
        extra = [op for op in fn.uses_of(produce.results[0]) if not isinstance(op, DeliveryOp)]
        models = [u.model for u in uses]
        diags += verify_exchange(produce.model, models, tiles)
        if extra:
            diags.append(Diagnostic("R2", "ktdp.inter_tile_produce",
                                    f"future {produce.results[0]} is also used by "
                                    f"{', '.join(op.name for op in extra)}; only one delivery "
                                    "op may read a future", produce.loc))
    return diags


def check_module(module: Module, tiles: int | None = None) -> dict[str, list[Diagnostic]]:
    return {fn.name: check_function(fn, tiles) for fn in module.functions}


def first_exchange(fn: Function):
    ex = exchanges(fn)
    if not ex or not ex[0][1]:
        raise VerifyError(f"{fn.loc}: {fn.name} has no delivered future to run")
    return ex[0][0], ex[0][1][0]


__all__ = ["exchanges", "check_function", "check_module", "first_exchange", "ProduceOp"]
