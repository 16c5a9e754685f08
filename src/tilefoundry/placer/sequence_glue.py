"""Two ways a sequence's glue (placer/sequence.py) runs as a person writes it:

- **staged in smem**: a glue piece over its seed's split with every value in
  smem (each CTA's share of the split inputs, the other inputs whole, the
  values its ops make), written to gmem once at the end. A glue piece in gmem
  waits a DRAM round trip for each dependent statement and reads every
  intermediate back through L2; the zoo's placed Mamba-2 state update
  (`Mamba2LayerPlaced.ssm`) stages its values in smem this way. The staged twin
  of a seed is a point of the space beside the seed in gmem
  (sequence_search.py), each priced by the objective; a twin whose inputs alone
  are past a CTA's smem is left out, and one whose values are is refused by the
  memory family and counted out (fewer, larger shares), so more CTAs fit.
- **a GEMV's column part**: the ops of a level's glue that work per output
  column of the GEMV before it, where some of them are no elementwise op (a
  depthwise conv step over xBC's channels: its taps joined and summed along
  another axis), are cut off as a glue piece of their own, run before the
  rest; it may run as that GEMV's epilogue (each CTA its own columns, each
  parameter staged over the same columns on the axis they carry to), as the
  zoo's placed Mamba-2 in-projection runs its conv step, where that prices
  below the two kernels apart (sequence_search.py).
"""
from __future__ import annotations

__all__ = ["MAX_PER_COLUMN", "STAGED", "column_epilogue_block", "column_layout", "cut_columns",
           "glue_description", "glue_mesh", "is_staged", "staged_seed_block", "staged_seeds"]

#: a seed's fourth field when its piece holds every value in smem
STAGED = "smem"


def staged_seeds(piece, seeds: list, budget) -> list:
    """Each seed's twin with every value in smem, where the inputs alone fit a
    CTA's smem (each read into smem before the first op: the peak holds them
    all, so a twin past it is one the memory family refuses)."""
    import math

    from tilefoundry.placer.spaces import _bytes

    if _windowed(piece):
        return []
    found = []
    for seed in seeds:
        split = dict(zip(seed[0], seed[1]))
        held = sum(_bytes(dtype) * math.prod(shape) // (seed[2] if name in split else 1)
                   for name, shape, dtype, _ in piece.inputs)
        if budget.smem_bytes is None or held <= budget.smem_bytes:
            found.append(seed[:3] + (STAGED,) + seed[4:])
    return found


def _windowed(piece) -> bool:
    """Whether an op reads an input through a run-time window: rows at an id or
    a position (a chosen expert's weights, a RoPE table's row: ``w[at : at + 1]``),
    an ``index_select``, a ``slice`` at run-time starts, a cache written at a
    position. Staged, such an input would be read whole into smem where the
    kernel reads a few of its rows (the expert kernel and the seeds in gmem read
    those alone)."""
    import re

    for name, _, _, _ in piece.inputs:
        word = re.escape(name)
        windows = (rf"\b{word}\[[^\]]*[A-Za-z_]", rf"tf\.(index_select|cache_update)\({word}\b",
                   rf"tf\.slice\({word}, \([^)]*[A-Za-z_]")
        if any(re.search(w, text) for _, text in piece.lines for w in windows):
            return True
    return False


def is_staged(seed) -> bool:
    return bool(seed) and len(seed) > 3 and seed[3] == STAGED


def glue_description(seed, ctas: int) -> str:
    """A glue seed in words (SequenceChoice.describe)."""
    split = ", ".join(f"{n} axis {a}" for n, a in zip(seed[0], seed[1]))
    copies = f" x {ctas // seed[2]} replicas" if ctas > seed[2] else ""
    done = (f", {len(seed[4])} operand{'s' if len(seed[4]) > 1 else ''} read whole (a Partial summed or a "
            "split gathered) before an op that cannot read the split" if seed[4] else "")
    staged = ", every value staged in smem" if is_staged(seed) else ""
    return f"glue split on {split} over {seed[2]} CTAs{copies}{staged}{done}"


