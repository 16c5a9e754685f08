"""Reference execution of a delivery op with numpy.

Ranks are by ascending tile id: a producer's rank inside the set the consumer
assembles from (its own dependency set when written), a consumer's rank
inside C(g). Consumers that assemble from the same source tuple receive the
same array object — the values are equal by definition, and sharing is what
keeps an all-gather of large partials cheap. Tiles outside every C(g) get no
entry: their result is undefined.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from tilefoundry.errors import VerifyError
from tilefoundry.intertile.model import Delivery, Produce, Resolved, resolve
from tilefoundry.intertile.placement import Issue, Placement, block, odometer, place


class ExecutionError(VerifyError):
    """The op cannot be executed as written (ill-typed, missing partials)."""


def _placements(produce: Produce, delivery: Delivery, res: Resolved,
                g: int, c: int | None) -> list[Placement]:
    srcs = res.sources(g, c) if c is not None else res.producers[g]
    out = []
    for r, part in enumerate(produce.partial_types):
        declared = None if delivery.result_types is None else delivery.result_types[r].shape
        issues: list[Issue] = []
        pl = place(delivery.kind, part.shape, declared, delivery.dims, len(srcs),
                   len(res.consumers[g]), issues, f"group {g}")
        if pl is None:
            raise ExecutionError(f"{delivery.loc or delivery.opname}: cannot execute: "
                                 f"{issues[0].rule} {issues[0].message}")
        out.append(pl)
    return out


def _as_roles(value, n: int) -> tuple:
    roles = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(roles) != n:
        raise ExecutionError(f"expected {n} partial value(s) per producer, got {len(roles)}")
    return roles


def deliver(produce: Produce, delivery: Delivery, partials: Mapping[int, object],
            identity=None, tiles: int | None = None,
            resolved: Resolved | None = None) -> dict[int, tuple[np.ndarray, ...]]:
    """Delivered tensors per consumer tile: {tile: (role_0, ..., role_N-1)}."""
    res = resolved or resolve(produce, delivery, tiles)
    n = len(produce.partial_types)
    kind = delivery.kind

    def partial(p: int) -> tuple:
        if p not in partials:
            raise ExecutionError(f"no partial value for producer tile {p}")
        return _as_roles(partials[p], n)

    if kind in ("reduce", "reduce_scatter"):
        if delivery.combiner is None or identity is None:
            raise ExecutionError(f"{delivery.opname} needs a combiner and identity values")
        identity = _as_roles(identity, n)

    out: dict[int, tuple] = {}
    cache: dict[tuple, tuple] = {}
    for g in res.groups:
        consumers = res.consumers[g]
        for rank, c in enumerate(consumers):
            srcs = res.sources(g, c)
            if kind == "consume":
                if len(srcs) != 1:
                    raise ExecutionError(f"consume: group {g} consumer {c} has "
                                         f"{len(srcs)} sources (R8)")
                out[c] = partial(srcs[0])
                continue
            if kind == "scatter":
                if len(srcs) != 1:
                    raise ExecutionError(f"scatter: group {g} has {len(srcs)} producers (R8)")
                pls = _placements(produce, delivery, res, g, c)
                whole = partial(srcs[0])
                out[c] = tuple(w[block(pl.result, odometer(rank, pl.split))]
                               for w, pl in zip(whole, pls))
                continue
            if kind in ("reduce", "reduce_scatter"):
                key = ("fold", srcs)
                if key not in cache:
                    acc = identity
                    for p in srcs:
                        acc = tuple(delivery.combiner.fn(acc, partial(p)))
                    cache[key] = acc
                folded = cache[key]
                if kind == "reduce":
                    out[c] = folded
                else:
                    pls = _placements(produce, delivery, res, g, c)
                    out[c] = tuple(f[block(pl.result, odometer(rank, pl.split))]
                                   for f, pl in zip(folded, pls))
                continue
            if kind == "gather":
                key = ("gather", srcs)
                if key not in cache:
                    pls = _placements(produce, delivery, res, g, c)
                    cache[key] = _assemble(srcs, pls, produce, partial, None)
                out[c] = cache[key]
                continue
            pls = _placements(produce, delivery, res, g, c)  # all_to_all
            out[c] = _assemble(srcs, pls, produce, partial, rank)
    return out


def _assemble(srcs, pls, produce, partial, split_rank):
    """Concatenate (after splitting, for all_to_all) by the producer odometer."""
    roles = []
    for r, pl in enumerate(pls):
        piece_shape = list(produce.partial_types[r].shape)
        for a, f in pl.split.items():
            piece_shape[a] //= f
        piece_shape = tuple(piece_shape)
        first = partial(srcs[0])[r] if srcs else None
        dtype = first.dtype if first is not None else np.float32
        result = np.empty(pl.result, dtype=dtype)
        for l, p in enumerate(srcs):
            value = partial(p)[r]
            if split_rank is not None:
                value = value[block(piece_shape, odometer(split_rank, pl.split))]
            result[block(piece_shape, odometer(l, pl.concat))] = value
        roles.append(result)
    return tuple(roles)
