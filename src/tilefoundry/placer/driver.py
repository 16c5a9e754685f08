"""The search: price every point of a kernel's space in surrogate order until
the space is exhausted or the time limit is reached, keep the best by the
objective, and check each answer against the logical kernel before it is shown.

Each point is written as a program (placed_program.py), loaded from its own file and
analysed exactly as a user's file is; a point the analysis refuses (a capacity
the checked program exceeds, a layout the level cannot hold) is counted out
with its reason. The answer is proven best within the space only when every
point was priced; otherwise the result says it stopped at the limit.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.placed_program import program_text
from tilefoundry.placer.spaces import budget_of, space_of

__all__ = ["Candidate", "SearchResult", "search"]

#: answers that disagree with the logical kernel before the search gives up
#: checking more: each is a bug in place, and a few name it well enough
MAX_BUGS = 3


@dataclass(frozen=True)
class Candidate:
    """One priced placement: its choice, its program and its figures."""

    choice: object
    text: str
    priced: object  # objective.Priced
    checked: bool = False


@dataclass
class SearchResult:
    """What the search found and how far it got."""

    kernel: object
    objective: object
    ranked: list  # Candidate, best first, each checked against the logical kernel
    space_size: int
    priced: int
    refused: dict = field(default_factory=dict)  # reason -> count of points the analysis refused
    proven: bool = False
    seconds: float = 0.0  # the search: reading, stating and pricing the space
    check_seconds: float = 0.0  # checking the answers against the logical kernel
    # (choice in words, why): a point whose program does not load, or a checked
    # answer that disagreed with the logical kernel; each a bug in place
    bugs: list = field(default_factory=list)
    checked_at: str = "full extents"  # or "reduced extents A->a, ..." (placer/reduced_check.py)


def _progress(total: int, show: bool | None):
    """A tqdm bar on a terminal only (stderr), else a no-op."""
    if show is None:
        show = sys.stderr.isatty()
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="place", unit="point", leave=False, file=sys.stderr)


def _refusal(exc: Exception) -> str:
    """The reason of a refusal without the point's own file location, so that
    points refused alike count as one reason."""
    import re

    first = str(exc).split("\n")[0]
    return re.sub(r"\S*point_\d+\.py:\d+:\d+: ", "", first)


def _count_out(exc, what: str, refused: dict, bugs: list) -> None:
    """A point the analysis refuses (a capacity, a layout the level cannot hold)
    is counted out with its reason; a program place wrote that does not load
    (VerifyError) is a bug in place."""
    from tilefoundry.errors import VerifyError

    if isinstance(exc, VerifyError):
        bugs.append((what, f"the placed program does not load: {_refusal(exc)}"))
        return
    reason = _refusal(exc)
    refused[reason] = refused.get(reason, 0) + 1


def _price_all(kernel, points, objective, level, deadline, bar, folder, bugs) -> tuple[list, dict, int]:
    found, refused, priced = [], {}, 0
    for index, choice in enumerate(points):
        if time.monotonic() >= deadline:
            break
        text = _text_of(kernel, choice, level)
        path = os.path.join(folder, f"point_{index}.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        priced += 1
        try:
            found.append(Candidate(choice, text, price(path, objective)))
        except TileFoundryError as exc:
            _count_out(exc, choice.describe(), refused, bugs)
        if bar is not None:
            bar.update(1)
    return found, refused, priced


def _text_of(kernel, choice, level: str) -> str:
    if kernel.kind == "loop":
        from tilefoundry.placer.loop import loop_text

        return loop_text(kernel, choice, level)
    if kernel.kind == "attention":
        from tilefoundry.placer.attention import attention_text

        return attention_text(kernel, choice, level)
    return program_text(kernel, choice, level)


def _points(kernel, budget, seed: int) -> list:
    """The space of a matmul, rows, attention or loop kernel, in surrogate order."""
    if kernel.kind == "loop":
        from tilefoundry.placer.loop import loop_points, loop_surrogate

        return sorted(loop_points(kernel.loop, budget), key=lambda c: (loop_surrogate(kernel.loop, c, budget), c))
    if kernel.kind != "attention":
        return space_of(kernel, budget, seed)
    from tilefoundry.placer.attention import attention_points, attention_surrogate

    found = attention_points(kernel.attention, budget)
    if not found:
        from tilefoundry.placer.attention import empty_space_reason

        raise AnalysisError(f"{kernel.where}: place: no flash-decoding placement of '{kernel.name}': "
                            + empty_space_reason(kernel.attention, budget))
    return sorted(found, key=lambda c: (attention_surrogate(kernel.attention, c, budget), c))


def _write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def _price_chain(kernel, plan, objective, level, deadline, bar, folder, bugs) -> tuple[list, dict, int]:
    """For each CTA count: each stage's best K tile, priced stage by stage (the
    chain's time is the sum of its kernels'), then the whole chain at those tiles."""
    from tilefoundry.placer.chain import ChainChoice, chain_text, stage_kernel_text

    found, refused, priced = [], {}, 0
    for ctas, tiles_of in plan:
        best_tiles = []
        for index, tiles in enumerate(tiles_of):
            best = None
            for tile in tiles:
                if time.monotonic() >= deadline:
                    return found, refused, priced
                path = _write(folder, f"point_{priced}.py", stage_kernel_text(kernel, index, ctas, tile, level))
                priced += 1
                try:
                    cost = price(path, objective).objective_ns
                    best = min(best or (cost, tile), (cost, tile))
                except TileFoundryError as exc:
                    _count_out(exc, f"stage {index} over {ctas} CTAs, K tile {tile}", refused, bugs)
                if bar is not None:
                    bar.update(1)
            if best is None:
                break
            best_tiles.append(best[1])
        else:
            choice = ChainChoice(ctas, tuple(best_tiles))
            text = chain_text(kernel, choice, level)
            try:
                found.append(Candidate(choice, text, price(_write(folder, f"chain_{ctas}.py", text), objective)))
            except TileFoundryError as exc:
                _count_out(exc, choice.describe(), refused, bugs)
    return found, refused, priced


def _logical_twin(logical, kernel, dims):
    """The logical kernel at ``dims`` as a Python function over the placed
    program's arrays (its parameters are the logical one's, in order): the twin
    of a placed program that has no DimVar left to bind. The arrays are bound
    as they are (``given``): they are the placed program's arguments, weights
    already in the form the program reads, so no weight converter runs on them
    a second time (Gemma-2's norms: ``1 + w``)."""
    from tilefoundry import execution
    from tilefoundry.execute import run_logical

    names = [p.name for p in kernel.params]

    def logical_kernel(*arrays):
        prepared = execution.prepare(logical, dims=dims, given=dict(zip(names, arrays)))
        return tuple(run_logical(prepared.function, prepared.arguments).values())

    logical_kernel.__name__ = kernel.name
    # it only reads its arrays (execute/twins.py): views, not a copy of every weight
    logical_kernel.reads_only = True
    return logical_kernel


def _checked(logical, kernel, path: str, seed: int, dims=None, reduced=None) -> str | None:
    """None when the placed program agrees with the logical kernel on random
    inputs at the check's derived bound; else why not. With ``dims`` the placed
    program is static and the logical one is run at the binding as its twin;
    with ``reduced`` ((logical path, placed path)) the pair at reduced extents is
    checked instead (placer/reduced_check.py)."""
    from tilefoundry import execution

    try:
        if reduced is not None:
            results = execution.check(reduced[0], against=reduced[1], seed=seed)
        elif dims:
            results = execution.check(path, against=_logical_twin(logical, kernel, dims), seed=seed)
        else:
            results = execution.check(logical, against=path, seed=seed)
    except TileFoundryError as exc:
        return f"check refused the placed program: {exc}"
    failed = [v for r in results for v in r.verdicts if not v.passed]
    if failed:
        worst = failed[0]
        detail = worst.reason or (f"at {worst.worst_index} the placed program holds "
                                  f"{worst.program_value!r} where the logical kernel holds "
                                  f"{worst.reference_value!r}, past the allowed {worst.allowed_value!r}")
        tie = next((r.tie for r in results if not r.passed and r.tie), None)
        after = f" (every draw met a near tie: {tie})" if tie else ""
        return f"output '{worst.name}' differs from the logical kernel: {detail}{after}"
    if not any(r.verdicts for r in results):
        return "check compared no output"
    return _unbounded(results)


#: where check's derived bound is unbounded (a masked softmax's -1e30 scores make
#: its bound rule infinite), place holds the output itself to two roundings to bf16
#: (2 x 2^-8, the coarsest dtype a kernel here writes) plus f32 sums reassociated
#: over at most 2^14 terms (2^14 x 2^-24 = 2^-10), relative to the output's
#: largest magnitude (normwise: see ``_unbounded``)
UNBOUNDED_TOLERANCE = 2 * 2.0 ** -8 + 2.0 ** -10


def _unbounded(results) -> str | None:
    """None, or why an output whose allowance is infinite differs past
    ``UNBOUNDED_TOLERANCE`` of its largest magnitude: a check that cannot fail
    is no check. Normwise, not per element: an output that sums many terms (the
    GEMV after an attention) cancels, and an element far below the largest
    carries the roundings of the terms it sums (Qwen3's attention: 0.022 of
    an element 1/800 of the largest, two bf16 units of it, where a flash
    decoding of one block per split leaves check's bound unbounded), where a
    wrong split or combine misses by the values themselves."""
    import math

    from tilefoundry.execute.compare import REL_FLOOR

    for result in results:
        for verdict in result.verdicts:
            allowed = verdict.allowed_value
            if allowed is None or math.isfinite(allowed):
                continue
            largest = verdict.rel_floor / REL_FLOOR  # compare states its floor as this share of the largest
            if verdict.max_abs > UNBOUNDED_TOLERANCE * largest:
                return (f"output '{verdict.name}' differs from the logical kernel by {verdict.max_abs:.3g}, "
                        f"{verdict.max_abs / largest:.3g} of its largest magnitude (check's bound is unbounded "
                        f"there; place allows {UNBOUNDED_TOLERANCE:.3g} of it)")
    return None


def search(logical, kernel, *, level: str = "cta", time_limit: float = 10.0, top: int = 1,
           seed: int = 0, progress: bool | None = None, dims=None) -> SearchResult:
    """Search ``kernel``'s space; ``logical`` is the selection it was read from
    (what each answer is checked against)."""
    start = time.monotonic()
    deadline = start + time_limit
    objective = objective_of(kernel.target)
    budget = budget_of(kernel.target, level)
    if kernel.kind in ("chain", "sequence"):
        from tilefoundry.placer.chain import chain_points
        from tilefoundry.placer.sequence_search import sequence_plan

        if kernel.kind == "chain":
            plan = chain_points(kernel, budget)
            size = sum(len(tiles) for _, tiles_of in plan for tiles in tiles_of)
        else:  # each piece's own (count, setting) points
            plan = sequence_plan(kernel, budget)
            size = sum(len(points) for points in plan)
    else:
        points = _points(kernel, budget, seed)
        size = len(points)
    if size == 0:
        raise AnalysisError(f"{kernel.where}: place: no {kernel.kind} placement of '{kernel.name}': "
                            f"{_empty_reason(kernel, budget)}")
    bar = _progress(size, progress)
    with tempfile.TemporaryDirectory(prefix="tilefoundry-place-") as folder:
        try:
            bugs: list = []
            if kernel.kind == "chain":
                found, refused, priced = _price_chain(kernel, plan, objective, level, deadline, bar, folder, bugs)
            elif kernel.kind == "sequence":
                from tilefoundry.placer.sequence_search import price_sequence

                found, refused, priced = price_sequence(kernel, plan, objective, level, deadline, bar, folder,
                                                       bugs, write=_write, price=price, count_out=_count_out,
                                                       candidate=Candidate)
            else:
                found, refused, priced = _price_all(kernel, points, objective, level, deadline, bar, folder, bugs)
        finally:
            if bar is not None:
                bar.close()
        found.sort(key=lambda c: (c.priced.objective_ns, c.choice))
        searched = time.monotonic() - start
        ranked, wrong, checked_at = [], 0, "full extents"
        for candidate in found:
            if len(ranked) >= top or wrong >= MAX_BUGS:
                break
            # a file of its own per answer: nothing read for one is reused for the next
            path = _write(folder, f"answer_{len(ranked) + wrong}.py", candidate.text)
            reduced = _reduced(kernel, candidate.choice, level, folder, len(ranked) + wrong)
            check_dims = dims
            if kernel.kind == "loop":  # a long loop is checked at fewer trips (placer/loop.py)
                from tilefoundry.placer.loop_check import reduced_binding

                small = reduced_binding(logical, kernel, candidate.choice, level, dims)
                if small is not None:
                    path, check_dims = _write(folder, f"answer_trips_{len(ranked) + wrong}.py", small[0]), small[1]
                    checked_at = "reduced extents " + small[2]
            why = _checked(logical, kernel, path, seed, check_dims, reduced and reduced[:2])
            if reduced is not None:
                checked_at = "reduced extents " + ", ".join(f"{k}->{v}" for k, v in sorted(reduced[2].items()))
            if why is None:
                ranked.append(Candidate(candidate.choice, candidate.text, candidate.priced, True))
            else:
                bugs.append((candidate.choice.describe(), why))
                wrong += 1
    return SearchResult(kernel, objective, ranked, size, priced, refused,
                        # a sequence's pieces priced alone do not sum to the whole (its crossings):
                        # every point priced is no proof there (placer/sequence_search.py)
                        proven=priced == size and kernel.kind != "sequence", seconds=searched,
                        check_seconds=time.monotonic() - start - searched, bugs=bugs,
                        checked_at=checked_at)


def _empty_reason(kernel, budget) -> str:
    """Why a space has no point: a placed program splits and tiles in whole windows."""
    if kernel.kind == "chain":
        from tilefoundry.placer.chain import chain_empty_reason

        return chain_empty_reason(kernel, budget)
    extents = kernel.dims if kernel.kind == "matmul" else {"result": kernel.result[0]}
    shown = ", ".join(f"{name} {extent}" for name, extent in extents.items())
    return (f"no split over at most {budget.units} {budget.level} units and no tile that fits their "
            f"capacities divides its extents ({shown}); a placed program splits and tiles in whole "
            "windows: pad the extents to multiples of 16")


def _reduced(kernel, choice, level: str, folder: str, index: int):
    """(logical path, placed path, extents replaced) of a large chain answer at
    reduced extents, or None (the full check)."""
    from tilefoundry.placer.reduced_check import reduced_pair

    pair = reduced_pair(kernel, choice, level)
    if pair is None:
        return None
    logical, placed, extents = pair
    return (_write(folder, f"reduced_logical_{index}.py", logical),
            _write(folder, f"reduced_placed_{index}.py", placed), extents)