def column_layout(n: int, ctas: int, setting) -> str:
    """A GEMV piece's ``n`` output columns as its block writes them: over the column CTAs."""
    split_k = setting[0]
    return f"{n} @ g.n" if ctas // split_k > 1 or split_k == 1 else str(n)


def glue_mesh(level: str, ctas: int, split: int) -> str:
    """A glue piece's mesh over ``ctas`` CTAs: its split over ``p``, the rest replicas over ``r``."""
    if split == ctas:
        return f'with Mesh(("{level}",), ({ctas},), ("p",)) as g:'
    if split == 1:
        return f'with Mesh(("{level}",), ({ctas},), ("r",)) as g:'
    return f'with Mesh(("{level}",), ({split}, {ctas // split}), ("p", "r")) as g:'


def completed(lines: list, pad: str, targets: str, text: str, complete, operands, renamed, level: str) -> str:
    """``text`` of the op assigning ``targets`` with each Partial operand it cannot
    read completed first (summed over the split: a whole reshard in ``level``,
    appended to ``lines``)."""
    from tilefoundry.placer.placed_program import _renamed

    for value, index in (c for c in complete if c[0] == targets):
        source, shape = operands[value][index]
        whole = renamed.get(source, source)
        lines.append(f'{pad}{whole}_w = tf.reshard({whole}, {_layout(shape)}, "{level}")')
        text = _renamed(text, {whole: f"{whole}_w"})
    return text


def _layout(shape, axis=None, mesh_axis="p") -> str:
    dims = [str(d) + (f" @ g.{mesh_axis}" if i == axis else "") for i, d in enumerate(shape)]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _targets(targets: str) -> list:
    return [t.strip() for t in targets.split(",")]


def _output_axis(piece, name: str, axis_of: dict):
    """The axis an output is written split on: the seed's axis of a value of its
    shape (the state a split update leaves), else None (written whole)."""
    shapes = dict(piece.shapes)
    shape = tuple(shapes.get(name, ()))
    if name in axis_of:
        return axis_of[name]
    inputs = {n: tuple(s) for n, s, _, _ in piece.inputs}
    made = {source: tuple(dims) for _, args in piece.operands for source, dims in args}
    for seeded, axis in axis_of.items():
        if inputs.get(seeded, made.get(seeded)) == shape:
            return axis
    return None


def staged_seed_block(piece, ctas: int, seed, level: str) -> list:
    """A glue piece over its seed with every value in smem: each input read once
    into smem (the seed's over ``p``, the others whole: a parameter too, since
    an op reads its operands at one level), the values the seed splits once
    made resharded over ``p`` in smem, a Partial completed in smem, and each
    value the piece leaves written to gmem at the end (split as the seed splits
    a value of its shape, else whole)."""
    from tilefoundry.placer.placed_program import _renamed

    names, axes, split, _, complete = seed
    axis_of = dict(zip(names, axes))
    lines, pad = [glue_mesh(level, ctas, split)], "    "
    renamed, inputs, made = {}, {n for n, _, _, _ in piece.inputs}, operands_of(piece)
    for name, shape, _, _ in piece.inputs:
        lines.append(f'{pad}{name}_in = tf.reshard({name}, {_layout(shape, axis_of.get(name))}, "smem")')
        renamed[name] = f"{name}_in"
    left = set(piece.outputs)
    operands = dict(piece.operands)
    for targets, text in piece.lines:
        text = completed(lines, pad, targets, _renamed(text, renamed), complete, operands, renamed, "smem")
        own = {t: f"{t}_e" for t in _targets(targets) if t in left}
        renamed.update(own)
        lines.append(f"{pad}{_renamed(targets, own)} = {text}")
        if targets in axis_of and targets not in inputs and targets in made:
            shape = made[targets]
            now = renamed.get(targets, targets)
            lines.append(f'{pad}{targets}_s = tf.reshard({now}, {_layout(shape, axis_of[targets])}, "smem")')
            renamed[targets] = f"{targets}_s"
    for name in piece.outputs:
        shape = dict(piece.shapes)[name]
        layout = _layout(shape, _output_axis(piece, name, axis_of))
        lines.append(f'{pad}{name} = tf.reshard({renamed[name]}, {layout}, "gmem")')
    return lines


