"""A classified relayout as KTIR text, verified from that text and executed.

The classifier's groups are explicit tables; KTIR spells every tile family as
one affine set ``(i)[g]``. ``affine_family`` fits the tables to the form
``i = base(g) + sum_k s_k * j_k`` (the same offsets in every group, a base
affine in ``g``) and the fitted text is read back and enumerated, so a set is
only written when it names exactly the table's tiles. The module is written by
the existing writer, read back by the reader, verified R1–R12 by the verifier
and run by the numpy executor on the model read back: what is reported is what
the text says.

Fold ops (seed §4–§5): a Partial completed to Broadcast is ``reduce`` (every
holder a consumer: an all-reduce), completed to Split across the participants
is ``reduce_scatter``. The classifier sees the contributions as one more axis
(``partial``) that the destination no longer cuts; its gather over that axis
is the reduce, its all-to-all concatenating that axis is the reduce_scatter.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilefoundry.errors import VerifyError
from tilefoundry.intertile.affine import AffineSet
from tilefoundry.intertile.classify import Classification
from tilefoundry.intertile.executor import deliver
from tilefoundry.intertile.ir import DeliveryOp, Function, Module, Op, ProduceOp
from tilefoundry.intertile.model import (AffineFamily, Delivery, ExplicitFamily, Produce,
                                         TensorType, builtin_combiner, resolve)
from tilefoundry.intertile.tables import Box, Tables

__all__ = ["PARTIAL_AXIS", "Planned", "plan_delivery", "affine_family", "ktir_text",
           "check_text", "reproduces_destination", "EXECUTION_LIMIT"]

PARTIAL_AXIS = "partial"
#: The executor runs an op on the real shapes up to this many elements; beyond
#: it, on the cut grid (each axis one element per slice of the finer side).
EXECUTION_LIMIT = 1 << 16
_COMBINE = {"sum": "arith.addf", "max": "arith.maximumf", "min": "arith.minimumf"}
_IDENTITY = {"sum": "0.0", "max": "-3.4e38", "min": "3.4e38"}
_KIND = {"inter_tile_consume": "consume", "inter_tile_scatter": "scatter",
         "inter_tile_all_to_all": "all_to_all", "inter_tile_gather": "gather"}


@dataclass(frozen=True)
class Planned:
    """The delivery op a classification names, with its explicit groups."""

    kind: str  # consume | scatter | gather | all_to_all | reduce | reduce_scatter
    producers: dict  # g -> producer cores
    consumers: dict  # g -> consumer cores
    dims: dict  # attribute -> axis indices (of the partial type)
    partial: tuple  # partial shape
    result: tuple  # result shape
    reduction: str | None = None
    elem: str = "f32"  # the element type the KTIR tensors are written with

    @property
    def opname(self) -> str:
        return "inter_tile_" + self.kind


def _shape(box: Box, drop: int | None) -> tuple:
    return tuple(hi - lo for a, (lo, hi) in enumerate(box) if a != drop)


def _bbox(boxes) -> Box:
    return tuple((min(b[a][0] for b in boxes), max(b[a][1] for b in boxes))
                 for a in range(len(boxes[0])))


def plan_delivery(tables: Tables, cls: Classification, reduction: str | None = None,
                  elem: str = "f32") -> Planned:
    """The op of an ``op`` verdict; with a ``partial`` axis, the fold it implies.
    Raises VerifyError naming why when the pair is no single op."""
    if cls.verdict != "op":
        raise VerifyError(f"verdict {cls.verdict}: there is no op to build")
    groups = range(len(cls.groups))
    producers = {g: tuple(cls.groups[g]["producers"]) for g in groups}
    consumers = {g: tuple(cls.groups[g]["consumers"]) for g in groups}
    src, dst = tables.source, tables.destination
    fold = tables.axes.index(PARTIAL_AXIS) if PARTIAL_AXIS in tables.axes else None
    kind = _KIND[cls.op]
    if fold is not None and cls.axes[fold].Nd == 1:
        kind = _fold_kind(cls, kind)
    elif fold is not None:  # the contributions move whole: no fold
        reduction = None
        if any(PARTIAL_AXIS in axes for axes in cls.dims.values()):
            raise VerifyError("the reshard regroups the Partial contributions without "
                              "completing them; no single delivery op does that")
    index = {axis: a - (fold is not None and a > fold) for a, axis in enumerate(tables.axes)}
    dims = {name: tuple(index[a] for a in axes if a != PARTIAL_AXIS)
            for name, axes in cls.dims.items()}
    if kind == "reduce":
        dims = {}
    elif kind == "reduce_scatter":
        dims = {"scatter_dimensions": dims["split_dimensions"]}
    partial = _shape(src.core_box[producers[0][0]], fold)
    if kind == "gather" and cls.local_select:
        result = _shape(_bbox([src.core_box[p] for p in producers[0]]), fold)
    else:
        result = _shape(dst.core_box[consumers[0][0]], fold)
    return Planned(kind, producers, consumers, dims, partial, result, reduction, elem)


def _fold_kind(cls: Classification, kind: str) -> str:
    """A completed Partial: gather over ``partial`` alone is reduce, all-to-all
    concatenating ``partial`` alone is reduce_scatter; anything else is two ops."""
    coarse = [r.axis for r in cls.axes if r.Ns > r.Nd]
    if coarse != [PARTIAL_AXIS]:
        raise VerifyError(f"the fold also concatenates {[a for a in coarse if a != PARTIAL_AXIS]}"
                          ": that is a reduce followed by a gather, not one delivery op")
    if kind == "gather" and not cls.local_select:
        return "reduce"
    if kind == "all_to_all":
        return "reduce_scatter"
    raise VerifyError(f"a completed Partial classified as {cls.op}"
                      f"{' with a local selection' if cls.local_select else ''} is no fold op")


# ---------------------------------------------------------------- affine sets


def _strides(offsets: tuple) -> list[tuple[int, int]] | None:
    """``offsets`` (sorted, from 0) as {sum s_k j_k : 0 <= j_k < n_k}, outermost
    first, each stride a multiple of the next one's span; None when not so."""
    levels: list[tuple[int, int]] = []
    rest = list(offsets)
    while len(rest) > 1:
        step = rest[1]
        run = 1
        while run < len(rest) and rest[run] == run * step:
            run += 1
        if len(rest) % run:
            return None
        levels.append((step, run))
        blocks = rest[::run]
        if any(rest[k:k + run] != [b + j * step for j in range(run)]
               for k, b in zip(range(0, len(rest), run), blocks)):
            return None
        base = blocks[0]
        rest = [b - base for b in blocks]
    levels.reverse()
    for (outer, _), (inner, n) in zip(levels, levels[1:]):
        if outer % (inner * n):
            return None
    return levels


