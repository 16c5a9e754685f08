"""One op of a sequence's glue as authoring-DSL lines (placer/sequence.py), with
the two rewrites that read less and compute the same values: RoPE of one
position reads one row of each table, an index_select of a few rows reads those
rows; and a small glue piece written whole with its inputs staged in smem."""
from __future__ import annotations

__all__ = ["MAX_SELECTED_ROWS", "op_lines", "staged_block", "staged_settings"]


def op_lines(call, names, elements) -> list:
    """The call as (assigned names, op text) lines: one, or, for a RoPE of one
    position, the position read as a scalar first (see ``_rope_rows``)."""
    from tilefoundry.placer.op_source import op_text

    refs = [names.of(a) for a in call.args]
    lines = []
    targets = ", ".join(elements[id(call)]) if id(call) in elements else names.of(call)
    name = getattr(call.op, "name", None)
    if name == "rope" and tuple(call.args[4].type.shape) == (1,):
        at = f"{names.of(call)}_at"
        lines.append((at, f"tf.reshape({refs[4]}, ())"))
        refs = _rope_rows(refs, at)
    if name == "index_select" and _few_rows(call):
        return _selected_rows(call, refs, targets)
    return lines + [(targets, op_text(call.op, refs))]


#: the most rows an index_select is written as one slice per row (a MoE's top-k)
MAX_SELECTED_ROWS = 16


def _few_rows(call) -> bool:
    index = call.args[1].type.shape
    return len(index) == 1 and isinstance(index[0], int) and index[0] <= MAX_SELECTED_ROWS


def _selected_rows(call, refs: list, target: str) -> list:
    """``index_select(x, ids, d)`` of a few rows as the rows themselves: each id
    read as a scalar, ``x`` sliced at it along ``d``, the slices joined along ``d``
    (the same values, in the same order); the kernel then reads the rows chosen,
    not the whole of ``x`` (the zoo's placed experts read each chosen expert as a
    run-time window the same way)."""
    x, ids = refs
    rank, axis = len(call.args[0].type.shape), call.op.dim % len(call.args[0].type.shape)
    lines, parts = [], []
    for j in range(call.args[1].type.shape[0]):
        at = f"{target}_at{j}"
        lines.append((at, f"tf.reshape({ids}[{j} : {j + 1}], ())"))
        index = ", ".join(f"{at} : {at} + 1" if i == axis else ":" for i in range(rank))
        parts.append(f"{x}[{index}]")
    return lines + [(target, f"tf.concat({', '.join(parts)}, axis={axis})")]


def _rope_rows(refs: list, at: str) -> list:
    """RoPE of one position reads one row of each table: the tables cut to that
    row and the position 0 within it are the same rotation (``tf.rope`` reads
    ``table[pos]``), and the kernel then reads two rows, not two whole tables,
    as the zoo's placed decode attention does (``cos_t[p : p + 1, :]``)."""
    q, k, cos, sin, _ = refs
    return [q, k, f"{cos}[{at} : {at} + 1, :]", f"{sin}[{at} : {at} + 1, :]", 'tf.zeros(Tensor[(1,), "i32"])']


def staged_settings(piece, ctas: int, budget) -> list:
    """("staged",): a glue piece whole in every one of ``ctas`` CTAs with its
    inputs read into smem, where every input is a value another piece made (a
    parameter is read where it is: a RoPE table at one row, never whole) and
    they fit a CTA's smem together; at one CTA and at the largest power of two
    within the level's units (every CTA repeating the work is how a person
    writes a router's softmax and top-k: the launch's latency is shared, no CTA
    reads more); never for an expert core (its stacks stay in gmem)."""
    import math

    from tilefoundry.placer.spaces import _bytes

    made = [(shape, dtype) for name, shape, dtype, _ in piece.inputs if _made(name)]
    if getattr(piece, "experts", None) is not None or not made or len(made) < len(piece.inputs):
        return []
    held = sum(_bytes(dtype) * math.prod(shape) for shape, dtype in made)
    widest = 1 << (budget.units.bit_length() - 1)
    fits = budget.smem_bytes is None or held <= budget.smem_bytes
    return [("staged",)] if fits and ctas in (1, widest) else []


def _made(name: str) -> bool:
    """Values other pieces make are named ``v<i>`` (``v<i>_<j>``); parameters keep theirs."""
    import re

    return re.fullmatch(r"v\d+(_\d+)?", name) is not None


def staged_block(piece, ctas: int, level: str) -> list:
    """A glue piece whole in every CTA, the values other pieces made staged: each
    read whole into smem, the ops as written over them, so a chain of small ops
    (a softmax, a top-k, their normalisation) pays no gmem round trip per op."""
    from tilefoundry.placer.placed_program import _renamed

    lines = [f'with Mesh(("{level}",), ({ctas},), ("r",)) as g:']
    renamed = {}
    for name, shape, _, _ in piece.inputs:
        if not _made(name):
            continue
        dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
        lines.append(f'    {name}_s = tf.reshard({name}, ({dims}), "smem")')
        renamed[name] = f"{name}_s"
    lines += [f"    {targets} = {_renamed(text, renamed)}" for targets, text in piece.lines]
    return lines
