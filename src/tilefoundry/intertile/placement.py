"""Placement algebra (seed §1.1) and the block odometer (README reading 3).

Four placements: replicate, concat, split, permute. Multi-axis lists are
read as a mixed-radix odometer over per-axis factors, first listed axis
slowest; the per-axis factors of a multi-axis list come from the declared
result type, because the list alone cannot say how P (or C) splits.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilefoundry.intertile.model import OPS, TensorType

# Which rule owns the list clause and the extent check of each attribute.
LIST_RULE = {
    "scatter_dimensions": "R9",
    "split_dimensions": "R9b",
    "gather_dimensions": "R12",
    "concat_dimensions": "R12",
}


@dataclass
class Issue:
    rule: str
    message: str


@dataclass
class Placement:
    """Per-axis factors of one role: split[a] divides, concat[a] multiplies."""
    split: dict[int, int] = field(default_factory=dict)
    concat: dict[int, int] = field(default_factory=dict)
    result: tuple[int, ...] = ()


def list_problem(lst: tuple[int, ...], rank: int) -> str | None:
    if not lst:
        return "is empty"
    if len(set(lst)) != len(lst):
        return "repeats an axis"
    bad = [a for a in lst if not 0 <= a < rank]
    if bad:
        return f"names axis {bad[0]} outside a rank-{rank} partial"
    if list(lst) != sorted(lst):
        return "is not ascending"
    return None


def shape_text(shape) -> str:
    return TensorType(tuple(shape)).text()


def _divide(shape, axis, k):
    out = list(shape)
    out[axis] //= k
    return tuple(out)


def _multiply(shape, axis, k):
    out = list(shape)
    out[axis] *= k
    return tuple(out)


def place(kind: str, part: tuple[int, ...], declared: tuple[int, ...] | None,
          dims: dict[str, tuple[int, ...]], P: int, C: int,
          issues: list[Issue], who: str) -> Placement | None:
    """Type rule of one role; appends issues and returns None when ill-typed.

    `who` prefixes each message (the group, or the consumer) so a diagnostic
    names where the count came from.
    """
    placement = OPS[kind]["placement"]
    rank = len(part)
    if declared is not None and len(declared) != rank:
        rule = {"concat": "R12", "permute": "R12", "split": "R9"}.get(placement, "TYPE")
        issues.append(Issue(rule, f"{who}: result {shape_text(declared)} has rank "
                                  f"{len(declared)}, partial {shape_text(part)} rank {rank}; "
                                  "no placement changes the rank"))
        return None
    if placement == "replicate":
        if declared is not None and tuple(declared) != tuple(part):
            issues.append(Issue("TYPE", f"{who}: result {shape_text(declared)} must equal the "
                                        f"partial type {shape_text(part)} (seed §1.1 replicate)"))
            return None
        return Placement(result=tuple(part))
    for name in OPS[kind]["dims"]:
        problem = list_problem(dims.get(name, ()), rank)
        if problem:
            issues.append(Issue(LIST_RULE[name], f"{name} = {list(dims.get(name, ()))} "
                                f"{problem}; list distinct axes in ascending order"))
            return None
    if placement == "concat":
        factors = _factors(part, declared, dims["gather_dimensions"], P, "multiply",
                           "R12", "P", issues, who)
        return None if factors is None else Placement(concat=factors[0], result=factors[1])
    if placement == "split":
        factors = _factors(part, declared, dims["scatter_dimensions"], C, "divide",
                           "R9", "C", issues, who)
        return None if factors is None else Placement(split=factors[0], result=factors[1])
    return _permute(part, declared, dims, P, C, issues, who)


def _factors(part, declared, axes, count, how, rule, label, issues, who):
    if declared is None:
        if len(axes) > 1:
            issues.append(Issue(rule, f"{who}: a multi-axis list {list(axes)} needs a declared "
                                      "result type to read its per-axis factors; declare it"))
            return None
        a = axes[0]
        if how == "divide":
            if part[a] % count:
                issues.append(Issue(rule, f"{who}: extent {part[a]} of axis {a} is not "
                                          f"divisible by {label}={count}"))
                return None
            return {a: count}, _divide(part, a, count)
        return {a: count}, _multiply(part, a, count)
    factors: dict[int, int] = {}
    follows = ""
    if len(axes) == 1 and (how == "multiply" or part[axes[0]] % count == 0):
        derived = (_multiply if how == "multiply" else _divide)(part, axes[0], count)
        follows = f"; {label}={count} along {list(axes)} gives {shape_text(derived)}"
    for a, (p, d) in enumerate(zip(part, declared)):
        if a not in axes:
            if p != d:
                issues.append(Issue(rule, f"{who}: declared {shape_text(declared)} changes "
                                          f"axis {a} ({p} -> {d}), which is not listed"
                                          f"{follows}"))
                return None
            continue
        big, small = (p, d) if how == "divide" else (d, p)
        if small <= 0 or big % small:
            verb = "split" if how == "divide" else "grown"
            issues.append(Issue(rule, f"{who}: axis {a} cannot be {verb} {p} -> {d} "
                                      "by an integer factor"))
            return None
        factors[a] = big // small
    total = 1
    for f in factors.values():
        total *= f
    if total != count:
        if how == "divide":
            detail = (f"extent {part[axes[0]]} of axis {axes[0]} is not divisible by "
                      f"{label}={count}" if len(axes) == 1 and part[axes[0]] % count
                      else f"per-axis factors {factors} multiply to {total}, not {label}={count}")
            issues.append(Issue(rule, f"{who}: {detail} ({shape_text(part)} -> "
                                      f"{shape_text(declared)})"))
        else:
            issues.append(Issue(rule, f"{who}: declared {shape_text(declared)} does not follow "
                                      f"from {shape_text(part)}: factors {factors} multiply to "
                                      f"{total}, not {label}={count}{follows}"))
        return None
    return factors, tuple(declared)


def _permute(part, declared, dims, P, C, issues, who):
    split, concat = dims["split_dimensions"], dims["concat_dimensions"]
    both = set(split) & set(concat)
    if both and (len(split) > 1 or len(concat) > 1):
        issues.append(Issue("R12", f"{who}: axis {sorted(both)} is in both split and concat "
                                   "lists of a multi-axis all_to_all; its factors cannot be "
                                   "read off the result type"))
        return None
    if declared is None or both:
        s, k = split[0] if len(split) == 1 else None, concat[0] if len(concat) == 1 else None
        if s is None or k is None:
            issues.append(Issue("R12", f"{who}: multi-axis lists need a declared result type"))
            return None
        if part[s] % C:
            issues.append(Issue("R9b", f"{who}: split extent {part[s]} of axis {s} is not "
                                       f"divisible by M={C}"))
            return None
        result = _multiply(_divide(part, s, C), k, P)
        if declared is not None and tuple(declared) != result:
            issues.append(Issue("R12", f"{who}: declared {shape_text(declared)} but split "
                                       f"{s} / M={C}, concat {k} x K={P} gives "
                                       f"{shape_text(result)}"))
            return None
        return Placement(split={s: C}, concat={k: P}, result=result)
    mid = tuple(d if a in split else p for a, (p, d) in enumerate(zip(part, declared)))
    sf = _factors(part, mid, split, C, "divide", "R9b", "M", issues, who)
    if sf is None:
        return None
    cf = _factors(mid, declared, concat, P, "multiply", "R12", "K", issues, who)
    if cf is None:
        return None
    return Placement(split=sf[0], concat=cf[0], result=tuple(declared))


def odometer(rank: int, factors: dict[int, int]) -> dict[int, int]:
    """Digits of `rank` in mixed radix over ascending axes, first axis slowest."""
    digits: dict[int, int] = {}
    for a in sorted(factors, reverse=True):
        rank, digits[a] = divmod(rank, factors[a])
    return digits


def block(shape: tuple[int, ...], digits: dict[int, int]) -> tuple[slice, ...]:
    """The slice of a tensor of `shape` that block `digits` occupies."""
    return tuple(slice(digits[a] * n, (digits[a] + 1) * n) if a in digits else slice(None)
                 for a, n in enumerate(shape))
