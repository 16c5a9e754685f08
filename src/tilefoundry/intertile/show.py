"""Text rendering for `intertile run`: which producer slice landed where.

Each producer's partial is filled with labels `t<tile>[i,j]` (its tile id and
the element's position), delivered through the reference executor, and every
consumer's result is printed as a grid of those labels; a fold shows its
contributors joined by '+'.
"""
from __future__ import annotations

import numpy as np

from tilefoundry import limits

from tilefoundry.intertile.executor import deliver
from tilefoundry.intertile.model import Combiner, Delivery, Produce, resolve

MAX_ROWS, MAX_COLS = 8, 8


def _labels(tile: int, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out[idx] = f"t{tile}[{','.join(map(str, idx))}]"
    return out


def _join(a, b):
    return f"{a}+{b}" if a else b


_fold = np.frompyfunc(_join, 2, 1)


def show_exchange(fname: str, produce: Produce, delivery: Delivery,
                  tiles: int | None = None) -> str:
    res = resolve(produce, delivery, tiles)
    _check_size(fname, produce, delivery, res)
    partials = {p: tuple(_labels(p, t.shape) for t in produce.partial_types)
                for g in res.groups for p in res.producers[g]}
    label_delivery = delivery
    identity = None
    if delivery.combiner is not None:
        label_delivery = Delivery(**{**delivery.__dict__, "combiner": Combiner(
            "labels", lambda a, b: tuple(_fold(x, y) for x, y in zip(a, b)))})
        identity = tuple(np.full(t.shape, "", dtype=object) for t in produce.partial_types)
    got = deliver(produce, label_delivery, partials, identity, resolved=res)
    lines = [f"{fname}: {delivery.opname}, {len(res.groups)} group(s), {res.tiles} tiles"]
    for g in res.groups:
        lines.append(f"  group {g}: producers {list(res.producers[g])} -> consumers "
                     f"{list(res.consumers[g])}")
        for c in res.consumers[g]:
            for r, value in enumerate(got[c]):
                role = f" role {r}" if len(got[c]) > 1 else ""
                lines.append(f"    tile {c}{role} {value.shape}:")
                lines += ["      " + row for row in _grid(value)]
    idle = sorted(set(range(res.tiles)) - set(got))
    if idle:
        lines.append(f"  undefined on tiles {idle}")
    return "\n".join(lines)


def _numel(shape) -> int:
    return int(np.prod(shape, dtype=object)) if shape else 1


def _check_size(fname: str, produce: Produce, delivery: Delivery, res) -> None:
    """Refuse, before any array is made, a run whose labels outgrow the
    executed-elements limit: every tile of the workgroup is listed, every
    producer's partials are labelled and every consumer receives a result."""
    per_partial = sum(_numel(t.shape) for t in produce.partial_types)
    producers = sum(len(v) for v in res.producers.values())
    received = 0
    for g in res.groups:
        for c in res.consumers[g]:
            sources = max(len(res.sources(g, c)), 1)
            declared = delivery.result_types
            received += (sum(_numel(t.shape) for t in declared) if declared
                         else per_partial * sources)
    executed = res.tiles + producers * per_partial + received
    limits.check("ELEMENTS", executed,
                 f"{delivery.loc or fname}: running {fname} on {res.tiles:,} tiles executes "
                 f"{executed:,} elements")


def _grid(value: np.ndarray) -> list[str]:
    v = value.reshape(1, -1) if value.ndim < 2 else value.reshape(-1, value.shape[-1])
    rows = v[:MAX_ROWS, :MAX_COLS]
    width = max((len(str(x)) for x in rows.flat), default=1)
    out = ["  ".join(str(x).ljust(width) for x in row).rstrip()
           + (" ..." if v.shape[1] > MAX_COLS else "") for row in rows]
    if v.shape[0] > MAX_ROWS:
        out.append(f"... ({v.shape[0] - MAX_ROWS} more rows)")
    return out
