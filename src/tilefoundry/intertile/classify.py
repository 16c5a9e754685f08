"""Relayout classifier (seed §7.2–7.4): two ownership tables -> one delivery op.

The axis table and the four-row decision are per-axis products; everything
the axis table cannot say (which core holds what, replication, coverage) is
read from the tables. Groups are the components of the overlap graph (one
per destination region for a gather without refined axes), with producer and
consumer cores read off the tables, ranked by ascending core id as §1.2 fixes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import gcd, prod

from tilefoundry.intertile.boxes import count_overlapping, overlapping_pairs
from tilefoundry.intertile.tables import Box, Tables

VERDICTS = ("op", "no-op", "not-a-work-division-pair", "insufficient-information",
            "selection")


@lru_cache(maxsize=None)
def scan(ns: int, nd: int) -> tuple[int, ...]:
    """Per destination slice, how many of `ns` equal source slices overlap it."""
    return tuple(-(-((k + 1) * ns) // nd) - (k * ns) // nd for k in range(nd))


@dataclass(frozen=True)
class AxisRow:
    axis: str
    Ns: int
    Nd: int
    relation: str
    fanin: int
    fanout: int
    uniform: bool
    gcd: int
    fanin_scan: tuple[int, ...] = ()
    fanout_scan: tuple[int, ...] = ()

    def as_json(self) -> dict:
        return {"axis": self.axis, "Ns": self.Ns, "Nd": self.Nd, "relation": self.relation,
                "fanin": self.fanin, "fanout": self.fanout, "uniform": self.uniform,
                "gcd": self.gcd}


@lru_cache(maxsize=None)
def axis_row(axis: str, ns: int, nd: int) -> AxisRow:
    fi, fo = scan(ns, nd), scan(nd, ns)
    return _row(axis, ns, nd, fi, fo)


def _row(axis, ns, nd, fi, fo) -> AxisRow:
    relation = "coarsened" if ns > nd else "refined" if nd > ns else "unchanged"
    uniform = len(set(fi)) <= 1 and len(set(fo)) <= 1
    return AxisRow(axis, ns, nd, relation, max(fi, default=0), max(fo, default=0), uniform,
                   gcd(ns, nd), tuple(fi), tuple(fo))


def _interval_row(axis: str, src: list, dst: list) -> AxisRow:
    """The exact 1-D scan over the intervals the tables actually hold (counted
    by bisection: n log n, not every source against every destination)."""
    fi = count_overlapping(src, dst)
    fo = count_overlapping(dst, src)
    return _row(axis, len(src), len(dst), fi, fo)


@dataclass
class Decision:
    verdict: str
    row: str | None
    op: str | None
    reason: str = ""
    dims: dict[str, list[str]] = field(default_factory=dict)


def decide(rows: list[AxisRow], n_src: int, n_dst: int, cores: int) -> Decision:
    """Rows 0–4 of §7.3 from the axis table alone (division-pair fast path)."""
    if prod(r.Ns for r in rows) != n_src or prod(r.Nd for r in rows) != n_dst:
        return Decision("not-a-work-division-pair", "guard", None,
                        "the regions are not the full product of the per-axis cuts; "
                        "enumerate regions instead")
    ragged = [r.axis for r in rows if not r.uniform]
    if ragged:
        return Decision("insufficient-information", "guard", None,
                        f"ragged axis {', '.join(ragged)}: no single op has uniform "
                        "dependency-set cardinality")
    coarse = [r.axis for r in rows if r.Ns > r.Nd]
    fine = [r.axis for r in rows if r.Nd > r.Ns]
    if not coarse and not fine:
        return Decision("op", "1", "inter_tile_consume")
    if not coarse:
        return Decision("op", "2", "inter_tile_scatter", dims={"scatter_dimensions": fine})
    if fine and n_dst == cores:
        return Decision("op", "3", "inter_tile_all_to_all",
                        dims={"split_dimensions": fine, "concat_dimensions": coarse})
    return Decision("op", "4", "inter_tile_gather", dims={"gather_dimensions": coarse})


def classify_divisions(src: dict[str, int], dst: dict[str, int], cores: int) -> Decision:
    """A division pair {axis: n} -> {axis: n}: the shorthand, which always tiles."""
    axes = list(src) + [a for a in dst if a not in src]
    rows = [axis_row(a, src.get(a, 1), dst.get(a, 1)) for a in axes]
    return decide(rows, prod(src.values()), prod(dst.values()), cores)


# ------------------------------------------------------------ from tables

@dataclass
class Classification:
    verdict: str
    row: str | None
    op: str | None
    reason: str
    axes: list[AxisRow]
    dims: dict[str, list[str]]
    groups: list[dict]
    M: int | None
    K: int | None
    components: int
    src_regions: int
    dst_regions: int
    local_select: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        out = {"verdict": self.verdict, "row": self.row, "op": self.op}
        out.update(self.dims)
        out.update({"groups": self.groups, "M": self.M, "K": self.K,
                    "components": self.components, "src_regions": self.src_regions,
                    "dst_regions": self.dst_regions,
                    "max_fanin": prod(r.fanin for r in self.axes),
                    "max_fanout": prod(r.fanout for r in self.axes),
                    "axes": [r.as_json() for r in self.axes]})
        if self.reason:
            out["reason"] = self.reason
        if self.local_select:
            out["local_select"] = self.local_select
        return out


def components(tables: Tables) -> list[tuple[list[Box], list[Box]]]:
    """Maximal sets of source and destination regions exchanging only among themselves."""
    src, dst = list(tables.source.regions), list(tables.destination.regions)
    parent = list(range(len(src) + len(dst)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for i, j in overlapping_pairs(src, dst):
        parent[find(i)] = find(len(src) + j)
    comps: dict[int, tuple[list, list]] = {}
    for i, s in enumerate(src):
        comps.setdefault(find(i), ([], []))[0].append(s)
    for j, d in enumerate(dst):
        comps.setdefault(find(len(src) + j), ([], []))[1].append(d)
    return sorted(comps.values(), key=lambda c: (sorted(c[1]) or sorted(c[0]))[0])


def classify_tables(tables: Tables) -> Classification:
    src, dst = tables.source, tables.destination
    rows = [_interval_row(axis, src.intervals(a), dst.intervals(a))
            for a, axis in enumerate(tables.axes)]
    n_src, n_dst = len(src.regions), len(dst.regions)
    comps = components(tables)
    d = decide(rows, n_src, n_dst, tables.cores)

    def result(decision: Decision, groups=(), local=()) -> Classification:
        k = len(comps)
        return Classification(decision.verdict, decision.row, decision.op, decision.reason,
                              rows, decision.dims, list(groups),
                              n_dst // k if k and n_dst % k == 0 else None,
                              n_src // k if k and n_src % k == 0 else None,
                              k, n_src, n_dst, list(local))

    if d.verdict == "not-a-work-division-pair":
        return result(d)
    for side in (src, dst):
        covered = sum(prod(hi - lo for lo, hi in box) for box in side.regions)
        if covered != tables.volume():
            return result(Decision(
                "selection", "guard", None,
                f"the {side.name} regions cover {covered} of {tables.volume()} elements: a "
                "selection, not a partition — select first, then classify the selected value"))
    if d.verdict != "op":
        return result(d)
    if d.row == "1":
        own = all(src.core_box.get(c) == box for box, hs in dst.regions.items() for c in hs)
        if own:
            return result(Decision("no-op", "1", None, "every core already holds its "
                                   "destination region"))
        groups = [{"producers": [src.regions[s[0]][0]],
                   "consumers": list(_holders(dst, ds))} for s, ds in comps]
        return result(d, groups)
    shared = [box for box, hs in src.regions.items() if len(hs) > 1]
    if shared:
        return result(Decision("insufficient-information", d.row, None,
                               f"{len(shared)} source region(s) have several holders (e.g. "
                               f"cores {list(src.regions[shared[0]])}); the tables do not say "
                               "which one transmits (R8 admits one producer per group)"))
    if d.row == "3" and any(len(hs) > 1 for hs in dst.regions.values()):
        return result(Decision("insufficient-information", "3", None,
                               "a destination region has several holders, so the consumer "
                               "rank cannot pick one split block per core"))
    if d.row == "4" and not [r for r in rows if r.Nd > r.Ns]:
        sources, targets = list(src.regions), sorted(dst.regions.items(), key=lambda kv: kv[1])
        inside: dict[int, list[Box]] = {}
        for i, j in overlapping_pairs(sources, [box for box, _ in targets]):
            inside.setdefault(j, []).append(sources[i])
        groups = [{"producers": list(_holders(src, inside.get(j, []))), "consumers": list(hs)}
                  for j, (_, hs) in enumerate(targets)]
        return result(d, groups)
    groups = [{"producers": list(_holders(src, ss)), "consumers": list(_holders(dst, ds))}
              for ss, ds in comps]
    local = [r.axis for r in rows if r.Nd > r.Ns] if d.row == "4" else []
    return result(d, groups, local)


def _holders(side, boxes) -> tuple[int, ...]:
    return tuple(sorted(c for b in boxes for c in side.regions[b]))