def operands_of(piece) -> dict:
    """The shape of each value the piece's ops read that the piece makes."""
    made = {t for targets, _ in piece.lines for t in _targets(targets)}
    return {source: tuple(shape) for _, args in piece.operands for source, shape in args if source in made}


#: the most values per output column a column part makes (a depthwise conv's
#: taps: 4 in Mamba-2); past it the work per column is a kernel's own, not an
#: epilogue's (a recurrent state of thousands of values per head)
MAX_PER_COLUMN = 8
#: the ops that make a column part worth a piece of its own: they keep the
#: GEMV's columns but are no elementwise op (a conv's taps joined along another
#: axis and summed over it); a part of elementwise ops and reshapes alone stays
#: in its glue (the glue's seed carries it, the whole glue may be an epilogue)
_COLUMN_WORK = frozenset({"concat", "reduce"})


def _param_only(glue: list) -> set:
    """The calls of ``glue`` that read parameters, literals and such calls alone."""
    from tilefoundry.ir.expr import Call

    found: set = set()
    for call in glue:
        if all(not isinstance(a, Call) or id(a) in found for a in call.args):
            found.add(id(call))
    return found


def _copied(axes):
    """A copy of the axis classes, to try an op's joins on and drop them if it is no column op."""
    from tilefoundry.placer.loop_axes import Axes

    trial = Axes()
    trial.parent, trial.closed, trial.extent = dict(axes.parent), set(axes.closed), dict(axes.extent)
    return trial


def _column_part(gemvs: list, glue: list, names, resolve) -> tuple:
    """(the calls of ``glue`` that work per output column of the GEMVs, each
    value's column axis by name, each parameter's): an op joins where each of its
    operands is a GEMV output, a value of the part, a parameter or a value of
    parameters alone, the GEMV's column axis carries through it (loop_axes' axis
    classes: no op reads across it) onto an axis of its result, and its result
    holds at most ``MAX_PER_COLUMN`` values per column."""
    import math

    from tilefoundry.ir.expr import Call
    from tilefoundry.placer.loop_axes import Axes, _join_call

    state = {"axes": Axes()}

    def key(node, axis):
        found = (names.of(node), axis)
        state["axes"].extent[found] = tuple(node.type.shape)[axis]
        state["axes"].find(found)
        return found

    column = {id(g): key(g, len(g.type.shape) - 1) for g in gemvs}
    cheap, part = _param_only(glue), []
    for call in glue:
        if id(call) in cheap:
            _join_call(state["axes"], key, call)
            continue
        if not hasattr(call.type, "shape"):  # a tuple (a split's parts): no column of its own
            continue
        sources = [resolve(a) for a in call.args]
        if any(isinstance(s, Call) and id(s) not in column and id(s) not in cheap for s in sources):
            continue
        read = [column[id(s)] for s in sources if id(s) in column]
        if not read:
            continue
        kept, state["axes"] = state["axes"], _copied(state["axes"])
        _join_call(state["axes"], key, call)
        roots = {state["axes"].find(k) for k in read}
        root = next(iter(roots))
        at = [a for a in range(len(call.type.shape)) if state["axes"].find(key(call, a)) == root]
        extent = kept.extent[read[0]]
        if len(roots) > 1 or root in state["axes"].closed or not at or \
                math.prod(call.type.shape) > MAX_PER_COLUMN * extent:
            state["axes"] = kept
            continue
        column[id(call)] = key(call, at[0])
        part.append(call)
    axes = state["axes"]
    roots = {axes.find(column[id(c)]) for c in part}
    split = {name: axis for (name, axis) in axes.parent if axes.find((name, axis)) in roots}
    return part, split