def _base_terms(bases: list[int]) -> str | None:
    """``base(g)`` as affine text in g: ``a * g + b`` or, for a two-digit group
    index, ``a1 * (g floordiv m) + a2 * (g mod m) + b``."""
    n, b = len(bases), bases[0]
    if n == 1:
        return f"{b}"
    a = bases[1] - b
    if all(bases[g] == a * g + b for g in range(n)):
        return _sum([f"{a} * g" if a else "", f"{b}" if b else ""])
    for m in range(2, n):
        if n % m:
            continue
        a2 = bases[1] - b
        a1 = bases[m] - b
        if all(bases[g] == a1 * (g // m) + a2 * (g % m) + b for g in range(n)):
            return _sum([f"{a1} * (g floordiv {m})", f"{a2} * (g mod {m})" if a2 else "",
                         f"{b}" if b else ""])
    return None


def _sum(terms: list[str]) -> str:
    return " + ".join(t for t in terms if t) or "0"


def affine_family(table: dict) -> AffineSet | None:
    """The affine set ``(i)[g]`` naming exactly ``table`` (g -> tiles), or None."""
    groups = sorted(table)
    if groups != list(range(len(groups))):
        return None
    sets = [sorted(table[g]) for g in groups]
    offsets = {tuple(t - s[0] for t in s) for s in sets}
    if len(offsets) != 1:
        return None
    (offset,) = offsets
    levels = _strides(offset)
    base = _base_terms([s[0] for s in sets])
    if levels is None or base is None:
        return None
    r = "i" if base == "0" else f"(i - ({base}))" if " + " in base else f"(i - {base})"
    if not levels:
        constraints = [f"{r} == 0"]
    else:
        (top, count), constraints = levels[0], [f"{r} >= 0"]
        top_digit = r if top == 1 else f"({r} floordiv {top})"
        constraints.append(f"{count - 1} - {top_digit} >= 0")
        for (outer, _), (inner, n) in zip(levels, levels[1:]):
            constraints.append(f"{n - 1} - (({r} mod {outer}) floordiv {inner}) >= 0")
        if levels[-1][0] > 1:
            constraints.append(f"{r} mod {levels[-1][0]} == 0")
    aset = AffineSet.parse(f"affine_set<(i)[g] : ({', '.join(constraints)})>")
    found = resolve(Produce(AffineFamily(aset), tuple(groups), (TensorType((1,)),)),
                    Delivery("consume", ExplicitFamily({})))
    return aset if all(found.producers[g] == tuple(sets[g]) for g in groups) else None


# ---------------------------------------------------------------- the text


def _tensor(shape, elem: str) -> TensorType:
    return TensorType(tuple(shape), elem)


def ktir_text(plan: Planned, name: str = "@reshard") -> str | None:
    """The module holding the op, written by the existing writer; None when a
    tile family has no affine spelling."""
    from tilefoundry.intertile.writer import write_module

    producers = affine_family(plan.producers)
    consumers = affine_family(plan.consumers)
    if producers is None or consumers is None:
        return None
    count = len(plan.producers)
    groups = AffineSet.parse(f"affine_set<(g) : (g >= 0, {count - 1} - g >= 0)>")
    part, result = _tensor(plan.partial, plan.elem), _tensor(plan.result, plan.elem)
    produce = Produce(AffineFamily(producers), groups, (part,), name="%fut")
    yield_op = Op("ktdp.yield_partial", text=f"%part : {part.text()}")
    ops: list = []
    if plan.reduction is not None:
        ops.append(Op("arith.constant", ("%identity",),
                      text=f"dense<{_IDENTITY[plan.reduction]}> : {part.text()}"))
    ops.append(ProduceOp("ktdp.inter_tile_produce", ("%fut",), model=produce,
                         region=[yield_op]))
    delivery = Delivery(plan.kind, AffineFamily(consumers), None, dict(plan.dims),
                        (result,), future_type=((part,), groups, None))
    region, block_args = [], ()
    if plan.reduction is not None:
        delivery.identity_names, delivery.identity_types = ("%identity",), (part,)
        block_args = ("%lhs", "%rhs")
        region = [Op(_COMBINE[plan.reduction], ("%folded",), text=f"%lhs, %rhs : {part.text()}"),
                  Op("ktdp.yield_reduced", text=f"%folded : {part.text()}")]
    ops.append(DeliveryOp(delivery.opname, ("%r",), ("%fut",), model=delivery,
                          block_args=block_args, region=region))
    ops.append(Op("return", text=f"%r : {result.text()}"))
    fn = Function(name, [("%part", part)], [result], ops)
    return write_module(Module("<reshard>", {}, [fn])).lstrip("\n")


def check_text(text: str, tiles: int, where: str = "<reshard>"):
    """(diagnostics, produce, delivery) of the module read back from ``text``."""
    from tilefoundry.intertile.program import check_function, first_exchange
    from tilefoundry.intertile.reader import read_text

    fn = read_text(text, where).functions[0]
    diagnostics = check_function(fn, tiles)
    produce, delivery = first_exchange(fn)
    return diagnostics, produce.model, delivery.model


def _contribution(region: np.ndarray, k: int, reduction: str) -> np.ndarray:
    """Holder k's contribution: distinct per holder, folded below by numpy alone
    (contributions moved without a fold are labelled as for a sum)."""
    if reduction in ("sum", None):
        return region * (k + 1)
    return region + k if reduction == "max" else region - k


def reproduces_destination(tables: Tables, plan: Planned, produce: Produce,
                           delivery: Delivery) -> bool:
    """Run the op on X = arange over the tables' tensor: does every destination
    core end up holding its destination region of the (folded) X?"""
    fold = tables.axes.index(PARTIAL_AXIS) if PARTIAL_AXIS in tables.axes else None
    x = np.arange(tables.volume(), dtype=np.float64).reshape(tables.extents)

    def region(box: Box, k: int | None = None) -> np.ndarray:
        keep = tuple(slice(lo, hi) if a != fold else slice(0, 1)
                     for a, (lo, hi) in enumerate(box))
        value = x[keep]
        if fold is not None:
            value = np.squeeze(value, axis=fold)
            if k is not None:
                value = _contribution(value, k, plan.reduction)
        return value

    contributions = tables.extents[fold] if fold is not None else 1
    partials = {c: region(box, box[fold][0] if fold is not None else None)
                for c, box in tables.source.core_box.items()}
    folding = plan.reduction is not None
    identity = None
    if plan.reduction is not None:
        delivery.combiner = builtin_combiner(plan.reduction)
        identity = (np.full(plan.partial, {"sum": 0.0, "max": -np.inf,
                                           "min": np.inf}[plan.reduction]),)
    got = deliver(produce, delivery, partials, identity, tiles=tables.cores)
    for c, box in tables.destination.core_box.items():
        want = region(box, box[fold][0] if fold is not None and not folding else None)
        if folding:
            ufunc = {"sum": np.add, "max": np.maximum, "min": np.minimum}[plan.reduction]
            want = ufunc.reduce([_contribution(want, k, plan.reduction)
                                 for k in range(contributions)])
        value = got.get(c, (None,))[0]
        if value is not None and plan.kind == "gather" and value.shape != want.shape:
            value = _select(value, box, tables, plan, c, fold)
        if value is None or not np.array_equal(value, want):
            return False
    return True


def _select(value, box, tables, plan, core, fold):
    """A gather with refined axes: the consumer's own slice of what it assembled."""
    group = next(g for g, cs in plan.consumers.items() if core in cs)
    origin = _bbox([tables.source.core_box[p] for p in plan.producers[group]])
    keep = tuple(slice(lo - o, hi - o) for a, ((lo, hi), (o, _)) in
                 enumerate(zip(box, origin)) if a != fold)
    return value[keep]
