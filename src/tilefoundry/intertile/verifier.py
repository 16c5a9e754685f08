"""Verification rules R1–R12 and R9b (seed §2), plus R13 for reduce.

Applicability follows the seed's matrix column by column, with the readings
of shared/intertile/README.md: R5 only for a partitioning use of the
dependency sets, R8 per consumer for consume, R3 per group. R13 (consumers
must be producers) is the public spec's id for the examples-comment rule that
only reduce refuses receiving-only consumers.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from tilefoundry.intertile.model import Delivery, Produce, Resolved, resolve
from tilefoundry.intertile.placement import Issue, place

APPLIES = {
    "R3": {"consume", "reduce", "reduce_scatter", "gather", "all_to_all"},
    "R4": {"consume", "reduce", "reduce_scatter", "gather", "all_to_all"},
    "R5": {"gather", "all_to_all"},
    "R6": {"gather", "all_to_all"},
    "R7": {"gather", "all_to_all"},
    "R8": {"consume", "scatter"},
    "R10": {"reduce", "reduce_scatter"},
    "R11": {"reduce", "reduce_scatter"},
    "R13": {"reduce"},
}


@dataclass(frozen=True)
class Diagnostic:
    rule: str
    op: str
    message: str
    loc: str = ""

    def __str__(self) -> str:
        prefix = f"{self.loc}: " if self.loc else ""
        return f"{prefix}{self.rule} {self.op}: {self.message}"


def tiles_text(tiles) -> str:
    tiles = list(tiles)
    if len(tiles) == 1:
        return f"tile {tiles[0]}"
    return "tiles " + ", ".join(str(t) for t in tiles)


def verify_exchange(produce: Produce, uses: list[Delivery],
                    tiles: int | None = None) -> list[Diagnostic]:
    """All diagnostics of one future: its produce and every op that reads it."""
    diags: list[Diagnostic] = []
    if len(uses) != 1:
        names = ", ".join(d.opname for d in uses) or "none"
        diags.append(Diagnostic("R2", "ktdp.inter_tile_produce",
                                f"future {produce.name} has {len(uses)} uses ({names}); "
                                "a future is read by exactly one delivery op — produce once "
                                "per delivery", produce.loc))
    for delivery in uses:
        diags += verify(produce, delivery, tiles, check_r1=delivery is uses[0])
    return diags


def verify(produce: Produce, delivery: Delivery, tiles: int | None = None,
           check_r1: bool = True, resolved: Resolved | None = None) -> list[Diagnostic]:
    res = resolved or resolve(produce, delivery, tiles)
    out: list[Diagnostic] = []

    def emit(rule: str, message: str, op: str | None = None, loc: str | None = None):
        out.append(Diagnostic(rule, op or delivery.opname, message,
                              delivery.loc if loc is None else loc))

    kind = delivery.kind
    if check_r1:
        _r1(res.producers, "producer", lambda m: emit(
            "R1", m, "ktdp.inter_tile_produce", produce.loc))
    _r1(res.consumers, "consumer", lambda m: emit("R1", m))
    if delivery.dependency is not None and kind in APPLIES["R3"]:
        _r3_r5_r6(res, kind, emit)
    if kind in APPLIES["R4"]:
        _r4(res, emit)
    if kind in APPLIES["R7"]:
        counts = {g: len(res.producers[g]) for g in res.groups}
        if len(set(counts.values())) > 1:
            detail = ", ".join(f"group {g} has {n}" for g, n in counts.items())
            emit("R7", f"producer counts differ across groups ({detail}); the result type "
                       "needs the same producer count in every group")
    if kind in APPLIES["R8"]:
        _r8(res, kind, emit)
    if kind in APPLIES["R10"]:
        _r10_r11(produce, delivery, emit)
    if kind in APPLIES["R13"]:
        for g in res.groups:
            stray = [c for c in res.consumers[g] if c not in res.producers[g]]
            if stray:
                emit("R13", f"group {g}: consumer {tiles_text(stray)} not producers of "
                            f"group {g}; reduce folds into producers only — deliver the "
                            "folded value with consume")
    # an empty source set is R4/R6's finding when they made one; when they did
    # not (a workgroup cut below every producer, --tiles 1), the type check
    # must say it, as the executor would refuse it (verify and run agree)
    empty_said = any(d.rule in ("R4", "R6") for d in out)
    for issue in _types(produce, delivery, res, empty_said):
        emit(issue.rule, issue.message)
    return out


def _r1(family: dict, role: str, emit) -> None:
    # one pass over the tiles (which groups hold each), not over pairs of
    # groups: linear in the tiles listed, so 16,384 groups stay fast
    owners: dict[int, list[int]] = {}
    for g in sorted(family):
        for t in set(family[g]):
            owners.setdefault(t, []).append(g)
    shared: dict[tuple[int, int], list[int]] = {}
    for t, groups in owners.items():
        for pair in combinations(groups, 2):
            shared.setdefault(pair, []).append(t)
    for (a, b), tiles in sorted(shared.items()):
        emit(f"groups {a} and {b} share {role} {tiles_text(sorted(tiles))}; "
             f"{role} sets of distinct groups must be disjoint")


def _r3_r5_r6(res: Resolved, kind: str, emit) -> None:
    sizes: dict[tuple[int, int], int] = {}
    for g in res.groups:
        prods = set(res.producers[g])
        strays = []
        for c in res.consumers[g]:
            dep = res.dependency[(g, c)]
            sizes[(g, c)] = len(dep)
            stray = [p for p in dep if p not in prods]
            if stray:
                strays.append(f"consumer {c} names {tiles_text(stray)}")
        if strays:
            emit("R3", f"group {g}: {'; '.join(strays)} — not producers of group {g} "
                       f"(producers {list(res.producers[g])}); name only producers of the "
                       "consumer's own group")
        if kind not in APPLIES["R5"]:
            continue
        total = sum(len(res.dependency[(g, c)]) for c in res.consumers[g])
        if total != len(prods):
            continue  # not a partitioning use: sharing is legal (README reading 5)
        claims: dict[int, list[int]] = {}
        for c in res.consumers[g]:
            for p in res.dependency[(g, c)]:
                claims.setdefault(p, []).append(c)
        for p, cs in sorted(claims.items()):
            if len(cs) > 1:
                emit("R5", f"group {g}: {tiles_text([p])} is claimed by consumers "
                           f"{' and '.join(map(str, cs))} although the sets partition the "
                           f"group's {len(prods)} producers (sizes add up to {total}); "
                           "make the sets disjoint")
    if kind in APPLIES["R6"] and len(set(sizes.values())) > 1:
        detail = ", ".join(f"group {g} consumer {c} has {n}" for (g, c), n in sizes.items())
        emit("R6", f"dependency sets differ in size ({detail}); every consumer must "
                   "assemble from the same number of producers")


def _r4(res: Resolved, emit) -> None:
    for g in res.groups:
        if res.dependency is None:
            read = set(res.producers[g]) if res.consumers[g] else set()
        else:
            read = {p for c in res.consumers[g] for p in res.dependency[(g, c)]}
        unread = [p for p in res.producers[g] if p not in read]
        if unread:
            emit("R4", f"group {g}: producer {tiles_text(unread)} read by no consumer; "
                       "every producer must be in some consumer's dependency set")


def _r8(res: Resolved, kind: str, emit) -> None:
    for g in res.groups:
        if kind == "scatter" or res.dependency is None:
            prods = res.producers[g]
            if len(prods) != 1:
                fix = ("a scatter has one producer per group" if kind == "scatter" else
                       "write producer_dependency_per_consumer naming one source per consumer")
                emit("R8", f"group {g} has {len(prods)} producers ({tiles_text(prods)}); {fix}")
            continue
        for c in res.consumers[g]:
            dep = res.dependency[(g, c)]
            if len(dep) != 1:
                emit("R8", f"group {g} consumer {c} has {len(dep)} sources "
                           f"({tiles_text(dep) if dep else 'none'}); consume delivers "
                           "exactly one producer's value to each consumer")


def _r10_r11(produce: Produce, delivery: Delivery, emit) -> None:
    comb = delivery.combiner
    if comb is None:
        emit("R10", "a fold op needs a combiner region (or sum / max / min / a pure callable)")
    elif comb.impure:
        emit("R10", f"the combiner region contains {', '.join(comb.impure)}, which has side "
                    "effects; a combiner must be pure (arith/tensor/linalg on tensors only)")
    ids = delivery.identity_types
    if ids is None:
        emit("R11", "a fold op needs identity(...) with one value per role")
        return
    parts = produce.partial_types
    if len(ids) != len(parts):
        emit("R11", f"identity has {len(ids)} values, the future has {len(parts)} roles")
        return
    for k, (i, p) in enumerate(zip(ids, parts)):
        if i != p:
            name = delivery.identity_names[k] if k < len(delivery.identity_names) else f"#{k}"
            emit("R11", f"identity {name} has type {i.text()}, the partial type is "
                        f"{p.text()}; give the identity the partial type")


def _types(produce: Produce, delivery: Delivery, res: Resolved,
           empty_said: bool = True) -> list[Issue]:
    parts = produce.partial_types
    declared = delivery.result_types
    issues: list[Issue] = []
    if declared is not None and len(declared) != len(parts):
        return [Issue("TYPE", f"{len(declared)} result types for a future of "
                              f"{len(parts)} roles; give one result per role")]
    combos: dict[tuple[int, int], list[str]] = {}
    for g in res.groups:
        cs = res.consumers[g]
        ps = {len(res.sources(g, c)) for c in cs} or {len(res.producers[g])}
        for p in sorted(ps):
            if p == 0 and empty_said and delivery.kind in ("gather", "all_to_all"):
                continue  # an empty set is R4/R6's finding, not a type error
            combos.setdefault((p, len(cs)), []).append(f"group {g}")
    seen: set[tuple[str, str]] = set()
    for (p, c), where in combos.items():
        who = where[0] if len(where) == 1 else "groups " + ", ".join(
            w.split()[1] for w in where)
        if delivery.kind in ("reduce_scatter", "scatter", "all_to_all") and c == 0:
            continue  # no consumers: R4 (or nothing) already says it
        for r, part in enumerate(parts):
            found: list[Issue] = []
            place(delivery.kind, part.shape, None if declared is None else declared[r].shape,
                  delivery.dims, p, c, found, who)
            for issue in found:
                key = (issue.rule, issue.message.split(": ", 1)[-1])
                if key not in seen:
                    seen.add(key)
                    issues.append(issue)
    return issues

