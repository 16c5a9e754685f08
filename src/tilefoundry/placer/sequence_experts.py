"""The routed experts of a MoE block inside a sequence (placer/sequence.py),
placed as a kernel engineer writes them rather than as data-parallel glue.

A MoE block reads its chosen experts' weights with ``index_select`` of each
weight stack ``(E, K, F)`` by the top-k ids along the first axis and multiplies
one row by all of them as a batch: ``act = f(x @ gate_sel, x @ up_sel)``
elementwise, then ``y = act @ down_sel`` and ``sum_j(g(y_j, s_j))`` over the
experts (``s`` a per-expert scale such as the router's weights). Written as
glue, the selected rows are gathered into a batch in gmem (read, written, read
again) before any product. Found by structure inside a glue piece (never by a
name), the core becomes one kernel over ``C`` CTAs instead, the way the zoo's
hand-placed ``routed_experts`` runs:

- the ids are read into smem and the per-expert scales into registers, beside
  an f32 accumulator of the output ``(M, N)`` split over its columns;
- for each chosen expert ``j`` (a ``range`` loop of k trips), the expert's
  weights are read as a run-time window of each stack (``stack[e : e + 1]``);
  its first GEMVs (gate, up: every matmul of the row by a selected stack) are
  split over their ``F`` output columns across the CTAs, K walked in tiles
  staged through smem with an f32 accumulator per matmul; the elementwise ops
  between run on each CTA's columns; the activation crosses the CTAs through
  gmem (a grid-wide exchange: every CTA is resident at once, so ``C`` is at
  most the level's units), is read whole, and the second GEMV (down) is split
  over its ``N`` output columns the same way; the ops between it and the sum,
  with the expert's own scale, are its epilogue, added into the accumulator;
- the ops that only reshape or cast the sum follow it before it is written.

What the glue does before the core (a router's softmax and top-k) is computed
whole by every CTA in the same kernel; what reads the core's output after it (a
residual add) follows the core in the kernel. The piece keeps its glue seeds
too: the expert kernel is one more setting of it, priced against them.

The glue settings that are no seed — this kernel and a piece staged whole in
smem (sequence_ops.py) — are named here once (``written_here``,
``own_settings``, ``own_block``, ``own_description``) for the sequence's hooks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tilefoundry.placer.placed_program import cast_to

__all__ = ["WRITTEN_HERE", "Experts", "experts_block", "experts_settings", "find_experts", "own_block",
           "own_description", "own_settings", "written_here"]

#: the K tiles tried per GEMV stage: the largest few that fit smem (a one-wave
#: GEMV only adds loop trips with a smaller one)
TILES_PER_STAGE = 3


@dataclass(frozen=True)
class Experts:
    """What the expert kernel writer needs, by source name.

    Attributes:
        ids, count: the ``(count,)`` expert ids.
        row, m, k: the first GEMVs' left operand ``(1, m, k)``.
        first: ``(result, stack, F, dtype)`` of each first matmul.
        first_ops: ``(targets, text)`` of the elementwise ops after them.
        act, f: the second matmul's left operand ``(count, m, f)``.
        second: ``(result, stack, N, dtype)`` of the second matmul.
        second_ops: ``(targets, text)`` of the elementwise ops before the sum.
        scales: ``(name, shape)`` of each per-expert operand of those ops.
        mixed: the summed value; out, out_dtype: the sum over the experts.
        tail: ``(targets, text)`` of the ops on the sum the kernel applies.
        last: the value the kernel leaves in gmem, ``(m, n)``.
        inside: names of every value the core makes (its glue lines are replaced).
        after: names of the glue values made from the core's output.
    """

    ids: str
    count: int
    row: str
    m: int
    k: int
    first: tuple
    first_ops: tuple
    act: str
    f: int
    second: tuple
    second_ops: tuple
    scales: tuple
    mixed: str
    mixed_dtype: str
    out: str
    out_dtype: str
    n: int
    tail: tuple
    last: str
    inside: frozenset
    after: frozenset


def _name(node) -> str | None:
    return getattr(node.op, "name", None) if hasattr(node, "op") else None


def _selected(node):
    """The ``index_select`` of a rank-3 weight stack along its first axis by at
    most ``MAX_SELECTED_ROWS`` ids (a top-k, as the glue's row rewrite bounds
    it: sequence_ops.py), else None."""
    from tilefoundry.ir.expr import Var
    from tilefoundry.placer.sequence_ops import MAX_SELECTED_ROWS

    if _name(node) != "index_select" or node.op.dim % 3:
        return None
    stack, ids = node.args
    if not (isinstance(stack, Var) and stack.is_const and len(stack.type.shape) == 3):
        return None
    shape = tuple(ids.type.shape)
    return node if len(shape) == 1 and isinstance(shape[0], int) and shape[0] <= MAX_SELECTED_ROWS else None


def _live(call, resolve) -> list:
    """The operands of a call that are not literals, resolved through tuples."""
    from tilefoundry.ir.expr import Constant

    return [resolve(a) for a in call.args if not isinstance(a, Constant)]


def _elementwise(call, shape) -> bool:
    from tilefoundry.placer.op_source import ELEMENTWISE

    return _name(call) in ELEMENTWISE and tuple(call.type.shape) == shape


def _lines(calls, names) -> tuple:
    from tilefoundry.placer.sequence_ops import op_lines

    return tuple(line for c in calls for line in op_lines(c, names, {}))


def find_experts(group: list, names, resolve) -> Experts | None:
    """The expert core of a glue group: first GEMVs of one row by stacks selected
    by one set of ids, elementwise ops, a second GEMV by a stack selected by the
    same ids, elementwise ops with per-expert scales, a sum over the experts;
    or None where the group holds no such core."""
    readers: dict = {}
    for call in group:
        for arg in _live(call, resolve):
            readers.setdefault(id(arg), []).append(call)
    products = [c for c in group if _name(c) == "matmul" and _selected(resolve(c.args[1])) is not None]
    if len(products) < 2:
        return None
    selects = {id(resolve(c.args[1])): resolve(c.args[1]) for c in products}
    ids = {id(s.args[1]) for s in selects.values()}
    if len(ids) != 1:
        return None
    first = [c for c in products if resolve(c.args[0]) is resolve(products[0].args[0])]
    second = [c for c in products if all(c is not f for f in first)]
    row = resolve(products[0].args[0])
    count = next(iter(selects.values())).args[1].type.shape[0]
    if len(second) != 1 or len(row.type.shape) != 3 or row.type.shape[0] != 1:
        return None
    _, m, k = row.type.shape
    found = _first_stage(group, first, second[0], count, m, k, readers, resolve)
    if found is None:
        return None
    first_ops, act = found
    f = act.type.shape[-1]
    found = _second_stage(group, second[0], count, m, f, readers, resolve)
    if found is None:
        return None
    second_ops, scales, reduce_call, tail = found
    core = [*selects.values(), *first, *first_ops, second[0], *second_ops, reduce_call, *tail]
    inside = {id(c) for c in core}
    last = tail[-1] if tail else reduce_call
    after, reached = set(), {id(last)}
    for call in group:
        if id(call) not in inside and any(id(a) in reached for a in _live(call, resolve)):
            reached.add(id(call))
            after.add(names.of(call))
    # a value made inside and read by a glue op outside the core (other than the
    # last) cannot be read: the kernel holds it per expert only
    for call in core:
        if call is not last and any(id(r) not in inside for r in readers.get(id(call), ())):
            return None
    mixed = resolve(reduce_call.args[0])
    return Experts(
        ids=names.of(next(iter(selects.values())).args[1]), count=count, row=names.of(row), m=m, k=k,
        first=tuple((names.of(c), resolve(c.args[1]).args[0].name, c.type.shape[-1], c.type.dtype.name)
                    for c in first),
        first_ops=_lines(first_ops, names), act=names.of(act), f=f,
        second=(names.of(second[0]), resolve(second[0].args[1]).args[0].name, second[0].type.shape[-1],
                second[0].type.dtype.name),
        second_ops=_lines(second_ops, names),
        scales=tuple(sorted((names.of(a), tuple(a.type.shape)) for a in scales)), mixed=names.of(mixed),
        mixed_dtype=mixed.type.dtype.name, out=names.of(reduce_call), out_dtype=reduce_call.type.dtype.name,
        n=second[0].type.shape[-1], tail=_lines(tail, names), last=names.of(last),
        inside=frozenset(names.of(c) for c in core), after=frozenset(after))


def _first_stage(group, first, second, count, m, k, readers, resolve):
    """(the elementwise ops between the first GEMVs and the second, its left
    operand) or None: every op reads only first results, its own values and
    literals, and nothing else reads them."""
    shape = None
    made = set()
    for call in first:
        selected = resolve(call.args[1])
        if tuple(selected.type.shape[:2]) != (count, k) or tuple(call.type.shape[:2]) != (count, m):
            return None
        if shape not in (None, tuple(call.type.shape)):
            return None
        shape = tuple(call.type.shape)
        made.add(id(call))
    ops = []
    for call in group:
        if id(call) in made or call is second:
            continue
        live = _live(call, resolve)
        if live and all(id(a) in made for a in live) and _elementwise(call, shape):
            ops.append(call)
            made.add(id(call))
    act = resolve(second.args[0])
    if id(act) not in made or len(act.type.shape) != 3:
        return None
    inside = made | {id(second)}
    for value in made:
        if any(id(r) not in inside for r in readers.get(value, ())):
            return None
    return ops, act


def _per_expert(node, count: int, m: int) -> bool:
    """A value one entry per expert broadcast over the output: ``(count, 1 or m, 1)``."""
    shape = tuple(node.type.shape)
    return len(shape) == 3 and shape[0] == count and shape[1] in (1, m) and shape[2] == 1


def _second_stage(group, second, count, m, f, readers, resolve):
    """(the elementwise ops between the second GEMV and the sum, their
    per-expert operands, the sum over the experts, the ops on the sum the kernel
    applies) or None."""
    from tilefoundry.ops.tensor import ReduceKind

    n = second.type.shape[-1]
    selected = resolve(second.args[1])
    if tuple(selected.type.shape[:2]) != (count, f) or tuple(second.type.shape) != (count, m, n):
        return None
    made, ops, scales = {id(second)}, [], {}
    reduce_call = None
    start = next(i for i, c in enumerate(group) if c is second)
    for call in group[start + 1:]:
        live = _live(call, resolve)
        if not any(id(a) in made for a in live):
            continue
        if _name(call) == "reduce":
            if (tuple(call.op.axes) != (0,) or call.op.keepdim or call.op.kind != ReduceKind.SUM
                    or len(live) != 1):
                return None
            reduce_call = call
            break
        others = [a for a in live if id(a) not in made]
        if not _elementwise(call, (count, m, n)) or not all(_per_expert(a, count, m) for a in others):
            return None
        ops.append(call)
        made.add(id(call))
        for a in others:
            scales[id(a)] = a
    if reduce_call is None:
        return None
    inside = made | {id(reduce_call)}
    for value in made:
        if any(id(r) not in inside for r in readers.get(value, ())):
            return None
    tail, running = [], reduce_call
    while True:
        after = readers.get(id(running), ())
        if len(after) != 1 or [id(a) for a in _live(after[0], resolve)] != [id(running)]:
            break
        call = after[0]
        if _name(call) != "reshape" and not _elementwise(call, (m, n)) or tuple(call.type.shape) != (m, n):
            break
        tail.append(call)
        running = call
    return ops, tuple(scales.values()), reduce_call, tail


def _tiles(extent: int, fits) -> list:
    """The largest ``TILES_PER_STAGE`` K tiles of ``extent`` (16 .. 1024 dividing it,
    or the whole extent) that ``fits``."""
    from tilefoundry.placer.spaces import MAX_TILE_K, MIN_TILE_K

    found = [t for t in range(min(MIN_TILE_K, extent), min(MAX_TILE_K, extent) + 1) if extent % t == 0]
    found = sorted({*found, extent})
    return [t for t in found if fits(t)][-TILES_PER_STAGE:]


def experts_settings(piece, ctas: int, budget) -> list:
    """("experts", first K tile, second K tile) for each pair that fits smem, where
    ``ctas`` divides both GEMVs' output columns and is at most the level's units
    (the activation crosses the CTAs inside the kernel: every CTA resident)."""
    core = piece.experts
    if core is None or ctas > budget.units or core.f % ctas or core.n % ctas:
        return []
    made = core.inside | core.after | {target for target, _ in piece.lines if target not in core.inside}
    if not set(piece.outputs) <= made - (core.inside - {core.last}):
        return []  # a later piece reads a value the kernel keeps per expert only
    smem = budget.smem_bytes

    def first(t: int) -> int:  # the row (bf16 and f32), each first weight tile (bf16 and f32)
        return core.m * core.k * 6 + sum(t * (f // ctas) * 6 for _, _, f, _ in core.first)

    def second(t: int) -> int:  # the activation whole, the second weight tile
        return core.m * core.f * 6 + t * (core.n // ctas) * 6

    # the largest tiles first (the surrogate ranks this kernel's tiles alike, and a
    # search cut short by its time limit prices the first few): fewest loop trips
    firsts = _tiles(core.k, lambda t: smem is None or first(t) <= smem)[::-1]
    return [("experts", a, b) for a in firsts
            for b in _tiles(core.f, lambda t: smem is None or first(a) + second(t) <= smem)[::-1]]


def _stage(lines: list, pad: str, row: str, products, extent: int, tile: int, m: int) -> None:
    """One expert's GEMVs of ``row`` ((name, window, columns) each), split over
    their columns, K walked in ``tile`` rows staged through smem."""
    if tile == extent:  # the whole K at once: no loop, no running sum
        for name, window, columns in products:
            lines.append(f'{pad}t_{name} = tf.cast(tf.reshard({window}, ({tile}, {columns} @ g.n), "smem"), "f32")')
            lines.append(f'{pad}acc_{name} = tf.reshard(tf.matmul({row}, t_{name}), ({m}, {columns} @ g.n), "rmem")')
        return
    for name, _, columns in products:
        lines.append(f'{pad}acc_{name} = tf.zeros(Tensor[({m}, {columns} @ g.n), "f32", "rmem"])')
    lines.append(f"{pad}for kk in tile({extent}, {tile}):")
    for name, window, columns in products:
        staged = f'tf.reshard({window}[kk, :], ({tile}, {columns} @ g.n), "smem")'
        lines.append(f'{pad}    t_{name} = tf.cast({staged}, "f32")')
        lines.append(f"{pad}    acc_{name} = acc_{name} + tf.reshard(tf.matmul({row}[:, kk], t_{name}), "
                     f'({m}, {columns} @ g.n), "rmem")')


def experts_block(piece, ctas: int, setting, level: str) -> list:
    """The expert kernel of a glue piece holding an expert core (setting:
    "experts", first K tile, second K tile): the glue before the core whole in
    every CTA, the core, the glue after it."""
    from tilefoundry.placer.placed_program import _renamed

    core = piece.experts
    _, tile_a, tile_b = setting
    m, pad = core.m, "    "
    lines = [f'with Mesh(("{level}",), ({ctas},), ("n",)) as g:']
    renamed = {}
    for name, shape, _, _ in piece.inputs:
        if re.fullmatch(r"v\d+(_\d+)?", name):  # made by another piece: read onto this mesh whole
            dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
            lines.append(f'{pad}{name}_in = tf.reshard({name}, ({dims}), "gmem")')
            renamed[name] = f"{name}_in"
    inside = re.compile("|".join(re.escape(n) + r"(_at\d+)?" for n in sorted(core.inside)))
    before = [(t, x) for t, x in piece.lines if not inside.fullmatch(t) and t not in core.after]
    after = [(t, x) for t, x in piece.lines if t in core.after]
    lines += [f"{pad}{t} = {_renamed(x, renamed)}" for t, x in before]
    ref = lambda name: renamed.get(name, name)  # noqa: E731
    row = f'tf.reshard(tf.reshape({ref(core.row)}, ({m}, {core.k})), ({m}, {core.k}), "smem")'
    lines.append(f'{pad}row_e = tf.cast({row}, "f32")')
    lines.append(f'{pad}ids_e = tf.reshard({ref(core.ids)}, ({core.count},), "smem")')
    scaled = {}
    for name, shape in core.scales:
        dims = ", ".join(str(d) for d in shape)
        lines.append(f'{pad}{name}_e = tf.reshard({ref(name)}, ({dims}), "rmem")')
        scaled[name] = f"{name}_e[j, :, :]"
    lines.append(f'{pad}sum_e = tf.zeros(Tensor[({m}, {core.n} @ g.n), "f32", "rmem"])')
    lines.append(f"{pad}# the chosen experts one after another, each read as a run-time window of its stacks")
    lines.append(f"{pad}for j in range({core.count}):")
    body = pad + "    "
    lines.append(f"{body}e = ids_e[j]")
    firsts = []
    for name, stack, columns, _ in core.first:
        lines.append(f"{body}w_{name} = tf.reshape({stack}[e : e + 1, :, :], ({core.k}, {columns}))")
        firsts.append((name, f"w_{name}", columns))
    _stage(lines, body, "row_e", firsts, core.k, tile_a, m)
    for name, _, _, dtype in core.first:
        lines.append(f"{body}{name} = {cast_to(f'acc_{name}', dtype)}")
    lines += [f"{body}{t} = {x}" for t, x in core.first_ops]
    lines.append(f"{body}# the activation crosses the CTAs through gmem, then is read whole")
    lines.append(f'{body}act_e = tf.reshard({core.act}, ({m}, {core.f} @ g.n), "gmem")')
    lines.append(f'{body}act_s = tf.cast(tf.reshard(act_e, ({m}, {core.f}), "smem"), "f32")')
    name, stack, columns, dtype = core.second
    lines.append(f"{body}w_{name} = tf.reshape({stack}[e : e + 1, :, :], ({core.f}, {columns}))")
    _stage(lines, body, "act_s", [(name, f"w_{name}", columns)], core.f, tile_b, m)
    lines.append(f"{body}{name} = {cast_to(f'acc_{name}', dtype)}")
    lines += [f"{body}{t} = {_renamed(x, scaled)}" for t, x in core.second_ops]
    mixed = core.mixed if core.mixed_dtype == "f32" else f'tf.cast({core.mixed}, "f32")'
    lines.append(f'{body}sum_e = sum_e + tf.reshard({mixed}, ({m}, {core.n} @ g.n), "rmem")')
    lines.append(f"{pad}{core.out} = {cast_to('sum_e', core.out_dtype)}")
    lines += [f"{pad}{t} = {x}" for t, x in core.tail]
    lines.append(f'{pad}{core.last} = tf.reshard({core.last}, ({m}, {core.n} @ g.n), "gmem")')
    lines += [f"{pad}{t} = {_renamed(x, renamed)}" for t, x in after]
    return lines


#: the glue settings that are no seed, each written by its own writer: the
#: expert kernel (here) and a piece staged whole in smem (sequence_ops.py)
WRITTEN_HERE = ("experts", "staged")


def written_here(setting) -> bool:
    """Whether a glue piece's setting is one of ``WRITTEN_HERE`` (no seed)."""
    return bool(setting) and setting[0] in WRITTEN_HERE


def own_settings(piece, ctas: int, budget) -> list:
    """The glue settings written here at ``ctas`` CTAs."""
    from tilefoundry.placer.sequence_ops import staged_settings

    return experts_settings(piece, ctas, budget) + staged_settings(piece, ctas, budget)


def own_block(piece, ctas: int, setting, level: str) -> list:
    """The ``with Mesh`` block of a glue piece under a setting written here."""
    if setting[0] == "staged":
        from tilefoundry.placer.sequence_ops import staged_block

        return staged_block(piece, ctas, level)
    return experts_block(piece, ctas, setting, level)


def own_description(setting) -> str:
    """A setting written here, in words."""
    if setting[0] == "staged":
        return "glue whole, staged in smem"
    return f"the chosen experts' GEMVs over output columns, K tiles {setting[1]}, {setting[2]}"
