"""Turn a classification into a delivery op, verify it, and run it on data.

This is the end-to-end check of §7: the classified op must pass R1–R12 and,
executed on the source ownership of a concrete tensor, must leave every
destination core holding exactly its destination region. When core ids are
not in the odometer order of the regions, the op verifies and still delivers
the wrong blocks (the kt03/kt04 trap); `reproduces` reports that.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilefoundry import limits
from tilefoundry.errors import VerifyError
from tilefoundry.intertile.classify import Classification
from tilefoundry.intertile.executor import deliver
from tilefoundry.intertile.model import (Delivery, ExplicitFamily, Produce, TensorType,
                                         builtin_combiner)
from tilefoundry.intertile.tables import Box, Tables
from tilefoundry.intertile.verifier import Diagnostic, verify

_KIND = {"inter_tile_consume": "consume", "inter_tile_scatter": "scatter",
         "inter_tile_all_to_all": "all_to_all", "inter_tile_gather": "gather"}


def _shape(box: Box) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in box)


def _bbox(boxes) -> Box:
    return tuple((min(b[a][0] for b in boxes), max(b[a][1] for b in boxes))
                 for a in range(len(boxes[0])))


@dataclass
class Realized:
    produce: Produce
    delivery: Delivery
    diagnostics: list[Diagnostic]


def realize(tables: Tables, cls: Classification) -> Realized:
    if cls.verdict != "op":
        raise VerifyError(f"{tables.where}: verdict {cls.verdict}: there is no op to build")
    kind = _KIND[cls.op]
    src, dst = tables.source, tables.destination
    groups = range(len(cls.groups))
    producers = {g: tuple(cls.groups[g]["producers"]) for g in groups}
    consumers = {g: tuple(cls.groups[g]["consumers"]) for g in groups}
    part = _shape(src.core_box[producers[0][0]])
    if kind == "gather" and cls.local_select:
        boxes = [src.core_box[p] for p in producers[0]]
        result = _shape(_bbox(boxes))
    else:
        result = _shape(dst.core_box[consumers[0][0]])
    index = {axis: a for a, axis in enumerate(tables.axes)}
    dims = {name: tuple(index[a] for a in axes) for name, axes in cls.dims.items()}
    produce = Produce(ExplicitFamily(producers), tuple(groups), (TensorType(part),))
    delivery = Delivery(kind, ExplicitFamily(consumers), None, dims, (TensorType(result),))
    return Realized(produce, delivery, verify(produce, delivery, tables.cores))


def reproduces(tables: Tables, cls: Classification) -> dict[int, bool]:
    """Per destination core: does the delivered tensor equal its region of X?"""
    r = realize(tables, cls)
    if r.diagnostics:
        raise VerifyError(f"{tables.where}: the classified op does not verify: "
                          f"{r.diagnostics[0]}")
    limits.check("ELEMENTS", tables.volume(), f"{tables.where}: checking the delivery "
                 f"on the whole tensor {tables.extents} executes {tables.volume():,} elements")
    x = np.arange(tables.volume(), dtype=np.float64).reshape(tables.extents)

    def region(box: Box):
        return x[tuple(slice(lo, hi) for lo, hi in box)]
    partials = {c: region(box) for c, box in tables.source.core_box.items()}
    got = deliver(r.produce, r.delivery, partials, tiles=tables.cores)
    out = {}
    for c, box in tables.destination.core_box.items():
        value = got.get(c, (None,))[0]
        if value is not None and cls.local_select:
            comp = _bbox([tables.source.core_box[p] for g in cls.groups
                          if c in g["consumers"] for p in g["producers"]])
            value = value[tuple(slice(lo - clo, hi - clo)
                                for (lo, hi), (clo, _) in zip(box, comp))]
        out[c] = value is not None and np.array_equal(value, region(box))
    return out


__all__ = ["realize", "reproduces", "builtin_combiner"]
