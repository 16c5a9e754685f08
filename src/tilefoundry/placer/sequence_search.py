"""The space of a sequence of kernels (placer/sequence.py) and its search.

Every piece runs over the same C CTAs (one topology per placed Module), so the
space is C — dividing every GEMV's output columns (or, with no GEMV, an axis of
the largest input), at most ``MAX_WAVES`` waves of the level's units — times,
per GEMV piece, a K tile (16..1024 dividing K, within smem), and per glue piece
a seed: whole, or the inputs of the largest shapes split on one axis over
``gcd(extent, C)`` CTAs. The objective of the sequence is taken as the sum of
its kernels' (the estimate prices each launch on its own, as for a chain), so
for each C each piece's setting is the best of the piece priced alone, and the
whole sequence is priced once at those settings. Then each glue piece whose
values only the next GEMV or attention reads is priced as that kernel's
prologue (computed whole in every CTA: one launch fewer), and fused where that
prices below the two apart. A structured search: the
pieces are independent given C, and a setting the shard propagation cannot
carry is refused by the analysis and counted out.
"""
from __future__ import annotations

import math
import time

from tilefoundry.errors import TileFoundryError

__all__ = ["sequence_plan", "price_sequence"]

#: the input shapes a glue piece is tried split on: the largest few (by bytes);
#: splitting a small input saves nothing a split of the large ones does not
SEED_SHAPES = 2


def _bytes_of(shape, dtype: str) -> int:
    from tilefoundry.placer.spaces import _bytes

    return _bytes(dtype) * math.prod(shape)


