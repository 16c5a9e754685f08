"""One op of a sequence's glue as authoring-DSL lines (placer/sequence.py), with
the two rewrites that read less and compute the same values: RoPE of one
position reads one row of each table, an index_select of a few rows reads those
rows; a small glue piece written whole with its inputs staged in smem; and the
glue pieces fused into a neighbouring kernel (the next one's prologue, the
previous GEMV's epilogue)."""
from __future__ import annotations

from tilefoundry.placer.sequence_glue import column_layout, smem_writes

__all__ = ["MAX_SELECTED_ROWS", "column_layout", "epilogue_block", "epilogue_fusable", "epilogue_outputs",
           "epilogue_smem", "fusable", "op_lines", "staged_block", "staged_settings"]


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


def fusable(kernel, index: int) -> bool:
    """Glue piece ``index`` can run as the next piece's prologue: the next is a
    GEMV or an attention, and every value the glue leaves in gmem is read by it
    alone (no later piece, not a result)."""
    pieces = kernel.pieces
    if pieces[index].kind != "glue" or index + 1 >= len(pieces) or pieces[index + 1].kind == "glue":
        return False
    outputs = set(pieces[index].outputs)
    later = {name for piece in pieces[index + 2:] for name, _, _, _ in piece.inputs}
    return not (outputs & later or outputs & set(kernel.results))


def epilogue_fusable(kernel, index: int) -> bool:
    """Glue piece ``index`` can run as the previous piece's epilogue: that piece is
    a GEMV whose outputs the glue reads, the glue is no expert core, those outputs
    no later piece reads and no result is (they stay in the kernel, never written
    to gmem), and its ops on them are elementwise over the GEMV's columns
    (``_elementwise_on``). What else it reads (parameters, values of earlier
    pieces: a residual, a gate's logit) is staged in smem (``epilogue_block``)."""
    pieces = kernel.pieces
    if index < 1 or pieces[index].kind != "glue" or pieces[index - 1].kind != "gemv":
        return False
    glue, gemv = pieces[index], pieces[index - 1]
    read = {name for name, _, _, _ in glue.inputs if name in gemv.outputs}
    if glue.experts is not None or not read:
        return False
    later = {name for piece in pieces[index + 1:] for name, _, _, _ in piece.inputs}
    split = read | _split_inputs(gemv, glue)
    # a GEMV's column part keeps its columns by construction (sequence_glue.cut_columns)
    return not (read & later or read & set(kernel.results)) and (bool(glue.columns) or _elementwise_on(glue, split))


def _split_inputs(gemv, glue) -> set:
    """The glue's other inputs an epilogue reads over the GEMV's column CTAs as its
    outputs lie: those of an output's shape that only elementwise ops read (a
    residual); a value a matmul or a reduce reads (a gate's row) is read whole."""
    shapes = _shapes(glue)
    found = set()
    for name, shape, _, _ in glue.inputs:
        if name in gemv.outputs or not any(tuple(shape) == (gemv.m, n) for _, _, n, _ in gemv.lines):
            continue
        readers = [targets for targets, text in glue.lines if name in _words(text)]
        if readers and all(shapes.get(targets) == tuple(shape) for targets in readers):
            found.add(name)
    return found


def _shapes(glue) -> dict:
    """The shape of each value the glue's ops read, and of each it leaves."""
    shapes = {source: tuple(shape) for _, args in glue.operands for source, shape in args}
    shapes.update(dict(glue.shapes))
    return shapes


def _words(text: str) -> set:
    import re

    return set(re.findall(r"\b[A-Za-z_]\w*\b", text))


def _elementwise_on(glue, split: set) -> bool:
    """Every op of the glue that reads (through others) a value in ``split`` makes
    a value of the shape of each such value it reads: elementwise over the GEMV's
    columns (a cast, an activation, a sum with a residual, a product by a value
    read whole), so each CTA's columns are all it needs. A reduce, a reshape or a
    matmul of them is not: its values would have to cross the CTAs, which an
    epilogue has no step for."""
    shapes = _shapes(glue)
    reached = set(split)
    for targets, text in glue.lines:
        reads = _words(text) & reached
        if not reads:
            continue
        if targets not in shapes or any(shapes.get(name) != shapes[targets] for name in reads):
            return False
        reached.add(targets)
    return True


def epilogue_smem(kernel, index: int, cols: int = 1) -> int:
    """The bytes glue piece ``index`` stages in smem as an epilogue beside the
    GEMV's outputs: everything else it reads, whole (a bound: a value over the
    columns is staged one CTA's share), but a column part's parameters split
    over the ``cols`` column CTAs (sequence_glue.column_epilogue_block)."""
    import math

    from tilefoundry.placer.spaces import _bytes

    host, split = set(kernel.pieces[index - 1].outputs), dict(kernel.pieces[index].columns)
    return sum(_bytes(dtype) * math.prod(shape) // (cols if name in split else 1)
               for name, shape, dtype, _ in kernel.pieces[index].inputs if name not in host)


def epilogue_outputs(kernel, index: int) -> tuple:
    """What GEMV piece ``index`` with glue piece ``index + 1`` as its epilogue
    leaves in gmem: its outputs the glue does not read, then the glue's."""
    glue = kernel.pieces[index + 1]
    read = {name for name, _, _, _ in glue.inputs}
    return tuple(n for n in kernel.pieces[index].outputs if n not in read) + glue.outputs


def _whole(shape) -> str:
    """A layout of ``shape`` split nowhere."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def epilogue_block(kernel, index: int, block: list, ctas: int, setting) -> list:
    """GEMV piece ``index - 1``'s ``block`` (over ``ctas`` CTAs at ``setting``)
    with glue piece ``index`` as its epilogue, as a kernel engineer writes a
    GEMV's epilogue: the outputs the glue reads stay in smem, split over the
    column CTAs as they were made; what else it reads is staged in smem, over
    the columns alike where only elementwise ops read it (a residual,
    ``_split_inputs``), else whole (a one-column gate's weights and row: every
    CTA computes that small matmul itself, as the hand-placed shared expert
    does); its ops run as
    written on each CTA's columns; each value it leaves is written to gmem split
    like the GEMV output of its shape (whole where it has no such shape)."""
    from tilefoundry.placer.placed_program import _renamed

    gemv, glue = kernel.pieces[index - 1], kernel.pieces[index]
    if glue.columns:  # each value on its own column axis: sequence_glue.py
        from tilefoundry.placer.sequence_glue import column_epilogue_block

        return column_epilogue_block(kernel, index, block, ctas, setting)
    read = {name for name, _, _, _ in glue.inputs if name in gemv.outputs}
    split = {(gemv.m, n): f"({gemv.m}, {column_layout(n, ctas, setting)})" for _, _, n, _ in gemv.lines}
    over = _split_inputs(gemv, glue)
    lines = smem_writes(block, read)
    renamed = {}
    for name, shape, _, _ in glue.inputs:
        if name not in read:  # over the columns as the GEMV's outputs (a residual), else whole
            layout = split[tuple(shape)] if name in over else _whole(shape)
            lines.append(f'    {name}_e = tf.reshard({name}, {layout}, "smem")')
            renamed[name] = f"{name}_e"
    renamed.update({name: f"{name}_e" for name in glue.outputs})
    lines += [f"    {_renamed(targets, renamed)} = {_renamed(text, renamed)}" for targets, text in glue.lines]
    shapes = dict(glue.shapes)
    for name in glue.outputs:
        layout = split.get(tuple(shapes[name]), _whole(shapes[name]))
        lines.append(f'    {name} = tf.reshard({name}_e, {layout}, "gmem")')
    return lines
