"""The inter-tile model: tile futures, produce, the six delivery ops.

Tile families (producer / consumer / dependency sets) come in two kinds: an
isl-backed affine set read from text, or an explicit table built by a program
(the relayout classifier's groups are read off ownership tables and are not
affine in general). Both enumerate to plain sorted tuples of tile ids, which is
all the verifier and executor look at.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from tilefoundry import limits
from tilefoundry.errors import VerifyError
from tilefoundry.intertile.affine import AffineSet, count, is_bounded, points

# The semantics matrix (seed §1): combine, placement, and the dimension
# attributes each op carries, in canonical order.
OPS: dict[str, dict] = {
    "consume": dict(fold=False, placement="replicate", dims=()),
    "reduce": dict(fold=True, placement="replicate", dims=()),
    "reduce_scatter": dict(fold=True, placement="split", dims=("scatter_dimensions",)),
    "gather": dict(fold=False, placement="concat", dims=("gather_dimensions",)),
    "all_to_all": dict(fold=False, placement="permute",
                       dims=("split_dimensions", "concat_dimensions")),
    "scatter": dict(fold=False, placement="split", dims=("scatter_dimensions",)),
}
OP_PREFIX = "ktdp.inter_tile_"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    elem: str = "f32"

    def text(self) -> str:
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + self.elem + ">"


# ------------------------------------------------------------ tile families

@dataclass(frozen=True)
class AffineFamily:
    """Tiles `(i)[g]` (or dependency `(p)[c]` / `(p)[c, g]`) as an isl set."""
    aset: AffineSet
    alias: str | None = None

    def text(self) -> str:
        return self.alias or self.aset.to_text()


@dataclass(frozen=True)
class ExplicitFamily:
    """Tiles per key, where key is a group g, or (g, c) for a dependency set."""
    table: Mapping

    def text(self) -> str:
        return "<explicit>"


Family = AffineFamily | ExplicitFamily


@dataclass
class Combiner:
    """Fold of two role-tuples of arrays; `impure` lists side-effecting ops found."""
    name: str  # "sum" | "max" | "min" | "callable" | "region"
    fn: Callable[[tuple, tuple], tuple]
    impure: tuple[str, ...] = ()
    region_text: str = ""


def builtin_combiner(name: str) -> Combiner:
    import numpy as np

    ufunc = {"sum": np.add, "max": np.maximum, "min": np.minimum}.get(name)
    if ufunc is None:
        raise VerifyError(f"unknown combiner {name!r}; use sum, max, min or a pure callable")
    return Combiner(name, lambda a, b: tuple(ufunc(x, y) for x, y in zip(a, b)))


@dataclass
class Produce:
    producers: Family
    groups: AffineSet | tuple[int, ...]
    partial_types: tuple[TensorType, ...]
    name: str = "%fut"
    loc: str = ""
    groups_alias: str | None = None
    yields: tuple[str, ...] = ()
    body: list = field(default_factory=list)  # ops of the region (text input)


@dataclass
class Delivery:
    kind: str
    consumers: Family
    dependency: Family | None = None
    dims: dict[str, tuple[int, ...]] = field(default_factory=dict)
    result_types: tuple[TensorType, ...] | None = None
    combiner: Combiner | None = None
    identity_types: tuple[TensorType, ...] | None = None
    identity_names: tuple[str, ...] = ()
    future: str = "%fut"
    results: tuple[str, ...] = ("%r",)
    loc: str = ""
    future_type: tuple | None = None  # (partials, group set) as the op spells it

    @property
    def opname(self) -> str:
        return OP_PREFIX + self.kind

    def dim_list(self, which: str) -> tuple[int, ...]:
        return self.dims.get(which, ())


# ---------------------------------------------------------------- resolution

@dataclass
class Resolved:
    """Every set enumerated for a workgroup of `tiles` tiles."""
    tiles: int
    groups: tuple[int, ...]
    producers: dict[int, tuple[int, ...]]
    consumers: dict[int, tuple[int, ...]]
    dependency: dict[tuple[int, int], tuple[int, ...]] | None

    def sources(self, g: int, c: int) -> tuple[int, ...]:
        """What consumer c of group g assembles from: its own set, else P(g)."""
        if self.dependency is None:
            return self.producers[g]
        return self.dependency[(g, c)]


def enumerate_groups(groups: AffineSet | Sequence[int], where: str) -> tuple[int, ...]:
    if not isinstance(groups, AffineSet):
        return tuple(sorted(set(int(g) for g in groups)))
    if len(groups.dims) != 1 or groups.syms:
        raise VerifyError(f"{where}: the group set must have one dimension and no symbols, "
                          f"found ({', '.join(groups.dims)})[{', '.join(groups.syms)}]; "
                          "write affine_set<(g) : (...)>")
    text = groups.isl_text()
    if not is_bounded(text):
        raise VerifyError(f"{where}: the group set {groups.to_text()} is unbounded; "
                          "bound g above and below")
    return tuple(p[0] for p in enumerate_points(text, "GROUPS", f"{where}: the group set "
                                                f"{groups.to_text()} has {{n:,}} groups"))


def enumerate_points(isl_text: str, limit: str, what: str) -> tuple[tuple[int, ...], ...]:
    """The points of a bounded set, counted first: a set larger than the
    stated ``limit`` is refused (``what`` says which, with ``{n}`` its count)
    instead of listed until memory runs out."""
    n = count(isl_text)
    limits.check(limit, n, what.format(n=n))
    return points(isl_text)


def _family_arity(fam: AffineFamily, role: str, where: str, dep: bool) -> None:
    s = fam.aset
    ok = len(s.dims) == 1 and (len(s.syms) in (1, 2) if dep else len(s.syms) <= 1)
    if not ok:
        shape = "(p)[c] or (p)[c, g]" if dep else "(i)[g]"
        raise VerifyError(f"{where}: {role} {fam.text()} has "
                          f"({', '.join(s.dims)})[{', '.join(s.syms)}]; write it as {shape}")


def _tiles_per_group(fam: Family, groups, tiles: int | None, role: str, where: str):
    """{g: sorted tiles}; with tiles=None the set itself must be bounded."""
    if isinstance(fam, ExplicitFamily):
        return {g: tuple(sorted(fam.table.get(g, ()))) for g in groups}
    _family_arity(fam, role, where, dep=False)
    s = fam.aset
    order = (s.syms[0] if s.syms else "_g", s.dims[0])
    aset = s if s.syms else AffineSet(s.dims, ("_g",), s.constraints)
    lo, hi = min(groups), max(groups)
    extra = f"{lo} <= {{{order[0]}}} <= {hi} and {{{order[1]}}} >= 0"
    if tiles is not None:
        extra += f" and {{{order[1]}}} <= {tiles - 1}"
    text = aset.isl_text(extra, order)
    if not is_bounded(text):
        raise VerifyError(f"{where}: {role} {fam.text()} is unbounded for the groups "
                          f"{list(groups)}; bound it or give the tile count (--tiles)")
    out: dict[int, list[int]] = {g: [] for g in groups}
    for g, i in enumerate_points(text, "POINTS", f"{where}: {role} {fam.text()} holds "
                                 "{n:,} (group, tile) pairs"):
        if g in out:
            out[g].append(i)
    return {g: tuple(v) for g, v in out.items()}


def _consumer_guard(consumers: Family | None, c: str, gname: str | None) -> str:
    """``c`` is a consumer of group ``gname``, as isl text over the dependency
    set's names: without it the enumeration ranges over every (group, tile)
    pair in the bounding box, quadratic in the groups."""
    if not isinstance(consumers, AffineFamily) or gname is None:
        return ""
    s = consumers.aset
    if len(s.dims) != 1 or len(s.syms) > 1:
        return ""
    rename = {s.dims[0]: f"{{{c}}}"}
    if s.syms:
        rename[s.syms[0]] = f"{{{gname}}}"
    return " and " + s.constraints_text(rename)


def _dependency(fam: Family, consumers, tiles: int | None, where: str,
                consumer_family: Family | None = None):
    if isinstance(fam, ExplicitFamily):
        return {(g, c): tuple(sorted(fam.table.get((g, c), ())))
                for g, cs in consumers.items() for c in cs}
    _family_arity(fam, "producer_dependency_per_consumer", where, dep=True)
    s = fam.aset
    p, c = s.dims[0], s.syms[0]
    gname = s.syms[1] if len(s.syms) == 2 else None
    all_c = sorted({t for cs in consumers.values() for t in cs})
    out = {(g, t): [] for g, cs in consumers.items() for t in cs}
    if not all_c:
        return {}
    extra = f"{all_c[0]} <= {{{c}}} <= {all_c[-1]} and {{{p}}} >= 0"
    if tiles is not None:
        extra += f" and {{{p}}} <= {tiles - 1}"
    if gname and c not in _names_in(s):
        return _dependency_per_group(fam, consumers, tiles, where)
    if gname:
        gs = sorted(consumers)
        extra += f" and {gs[0]} <= {{{gname}}} <= {gs[-1]}"
        order = (gname, c, p)
        extra += _consumer_guard(consumer_family, c, gname)
    else:
        order = (c, p)
    text = s.isl_text(extra, order)
    if not is_bounded(text):
        raise VerifyError(f"{where}: producer_dependency_per_consumer {fam.text()} is "
                          "unbounded; bound it or give the tile count (--tiles)")
    groups_of: dict[int, list[int]] = {}  # consumer tile -> the groups it consumes in
    for g, cs in consumers.items():
        for t in cs:
            groups_of.setdefault(t, []).append(g)
    for pt in enumerate_points(text, "POINTS", f"{where}: producer_dependency_per_consumer "
                               f"{fam.text()} holds {{n:,}} points"):
        if gname:
            g, ct, pt_ = pt
            if (g, ct) in out:
                out[(g, ct)].append(pt_)
        else:
            ct, pt_ = pt
            for g in groups_of.get(ct, ()):
                out[(g, ct)].append(pt_)
    return {k: tuple(v) for k, v in out.items()}


def _names_in(aset: AffineSet) -> set[str]:
    """The identifiers the constraints of ``aset`` mention."""
    found, stack = set(), [e for con in aset.constraints for e in (con.lhs, con.rhs)]
    while stack:
        e = stack.pop()
        if e[0] == "var":
            found.add(e[1])
        stack.extend(part for part in e[1:] if isinstance(part, tuple))
    return found


def _dependency_per_group(fam: AffineFamily, consumers, tiles: int | None, where: str):
    """A (p)[c, g] set that never mentions c: every consumer of a group shares
    one set, enumerated once per group over (g, p) only."""
    s = fam.aset
    p, c, gname = s.dims[0], s.syms[0], s.syms[1]
    gs = sorted(consumers)
    extra = f"{gs[0]} <= {{{gname}}} <= {gs[-1]} and {{{p}}} >= 0 and {{{c}}} = 0"
    if tiles is not None:
        extra += f" and {{{p}}} <= {tiles - 1}"
    text = s.isl_text(extra, (gname, c, p))
    if not is_bounded(text):
        raise VerifyError(f"{where}: producer_dependency_per_consumer {fam.text()} is "
                          "unbounded; bound it or give the tile count (--tiles)")
    shared: dict[int, list[int]] = {g: [] for g in gs}
    for g, _, pt in enumerate_points(text, "POINTS", f"{where}: producer_dependency_per_consumer "
                                     f"{fam.text()} holds {{n:,}} points"):
        if g in shared:
            shared[g].append(pt)
    return {(g, t): tuple(shared[g]) for g, cs in consumers.items() for t in cs}


def resolve(produce: Produce, delivery: Delivery, tiles: int | None = None) -> Resolved:
    """Enumerate every set; infer the tile count from the sets when not given."""
    where = delivery.loc or produce.loc or delivery.opname
    groups = enumerate_groups(produce.groups, produce.loc or "produce")
    if not groups:
        raise VerifyError(f"{produce.loc or 'produce'}: the group set is empty; "
                          "name at least one group")
    prods = _tiles_per_group(produce.producers, groups, tiles,
                             "producer_tiles_per_group", produce.loc or "produce")
    cons = _tiles_per_group(delivery.consumers, groups, tiles,
                            "consumer_tiles_per_group", where)
    dep = None
    if delivery.dependency is not None:
        dep = _dependency(delivery.dependency, cons, tiles, where, delivery.consumers)
    if tiles is None:
        seen = [t for v in prods.values() for t in v] + [t for v in cons.values() for t in v]
        if dep:
            seen += [t for v in dep.values() for t in v]
        tiles = max(seen, default=-1) + 1
    return Resolved(tiles, groups, prods, cons, dep)
