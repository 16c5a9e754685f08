"""The space of a sequence of kernels (placer/sequence.py) and its search.

Each piece runs over its own count of CTAs (the placed Module declares the
largest; a piece of fewer runs on a slice of the level), so the space is, per
piece, a list of (CTA count, setting):

- a GEMV piece: output-column CTAs dividing every matmul's columns times a
  split-K dividing K (a Partial over the split axis completed by a reshard), and
  a K tile (spaces.gemv_piece_points);
- an attention piece: a count, its KV heads split and block (sequence_attention);
- a glue piece: whole on one CTA, or a seed — the inputs of the largest shapes
  split on one axis (or the two largest together, each on one of its axes) over
  as many CTAs as the split — or a setting a hook adds at a count (the experts).

The counts tried are bounded (the divisors near the level's units and a few
fractions of them), and each piece's list is ordered by an analytic surrogate
and cut to its best few, so a decoder layer is searched in seconds. The
objective of the sequence is taken as the sum of its kernels' (the estimate
prices each launch on its own, as for a chain), so each piece's setting is the
best of the piece priced alone — the pieces are priced rank by rank, each
piece's best surrogate point first, so a time limit leaves every piece some
point — and the whole sequence is priced at those settings. Then each glue
piece whose values only the next GEMV or attention reads is priced as that
kernel's prologue (computed whole in every CTA: one launch fewer), and each
glue piece elementwise over the previous GEMV's output columns as that GEMV's
epilogue (on each CTA's columns, the GEMV's outputs never leaving smem), and
fused the way that prices lowest where it is below the two apart. A structured search: given the counts
the pieces are independent, and a setting the shard propagation cannot carry is
refused by the analysis and counted out.
"""
from __future__ import annotations

import math
import time

from tilefoundry.errors import TileFoundryError
from tilefoundry.placer.sequence_experts import own_description, written_here
from tilefoundry.placer.sequence_glue import is_staged

__all__ = ["sequence_plan", "price_sequence"]

#: the input shapes a glue piece is tried split on: the largest few (by bytes);
#: splitting a small input saves nothing a split of the large ones does not
SEED_SHAPES = 2
#: the points of one flash-decoding piece priced
ATTENTION_POINTS = 8


def _bytes_of(shape, dtype: str) -> int:
    from tilefoundry.placer.spaces import _bytes

    return _bytes(dtype) * math.prod(shape)


def _ranked_shapes(piece) -> list:
    """((shape, (input name, bytes), ...)) of the largest ``SEED_SHAPES`` input shapes."""
    shapes: dict = {}
    for name, shape, dtype, _ in piece.inputs:
        shapes.setdefault(tuple(shape), []).append((name, _bytes_of(shape, dtype)))
    return sorted(shapes.items(), key=lambda item: (-sum(b for _, b in item[1]), item[0]))[:SEED_SHAPES]


def _splits(piece) -> list:
    """((input names), (their axes), extent) of each way a glue piece's largest
    shapes split: one axis of one shape (every input of that shape alike: a K
    and a V cache), or the two shapes together, each on one of its axes, over a
    count dividing both (an expert's gate/up stack on its columns and its down
    stack on its rows); and the op that makes the largest value, split on its
    operands (``_made_splits``)."""
    ranked = _ranked_shapes(piece)
    found = []
    for shape, named in ranked:
        names = tuple(n for n, _ in named)
        found += [(names, (axis,) * len(names), extent) for axis, extent in enumerate(shape) if extent > 1]
    if len(ranked) == 2:
        (shape_a, named_a), (shape_b, named_b) = ranked
        for axis_a, extent_a in enumerate(shape_a):
            for axis_b, extent_b in enumerate(shape_b):
                if math.gcd(extent_a, extent_b) > 1:
                    found.append((tuple(n for n, _ in named_a + named_b),
                                  (axis_a,) * len(named_a) + (axis_b,) * len(named_b), math.gcd(extent_a, extent_b)))
    return found + _made_splits(piece)


