"""A sequence's glue piece (placer/sequence.py) staged in smem, as a person
writes a glue kernel: over its seed's split with every value in smem (each
CTA's share of the split inputs, the other inputs whole, the values its ops
make), written to gmem once at the end.

A glue piece in gmem waits a DRAM round trip for each dependent statement and
reads every intermediate back through L2; the zoo's placed Mamba-2 state update
(`Mamba2LayerPlaced.ssm`) stages its state update and gated norm in smem this
way. The staged twin of a seed is a point of the space beside the seed in gmem
(sequence_search.py), each priced by the objective; a twin whose inputs alone
are past a CTA's smem is left out, and one whose values are is refused by the
memory family and counted out (fewer, larger shares), so more CTAs fit.
"""
from __future__ import annotations

__all__ = ["STAGED", "glue_description", "glue_mesh", "is_staged", "staged_seed_block", "staged_seeds"]

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


def glue_mesh(level: str, ctas: int, split: int) -> str:
    """A glue piece's mesh over ``ctas`` CTAs: its split over ``p``, the rest replicas over ``r``."""
    if split == ctas:
        return f'with Mesh(("{level}",), ({ctas},), ("p",)) as g:'
    if split == 1:
        return f'with Mesh(("{level}",), ({ctas},), ("r",)) as g:'
    return f'with Mesh(("{level}",), ({split}, {ctas // split}), ("p", "r")) as g:'


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
        text = _renamed(text, renamed)
        for value, index in (c for c in complete if c[0] == targets):
            source, shape = operands[value][index]
            whole = renamed.get(source, source)
            lines.append(f'{pad}{whole}_w = tf.reshard({whole}, {_layout(shape)}, "smem")')
            text = _renamed(text, {whole: f"{whole}_w"})
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