def _seeds(piece, ctas: int) -> list:
    """() (whole) and, for the largest input shapes, each axis split over
    ``gcd(extent, C)`` CTAs (every input of that shape split alike: a K and a V
    cache), on a slice of the level too where that split is below C; and the two
    largest shapes split together, each on one of its axes, by the same count (an
    expert's gate/up stack on its columns and its down stack on its rows)."""
    shapes: dict = {}
    for name, shape, dtype, _ in piece.inputs:
        shapes.setdefault(tuple(shape), []).append((name, _bytes_of(shape, dtype)))
    ranked = sorted(shapes.items(), key=lambda item: (-sum(b for _, b in item[1]), item[0]))[:SEED_SHAPES]
    found = [()]

    def add(names: tuple, axes: tuple, split: int):
        found.append((names, axes, split, "replicas", ()))
        # on a slice of the level, no replicas: the split itself, and a half, a
        # quarter and an eighth of it (a glue piece may want fewer CTAs than the
        # GEMVs of its sequence: its work in gmem grows with them)
        for part in (1, 2, 4, 8):
            if split % part == 0 and split // part > 1 and split // part < ctas:
                found.append((names, axes, split // part, "slice", ()))

    for shape, named in ranked:
        names = tuple(n for n, _ in named)
        for axis, extent in enumerate(shape):
            split = math.gcd(extent, ctas)
            if split > 1:
                add(names, (axis,) * len(names), split)
    if len(ranked) == 2:
        (shape_a, named_a), (shape_b, named_b) = ranked
        for axis_a, extent_a in enumerate(shape_a):
            for axis_b, extent_b in enumerate(shape_b):
                split = math.gcd(extent_a, extent_b, ctas)
                if split > 1:
                    add(tuple(n for n, _ in named_a + named_b),
                        (axis_a,) * len(named_a) + (axis_b,) * len(named_b), split)
    return found


def _tiles(piece, ctas: int, budget) -> list:
    """K tiles of a GEMV piece whose row, weight tiles and products fit smem."""
    from tilefoundry.placer.spaces import MAX_TILE_K, MIN_TILE_K

    row = piece.m * piece.k * (2 + 4)
    found = []
    for tile in range(min(MIN_TILE_K, piece.k), min(MAX_TILE_K, piece.k) + 1):
        if piece.k % tile:
            continue
        held = row + sum(tile * (n // ctas) * 6 + 4 * piece.m * (n // ctas) for _, _, n, _ in piece.lines)
        if budget.smem_bytes is None or held <= budget.smem_bytes:
            found.append(tile)
    return found


def _settings(piece, ctas: int, budget) -> list:
    if piece.kind == "gemv":
        return _tiles(piece, ctas, budget)
    if piece.kind == "attention":
        from tilefoundry.placer.sequence_attention import core_settings

        return core_settings(piece.core, ctas, budget)
    from tilefoundry.placer.sequence_experts import experts_settings

    return experts_settings(piece, ctas, budget) + _seeds(piece, ctas)


def sequence_plan(kernel, budget) -> list:
    """(C, [settings of each piece]) for every C that fits, best surrogate first."""
    from tilefoundry.placer.spaces import MAX_WAVES, TRIP_NS, _divisors, _occupancy

    gemvs = [p for p in kernel.pieces if p.kind == "gemv"]
    most = budget.units * MAX_WAVES
    if gemvs:
        counts = [c for c in range(1, most + 1) if all(n % c == 0 for p in gemvs for _, _, n, _ in p.lines)]
    else:
        largest = max((tuple(s) for p in kernel.pieces for _, s, _, _ in p.inputs),
                      key=lambda s: (math.prod(s), s), default=(1,))
        counts = sorted({d for extent in largest for d in _divisors(extent) if d <= most})
    moved = sum(2 * p.k * n for p in gemvs for _, _, n, _ in p.lines)
    moved += sum(_bytes_of(s, d) for p in kernel.pieces if p.kind == "glue" for _, s, d, _ in p.inputs)
    plan = []
    for ctas in counts:
        settings = [_settings(p, ctas, budget) for p in kernel.pieces]
        if not all(settings):
            continue
        trips = sum(TRIP_NS * p.k // max(s) for p, s in zip(kernel.pieces, settings) if p.kind == "gemv")
        surrogate = moved / budget.bandwidth / _occupancy(ctas, budget.units) * 1e9 + trips
        plan.append((surrogate, -ctas, ctas, settings))
    if not plan:
        from tilefoundry.errors import AnalysisError

        columns = sorted({n for p in gemvs for _, _, n, _ in p.lines})
        raise AnalysisError(f"{kernel.where}: place: no CTA count divides every GEMV's output columns "
                            f"({', '.join(map(str, columns))}) with each GEMV's row and weight tile within "
                            "smem; a sequence runs every kernel over one CTA count")
    return [(ctas, settings) for _, _, ctas, settings in sorted(plan)]


#: the most Partials one glue seed completes before it is given up
MAX_COMPLETIONS = 4


def _priced_piece(kernel, index, ctas, setting, level, objective, write, price):
    """(objective, the setting priced) of one piece. A glue seed whose split leaves
    a Partial that an op cannot read (a residual add after a split contraction)
    is retried with that operand completed first (resharded whole: a sum over
    the split), as the propagation's refusal asks, up to ``MAX_COMPLETIONS``."""
    import re

    from tilefoundry.errors import VerifyError
    from tilefoundry.placer.sequence import piece_text

    seeded = kernel.pieces[index].kind == "glue" and bool(setting) and setting[0] != "experts"
    while True:
        # a file of its own per try: nothing loaded for one is reused for the next
        path = write(piece_text(kernel, index, ctas, setting, level), len(setting[4]) if seeded else 0)
        try:
            return price(path, objective).objective_ns, setting
        except VerifyError as exc:
            found = re.search(r"\(operand (\d+)\) carries Partial.*\(value '(\w+)'\)", str(exc))
            if not (seeded and found and len(setting[4]) < MAX_COMPLETIONS):
                raise
            done = (found.group(2), int(found.group(1)))
            if done in setting[4]:
                raise
            setting = setting[:4] + (setting[4] + (done,),)


def _uncarried(exc, piece, setting) -> bool:
    """A split seed the ops cannot carry (a softmax over the split axis, a table
    read at data-dependent rows) is a point outside the space, not a bug: the
    program place wrote loads unsplit, and the refusal is the propagation's."""
    from tilefoundry.errors import VerifyError

    return isinstance(exc, VerifyError) and piece.kind == "glue" and bool(setting) and setting[0] != "experts"


def _describe(piece, index: int, ctas: int, setting) -> str:
    if piece.kind == "gemv":
        return f"kernel {index} (GEMV) over {ctas} CTAs, K tile {setting}"
    if piece.kind == "attention":
        return f"kernel {index} (flash decoding) over {ctas} CTAs, KV heads over {setting[0]}, KV block {setting[1]}"
    if setting and setting[0] == "experts":
        return f"kernel {index} (the chosen experts' GEMVs) over {ctas} CTAs, K tiles {setting[1]}, {setting[2]}"
    how = "whole" if not setting else f"{'/'.join(setting[0])} axes {setting[1]} over {setting[2]} CTAs"
    how += " (a slice)" if setting and setting[3] == "slice" else ""
    return f"kernel {index} over {ctas} CTAs, {how}"


def price_sequence(kernel, plan, objective, level, deadline, bar, folder, bugs, *, write, price, count_out,
                  candidate):
    """For each C: each piece's best setting, priced piece by piece, then the
    whole sequence at those settings. ``write``, ``price`` and ``count_out`` are
    the driver's (one file per point, the objective, a refusal counted out, the
    record of a priced answer)."""
    from tilefoundry.placer.sequence import SequenceChoice, fusable, piece_text, sequence_text

    found, refused, priced = [], {}, 0
    for ctas, settings_of in plan:
        best_settings, costs = [], []
        for index, (piece, settings) in enumerate(zip(kernel.pieces, settings_of)):
            best = None
            for rank, setting in enumerate(settings):
                if time.monotonic() >= deadline:
                    return found, refused, priced
                priced += 1
                try:
                    cost, setting = _priced_piece(kernel, index, ctas, setting, level, objective,
                                                  lambda text, n: write(folder, f"point_{priced}_{n}.py", text), price)
                    if best is None or (cost, rank) < best[:2]:
                        best = (cost, rank, setting)
                except TileFoundryError as exc:
                    if _uncarried(exc, piece, setting):  # a split the propagation refuses: out of the space
                        reason = "a glue split the shard propagation cannot carry: " + str(exc).split(": ", 2)[-1][:160]
                        refused[reason] = refused.get(reason, 0) + 1
                    else:
                        count_out(exc, _describe(piece, index, ctas, setting), refused, bugs)
                if bar is not None:
                    bar.update(1)
            if best is None:
                break
            best_settings.append(best[2])
            costs.append(best[0])
        else:
            fused = []
            for index in range(len(kernel.pieces) - 1):
                if time.monotonic() >= deadline:
                    return found, refused, priced
                if not fusable(kernel, index):
                    continue
                text = piece_text(kernel, index + 1, ctas, best_settings[index + 1], level, fused=True)
                path = write(folder, f"fused_{ctas}_{index}.py", text)
                try:  # the glue as the next kernel's prologue: one launch fewer, its work in every CTA
                    if price(path, objective).objective_ns < costs[index] + costs[index + 1]:
                        fused.append(index)
                        best_settings[index] = ()
                except TileFoundryError as exc:
                    count_out(exc, f"kernel {index} as the prologue of kernel {index + 1} over {ctas} CTAs",
                              refused, bugs)
            tiles = tuple(s for p, s in zip(kernel.pieces, best_settings) if p.kind == "gemv")
            seeds = tuple(s for p, s in zip(kernel.pieces, best_settings) if p.kind == "glue")
            cores = tuple(s for p, s in zip(kernel.pieces, best_settings) if p.kind == "attention")
            choice = SequenceChoice(ctas, tiles, seeds, cores, tuple(fused))
            text = sequence_text(kernel, choice, level)
            try:
                found.append(candidate(choice, text, price(write(folder, f"program_{ctas}.py", text), objective)))
            except TileFoundryError as exc:
                count_out(exc, choice.describe(), refused, bugs)
    return found, refused, priced