def _made_splits(piece) -> list:
    """((names), (axes), extent) making the piece's largest values split along
    each of their axes, rather than whole in every CTA: the piece's inputs of
    that shape, and every smaller operand made in the piece with the same extent
    there of an op that makes a value of that shape, split alike (Mamba-2's state
    update: the state and its ``(heads, 1, 1)`` decay over the heads, and the
    ``(heads, P, 1)`` factor whose product by a ``(1, 1, N)`` row is
    ``(heads, P, N)``)."""
    shapes = {source: tuple(shape) for _, args in piece.operands for source, shape in args}
    made = {target for target, _ in piece.lines}
    ops = [(value, args) for value, args in piece.operands if value in shapes]
    if not ops:
        return []
    shape = max((shapes[value] for value, _ in ops), key=lambda dims: (math.prod(dims), dims))
    found = []
    for axis, extent in enumerate(shape):
        operands = tuple(dict.fromkeys(
            source for value, args in ops if shapes[value] == shape for source, dims in args
            if source in made and len(dims) == len(shape) and dims[axis] == extent
            and math.prod(dims) < math.prod(shape)))
        if extent > 1 and operands:
            inputs = tuple(name for name, dims, _, _ in piece.inputs if tuple(dims) == shape)
            names = inputs + operands
            found.append((names, (axis,) * len(names), extent))
    return found