def cut_columns(before: list, members: list, names, resolve) -> list:
    """A level's glue ``members`` with its column part cut off as a member of its
    own (kind "columns", its (name, axis) pairs in place of an expert core), run
    before the rest, where the GEMV before it (the last of ``before``) leaves
    columns a part of ``_COLUMN_WORK`` works on and the rest is not empty."""
    if not before or before[-1][0] != "gemv" or not members or members[0][0] != "glue" or members[0][2] is not None:
        return members
    glue = members[0][1]
    part, split = _column_part(before[-1][1], glue, names, resolve)
    mine, cheap = {id(c) for c in part}, _param_only(glue)
    rest = [c for c in glue if id(c) not in mine and id(c) not in cheap]
    if not rest or not any(getattr(c.op, "name", None) in _COLUMN_WORK for c in part):
        return members
    part = _with_sources(part, glue, cheap, resolve)
    # the rest, with the values of parameters alone it reads and those the part does
    # not (a result among them): each computed where it is read, never crossing
    ours, wanted = {id(c) for c in part}, {id(c) for c in _with_sources(rest, glue, cheap, resolve)}
    rest = [c for c in glue if id(c) in wanted or (id(c) in cheap and id(c) not in ours)]
    return [("columns", part, tuple(sorted(split.items()))), ("glue", rest, None)] + members[1:]


def _with_sources(calls: list, glue: list, cheap: set, resolve) -> list:
    """``calls`` and the values of parameters alone they read (each computed where
    it is read, never crossing), in program order."""
    wanted = {id(c) for c in calls}
    for call in reversed(glue):
        if id(call) in wanted:
            wanted |= {id(resolve(a)) for a in call.args if id(resolve(a)) in cheap}
    return [c for c in glue if id(c) in wanted]


def column_epilogue_block(kernel, index: int, block: list, ctas: int, setting) -> list:
    """GEMV piece ``index - 1``'s ``block`` with its column part (glue piece
    ``index``) as its epilogue, as the zoo's placed Mamba-2 in-projection runs its
    conv step: the GEMV's outputs the part reads stay in smem over the column
    CTAs; each parameter it reads is staged in smem split alike on the axis the
    GEMV's columns carry to (the conv's weights and state over their channels),
    else whole; its ops run on each CTA's columns; each value it leaves is
    written to gmem split on its column axis."""
    from tilefoundry.placer.placed_program import _renamed

    gemv, glue = kernel.pieces[index - 1], kernel.pieces[index]
    axis_of = dict(glue.columns)
    read = {name for name, _, _, _ in glue.inputs if name in gemv.outputs}

    def layout(name, shape) -> str:
        axis = axis_of.get(name)
        dims = [column_layout(d, ctas, setting) if i == axis else str(d) for i, d in enumerate(shape)]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

    lines = smem_writes(block, read)
    renamed = {}
    for name, shape, _, _ in glue.inputs:
        if name not in read:
            lines.append(f'    {name}_e = tf.reshard({name}, {layout(name, shape)}, "smem")')
            renamed[name] = f"{name}_e"
    renamed.update({name: f"{name}_e" for name in glue.outputs})
    lines += [f"    {_renamed(targets, renamed)} = {_renamed(text, renamed)}" for targets, text in glue.lines]
    shapes = dict(glue.shapes)
    lines += [f'    {name} = tf.reshard({name}_e, {layout(name, shapes[name])}, "gmem")' for name in glue.outputs]
    return lines


def smem_writes(block: list, read: set) -> list:
    """A GEMV block's lines with its writes of the values an epilogue reads kept in
    smem, not gmem: the epilogue runs in the same kernel."""
    lines = []
    for line in block:
        if line.split(" = ", 1)[0].strip() in read and line.endswith(', "gmem")'):
            line = line[: -len('"gmem")')] + '"smem")'
        lines.append(line)
    return lines