def _counts_near(extent: int, budget) -> set:
    """The CTA counts a split of ``extent`` is tried over: its largest divisor
    within one wave of the level's units and a half, a quarter and an eighth of
    it (a glue piece may want fewer CTAs: its work in gmem grows with them), and
    its largest divisor within ``MAX_WAVES`` waves."""
    from tilefoundry.placer.spaces import MAX_WAVES

    def largest(bound: int) -> int:
        return max(d for d in range(1, min(extent, bound) + 1) if extent % d == 0)

    one = largest(budget.units)
    found = {one // part for part in (1, 2, 4, 8) if one % part == 0 and one // part > 1}
    found.add(largest(budget.units * MAX_WAVES))
    return {c for c in found if c > 1}


def _seeds(piece, ctas: int) -> list:
    """The seeds of a glue piece over exactly ``ctas`` CTAs: each split of
    ``_splits`` whose extent ``ctas`` divides."""
    return [(names, axes, ctas, "replicas", ()) for names, axes, extent in _splits(piece) if extent % ctas == 0]


def _glue_surrogate(piece, ctas: int, setting, budget) -> float:
    """Each CTA's bytes (its share of the split inputs, every other input whole)
    times the waves over one unit's share of the bandwidth, plus every CTA's
    bytes together over the whole bandwidth (an input read whole is read by
    every CTA: the work in gmem grows with them) (ns); a setting that is no seed
    (an expert kernel) as if it split every input."""
    split = set(setting[0]) if setting and not written_here(setting) else None
    shares = [(_bytes_of(shape, dtype), split is None or name in split) for name, shape, dtype, _ in piece.inputs]
    per = sum(size / ctas if cut else size for size, cut in shares)
    waves = -(-ctas // budget.units)
    return (per * waves * budget.units + per * ctas) / budget.bandwidth * 1e9


def _glue_points(piece, budget) -> list:
    """(count, setting) of a glue piece: whole on one CTA, and at each count of
    ``_counts_near`` (and each power of two within the units, for a hook's own
    setting and for the whole piece repeated over replicas) the hook's settings
    and the seeds. Each way to split is tried at
    its best count before any at its second, then by the surrogate: a split the
    propagation refuses is refused once and its other counts passed over
    (price_sequence), so the counts of the splits that load are all priced."""
    from tilefoundry.placer.sequence_experts import own_settings
    from tilefoundry.placer.sequence_glue import staged_seeds

    counts = set()
    for _, _, extent in _splits(piece):
        counts |= _counts_near(extent, budget)
    counts |= {1 << i for i in range(1, budget.units.bit_length()) if 1 << i <= budget.units}
    ways: dict = {}
    whole = sum(_bytes_of(shape, dtype) for _, shape, dtype, _ in piece.inputs)
    for ctas in sorted(counts):
        if ctas & (ctas - 1) == 0:  # whole over replicas: the same work, the launch's latency shared
            ways.setdefault(("whole",), []).append((whole * (budget.units + ctas) / budget.bandwidth * 1e9, -ctas,
                                                    (ctas, ())))
        seeds = _seeds(piece, ctas)
        for setting in own_settings(piece, ctas, budget) + seeds + staged_seeds(piece, seeds, budget):
            # a seed staged in smem is a way of its own: its best count is not the gmem seed's
            way = setting[:1] if written_here(setting) else setting[:2] + (is_staged(setting),)
            ways.setdefault(way, []).append((_glue_surrogate(piece, ctas, setting, budget), -ctas, (ctas, setting)))
    found = []
    for points in ways.values():
        found += [(rank, *point) for rank, point in enumerate(sorted(points, key=lambda p: p[:2]))]
    found.sort(key=lambda item: item[:3])
    return [(1, ())] + [point for *_, point in found]


def _attention_points(piece, budget) -> list:
    """(count, (KV heads split, KV block)) of a flash-decoding piece: counts of
    heads x splits within ``MAX_WAVES`` waves, ordered by the caches' bytes over
    the units the CTAs keep busy plus a latency per block trip; the best
    ``ATTENTION_POINTS``."""
    from tilefoundry.placer.sequence_attention import core_settings, head_extent
    from tilefoundry.placer.spaces import MAX_WAVES, TRIP_NS, _divisors, _occupancy

    core = piece.core
    moved = 2 * 2 * core.ctx * core.heads * core.dim
    found = []
    for ctas in sorted({h * s for h in _divisors(head_extent(core)) for s in _divisors(core.ctx)
                        if h * s <= budget.units * MAX_WAVES}):
        for heads, block in core_settings(core, ctas, budget):
            trips = core.ctx // (block * (ctas // heads))
            cost = moved / budget.bandwidth / _occupancy(ctas, budget.units) * 1e9 + TRIP_NS * trips
            found.append((cost, -ctas, (ctas, (heads, block))))
    found.sort(key=lambda item: item[:2])
    return [point for *_, point in found[:ATTENTION_POINTS]]


def sequence_plan(kernel, budget) -> list:
    """Each piece's (count, setting) points, best surrogate first."""
    from tilefoundry.placer.spaces import gemv_piece_points

    plan = []
    for piece in kernel.pieces:
        if piece.kind == "gemv":
            points = gemv_piece_points(piece, budget)
        elif piece.kind == "attention":
            points = _attention_points(piece, budget)
        else:
            points = _glue_points(piece, budget)
        if not points:
            from tilefoundry.errors import AnalysisError

            what = ("GEMV of output columns " + ", ".join(str(n) for _, _, n, _ in piece.lines)
                    if piece.kind == "gemv" else piece.kind)
            raise AnalysisError(f"{kernel.where}: place: no placement of the {what} fits the level's units "
                                "with its tiles within smem")
        plan.append(points)
    return plan


#: the most Partials one glue seed completes before it is given up
MAX_COMPLETIONS = 4


def _priced_piece(kernel, index, ctas, setting, level, objective, write, price):
    """(objective, the setting priced) of one piece. A glue seed whose split leaves
    a Partial that an op cannot read (a residual add after a split contraction),
    or a split one cannot read (a norm over the split axis: Mamba-2's gated
    RMSNorm after its state update split over the heads), is retried with that
    operand resharded whole first (a sum over the split, or a gather of it), as
    the propagation's refusal asks, up to ``MAX_COMPLETIONS``: the work before
    the op stays split, the op reads the value whole."""
    import re

    from tilefoundry.errors import VerifyError
    from tilefoundry.placer.sequence import piece_text

    seeded = kernel.pieces[index].kind == "glue" and bool(setting) and not written_here(setting)
    while True:
        # a file of its own per try: nothing loaded for one is reused for the next
        path = write(piece_text(kernel, index, ctas, setting, level), len(setting[4]) if seeded else 0)
        try:
            return price(path, objective).objective_ns, setting
        except VerifyError as exc:
            found = (re.search(r"\(operand (\d+)\) carries Partial.*\(value '(\w+)'\)", str(exc))
                     or re.search(r"input (\d+) \(\w+\) is split on mesh axis.*reshard it.*first \(value '(\w+)'\)",
                                  str(exc)))
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
        return f"kernel {index} (GEMV) over {ctas} CTAs, split-K {setting[0]}, K tile {setting[1]}"
    if piece.kind == "attention":
        return f"kernel {index} (flash decoding) over {ctas} CTAs, KV heads over {setting[0]}, KV block {setting[1]}"
    if written_here(setting):
        return f"kernel {index} ({own_description(setting)}) over {ctas} CTAs"
    how = "whole" if not setting else f"{'/'.join(setting[0])} axes {setting[1]} over {setting[2]} CTAs"
    how += " (a slice)" if setting and setting[3] == "slice" else ""
    how += ", every value in smem" if is_staged(setting) else ""
    return f"kernel {index} over {ctas} CTAs, {how}"


def _price_pieces(kernel, plan, objective, level, deadline, bar, folder, bugs, write, price, count_out):
    """Every piece's points priced alone, rank by rank across the pieces (each
    piece's best surrogate point first) until the deadline: (each piece's
    [(objective, rank, count, setting)], the refusals, the points priced)."""
    priced_of = [[] for _ in plan]
    refused, priced, dead = {}, 0, {}
    for rank in range(max((len(points) for points in plan), default=0)):
        for index, points in enumerate(plan):
            if rank >= len(points):
                continue
            if time.monotonic() >= deadline:
                return priced_of, refused, priced
            piece, (ctas, setting) = kernel.pieces[index], points[rank]
            way = (index, setting[:2]) if piece.kind == "glue" and setting else None
            priced += 1
            if way in dead:  # the propagation refused this split at another count: it refuses it here
                refused[dead[way]] += 1
                if bar is not None:
                    bar.update(1)
                continue
            try:
                cost, setting = _priced_piece(kernel, index, ctas, setting, level, objective,
                                              lambda text, n: write(folder, f"point_{priced}_{n}.py", text), price)
                priced_of[index].append((cost, rank, ctas, setting))
            except TileFoundryError as exc:
                if _uncarried(exc, piece, setting):  # a split the propagation refuses: out of the space
                    reason = "a glue split the shard propagation cannot carry: " + str(exc).split(": ", 2)[-1][:160]
                    refused[reason] = refused.get(reason, 0) + 1
                    dead[way] = reason
                else:
                    count_out(exc, _describe(piece, index, ctas, setting), refused, bugs)
            if bar is not None:
                bar.update(1)
    return priced_of, refused, priced


def _mesh_shape(piece, ctas: int, setting) -> tuple:
    """The mesh a piece's block states over its ``ctas`` CTAs (axes of 1 left out)."""
    if piece.kind == "gemv":
        shape = (ctas // setting[0], setting[0])
    elif piece.kind == "attention":
        shape = (setting[0], ctas // setting[0])
    elif setting and not written_here(setting):
        shape = (setting[2], ctas // setting[2])
    else:
        shape = (ctas,)
    return tuple(d for d in shape if d > 1) or (1,)


#: the wholes priced besides the best: each with one piece at its next best
#: setting (the pieces whose next best is nearest theirs first), so an answer the
#: check refuses leaves others that differ where it failed
WHOLE_VARIANTS = 3


def _ranked(kernel, priced_of) -> tuple:
    """(the level's count, each piece's [(objective, count, setting)] best
    first, or None where no level holds a point of every piece). Every piece
    runs on a slice of the level: its count at most the level's, its trailing
    mesh axes dividing it. Of the counts priced, the level is the one whose
    pieces' best points that fit it sum least (the fewest CTAs among equals)."""
    from tilefoundry.placer.placed_program import fits_level

    ordered = [[(cost, ctas, setting) for cost, _, ctas, setting in sorted(points, key=lambda p: p[:2])]
               for points in priced_of]

    def fitting(level: int) -> list:
        return [[p for p in points if fits_level(_mesh_shape(piece, p[1], p[2]), level)]
                for piece, points in zip(kernel.pieces, ordered)]

    best = None
    for level in sorted({p[1] for points in ordered for p in points}):
        ranked = fitting(level)
        if all(ranked):
            total = sum(points[0][0] for points in ranked)
            if best is None or total < best[0]:
                best = (total, level, ranked)
    return (None, None) if best is None else best[1:]


def _level(kernel, declared: int, chosen, fused) -> int:
    """The count the Module declares: the largest of the kernels that run (a
    fused glue piece runs inside the next), where every mesh is a slice of it;
    else ``declared``."""
    from tilefoundry.placer.placed_program import fits_level

    own = [(piece, ctas, setting) for i, (piece, (_, ctas, setting)) in enumerate(zip(kernel.pieces, chosen))
           if i not in fused]
    top = max(ctas for _, ctas, _ in own)
    return top if all(fits_level(_mesh_shape(p, c, s), top) for p, c, s in own) else declared


def _fusions(kernel, chosen, objective, level, deadline, folder, bugs, refused, write, price, count_out) -> tuple:
    """(the glue pieces run as the next kernel's prologue, those run as the
    previous GEMV's epilogue): each glue piece fused where the fused kernel
    prices below the two apart, the way that saves more where both do."""
    from tilefoundry.placer.sequence_ops import epilogue_fusable, fusable

    fused, epilogues = [], []
    for index in range(len(kernel.pieces)):
        ways = []
        if index + 1 < len(kernel.pieces) and fusable(kernel, index):
            ways.append(("prologue", index + 1))
        if epilogue_fusable(kernel, index) and _epilogue_fits(kernel, index, chosen, level):
            ways.append(("epilogue", index - 1))
        best = None
        for way, host in ways:
            if time.monotonic() >= deadline:
                break
            cost = _fused_cost(kernel, index, way, host, chosen, objective, level, folder, bugs, refused, write,
                               price, count_out)
            saved = chosen[index][0] + chosen[host][0] - cost if cost is not None else 0
            if saved > 0 and (best is None or saved > best[0]):
                best = (saved, way)
        if best is not None:
            (fused if best[1] == "prologue" else epilogues).append(index)
    return tuple(fused), tuple(epilogues)


def _epilogue_fits(kernel, index, chosen, level) -> bool:
    """The GEMV's smem and the epilogue's staged parameters fit a CTA's smem together."""
    from tilefoundry.placer.sequence_ops import epilogue_smem
    from tilefoundry.placer.spaces import _gemv_piece_smem, budget_of

    budget = budget_of(kernel.target, level)
    _, ctas, (split_k, tile) = chosen[index - 1]
    cols = ctas // split_k
    held = _gemv_piece_smem(kernel.pieces[index - 1], cols, tile) + epilogue_smem(kernel, index, cols)
    return budget.smem_bytes is None or held <= budget.smem_bytes


def _fused_cost(kernel, index, way, host, chosen, objective, level, folder, bugs, refused, write, price, count_out):
    """The objective of glue piece ``index`` fused into piece ``host`` (its
    prologue or epilogue) at the host's count and setting, or None where refused."""
    from tilefoundry.placer.sequence import piece_text

    _, ctas, setting = chosen[host]
    text = piece_text(kernel, host, ctas, setting, level, fused=way == "prologue", epilogue=way == "epilogue")
    try:  # one launch fewer; a prologue's work in every CTA, an epilogue's on each CTA's columns
        return price(write(folder, f"{way}_{index}.py", text), objective).objective_ns
    except TileFoundryError as exc:
        count_out(exc, f"kernel {index} as the {way} of kernel {host} over {ctas} CTAs", refused, bugs)
        return None


def _choice(kernel, declared: int, chosen, fused, epilogues=()):
    from tilefoundry.placer.sequence import SequenceChoice

    kinds = tuple(p.kind for p in kernel.pieces)
    own = [() if i in fused or i in epilogues else setting for i, (_, _, setting) in enumerate(chosen)]
    counts = tuple(chosen[i + 1][1] if i in fused else chosen[i - 1][1] if i in epilogues else ctas
                   for i, (_, ctas, _) in enumerate(chosen))
    return SequenceChoice(declared, *(tuple(s for k, s in zip(kinds, own) if k == kind)
                                      for kind in ("gemv", "glue", "attention")), fused, kinds, counts,
                          epilogues=epilogues)


#: the share of the time limit the pieces' points are priced in; the rest is the
#: fusions' (a prologue or an epilogue each: a few pricings of one kernel)
PIECES_SHARE = 0.7


def price_sequence(kernel, plan, objective, level, deadline, bar, folder, bugs, *, write, price, count_out,
                   candidate):
    """Each piece's points priced alone (within ``PIECES_SHARE`` of the time
    left), then the fusions of glue into the next kernel (a prologue) or the
    previous GEMV (an epilogue), then the whole sequence at each piece's best, and up to
    ``WHOLE_VARIANTS`` wholes with one piece at its next best. ``write``,
    ``price`` and ``count_out`` are the driver's (one file per point, the
    objective, a refusal counted out, the record of a priced answer)."""
    from tilefoundry.placer.sequence import sequence_text

    # the pieces' points stop short of the deadline: a fusion saves a launch, more
    # than a piece's later points gain (the decoder layers' fusions were never priced)
    pieces_deadline = time.monotonic() + max(deadline - time.monotonic(), 0.0) * PIECES_SHARE
    priced_of, refused, priced = _price_pieces(kernel, plan, objective, level, pieces_deadline, bar, folder, bugs,
                                               write, price, count_out)
    if not all(priced_of):
        return [], refused, priced
    declared, ranked = _ranked(kernel, priced_of)
    if ranked is None:  # a piece's every point is a mesh no level of the others' counts holds
        refused["no CTA count holds a point of every piece on a slice of it"] = 1
        return [], refused, priced
    best = [points[0] for points in ranked]
    fused, epilogues = _fusions(kernel, best, objective, level, deadline, folder, bugs, refused, write, price,
                                count_out)
    others = sorted((points[1][0] - points[0][0], index) for index, points in enumerate(ranked)
                    if len(points) > 1 and index not in fused + epilogues)
    variants = [best[:i] + [ranked[i][1]] + best[i + 1:] for _, i in others]
    # an epilogue's host at its next best point must still hold the epilogue's smem
    variants = [v for v in variants if all(_epilogue_fits(kernel, e, v, level) for e in epilogues)]
    # past WHOLE_VARIANTS only while no whole has loaded: a whole can be refused where
    # its pieces alone are not (the memory family holds a value a block writes out
    # live until the result that reads it, across the blocks after it)
    wholes = [best] + variants
    found = []
    for count, chosen in enumerate(wholes):
        if found and (time.monotonic() >= deadline or count > WHOLE_VARIANTS):
            break
        choice = _choice(kernel, _level(kernel, declared, chosen, fused + epilogues), chosen, fused, epilogues)
        text = sequence_text(kernel, choice, level)
        try:
            found.append(candidate(choice, text, price(write(folder, f"program_{len(found)}.py", text), objective)))
        except TileFoundryError as exc:
            count_out(exc, choice.describe(), refused, bugs)
    return found, refused, priced
