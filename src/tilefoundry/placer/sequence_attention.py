"""A masked decode attention inside a sequence (placer/sequence.py), placed as
split-K flash decoding rather than as data-parallel glue.

The zoo writes a layer's attention over KV caches laid out ``(1, CTX, H, D)``:
the new key and value written with ``cache_update``, ``q (1, H, G, D)`` (G query
rows per KV head), ``softmax(where(valid, q @ k^T * scale, MASKED))`` with
``valid = arange(CTX) <= pos`` (rows past the position are not the sequence's
yet), then ``@ v``. Found by structure inside a glue piece, that core becomes a
kernel of its own, as a person places it (the zoo's ``decode_attention``): a CTA
mesh ``heads x splits``; CTA ``(h, s)`` writes its share of the new rows, owns
``H / heads`` KV heads and, of every window of ``block x splits`` cache rows,
the ``s``-th ``block`` rows, runs its own online softmax with the score ops and
the mask applied to every block, and the splits are combined by the global
maximum and two sums over the split axis (Partials a reshard completes).
What the glue did before the core (RoPE, reshapes) stays glue before it; what
reads the core's output after it (the merge of the heads) glue after it.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Core", "core_block", "core_settings", "find_core"]

#: the running maximum a split starts from: below every score a finite program
#: makes; a masked score at or below it adds exp(MASKED - max) = 0
NEG_BIG = -1.0e30
#: the KV block sizes considered (one MMA k-step of 16 .. 256 cache rows)
BLOCKS = (16, 32, 64, 128, 256)


@dataclass(frozen=True)
class Core:
    """What the flash-decoding writer needs, by source name.

    Attributes:
        q: the query ``(1, H, G, D)`` and its dtype.
        k, v: each cache as ``(value name, cache_update operands or ())``: a
            cache written in the core is ``(result name, (cache, cur_pos, s, new))``.
        mask: the name of the ``(CTX,)`` validity vector, or "" (no mask).
        mask_lines: the lines (of parameters only) that make it.
        score_ops: op texts over ``scores`` (and ``valid``), in order.
        out: the name of the ``(1, H, G, D)`` result.
    """

    q: str
    q_dtype: str
    k: tuple
    v: tuple
    mask: str
    mask_lines: tuple
    score_ops: tuple
    out: str
    heads: int
    group: int
    dim: int
    ctx: int
    window: tuple = ()  # (position name, W, its dtype): the mask is the sliding window (pos - W, pos]


def _name(node) -> str:
    return getattr(node.op, "name", None) if hasattr(node, "op") else None


def _through_cast(node):
    return node.args[0] if _name(node) == "cast" else node


def _cache(node, perm, names):
    """``(name, update operands)`` of a cache read through ``transpose(cast(.), perm)``."""
    from tilefoundry.ir.expr import Var

    if _name(node) != "transpose" or tuple(node.op.perm) != perm:
        return None
    cache = _through_cast(node.args[0])
    if len(cache.type.shape) != 4 or cache.type.shape[0] != 1:
        return None
    if isinstance(cache, Var):
        return (cache.name, ()), [node] + ([node.args[0]] if node.args[0] is not cache else [])
    if _name(cache) == "cache_update" and isinstance(cache.args[0], Var):
        operands = tuple(names.of(a) for a in cache.args)
        inner = [node, cache] + ([node.args[0]] if node.args[0] is not cache else [])
        return (names.of(cache), operands), inner
    return None


def find_core(group: list, names, resolve) -> tuple | None:
    """(the core's calls, Core) of a glue group holding one masked decode
    attention in the zoo's cache layout, or None."""
    from tilefoundry.ir.expr import Call, Constant
    from tilefoundry.placer.op_source import op_text

    softmaxes = [c for c in group if _name(c) == "softmax"]
    if len(softmaxes) != 1 or len(softmaxes[0].type.shape) != 4 or softmaxes[0].op.axis % 4 != 3:
        return None
    soft = softmaxes[0]
    second = [c for c in group if _name(c) == "matmul" and resolve(c.args[0]) is soft]
    if len(second) != 1:
        return None
    chain, mask, node = [], None, soft.args[0]
    while isinstance(node, Call) and _name(node) != "matmul":
        if _name(node) == "where":
            cond, kept, other = node.args
            if not isinstance(other, Constant) or mask not in (None, cond):
                return None
            mask, chain, node = cond, chain + [node], kept
            continue
        live = [a for a in node.args if not isinstance(a, Constant)]
        if len(live) != 1:
            return None
        chain, node = chain + [node], live[0]
    if not isinstance(node, Call):
        return None
    first = node
    q = resolve(first.args[0])
    found_k = _cache(first.args[1], (0, 2, 3, 1), names)
    found_v = _cache(second[0].args[1], (0, 2, 1, 3), names)
    if found_k is None or found_v is None or len(first.args[0].type.shape) != 4:
        return None
    (k, k_inner), (v, v_inner) = found_k, found_v
    _, heads, group_rows, dim = first.args[0].type.shape
    ctx = first.args[1].type.shape[-1]
    if tuple(second[0].type.shape) != (1, heads, group_rows, dim):
        return None
    mask_calls = _closure(mask, group) if mask is not None else []
    if mask is not None and (mask_calls is None or tuple(mask.type.shape) != (ctx,)):
        return None
    texts = []
    for op_node in reversed(chain):
        refs = ["valid" if a is mask else ("scores" if not isinstance(a, Constant) else names.of(a))
                for a in op_node.args]
        texts.append(op_text(op_node.op, refs))
    from tilefoundry.placer.sequence_ops import op_lines

    mask_lines = tuple(line for c in mask_calls for line in op_lines(c, names, {}))
    core = Core(names.of(first.args[0]), first.args[0].type.dtype.name, k, v,
                names.of(mask) if mask is not None else "", mask_lines, tuple(texts), names.of(second[0]),
                heads, group_rows, dim, ctx, _window(mask) if mask is not None else ())
    calls = [*k_inner, *v_inner, first, *chain, soft, second[0], *mask_calls]
    if q is soft:
        return None
    return calls, core


def _window(mask) -> tuple:
    """(position name, W, its dtype) when ``mask`` over the cache rows is the causal sliding
    window ``rows <= pos and rows > pos - W`` (either order; ``>= pos - (W - 1)``
    alike; ``rows`` an ``arange`` from 0 by 1, ``pos - W`` written with
    ``full_like``), else (): rows past it are masked, so a kernel need visit only
    the windows of cache rows it touches, as the zoo's placed Phi-3 does."""
    if _name(mask) != "binary" or mask.op.kind.value != "and":
        return ()
    bounds = [_bound(arg) for arg in mask.args]
    his = [b for b in bounds if b and b[0] == "hi" and b[2] == 0]
    los = [b for b in bounds if b and b[0] == "lo"]
    if len(his) != 1 or len(los) != 1 or his[0][1] is not los[0][1] or 1 - los[0][2] < 1:
        return ()
    return his[0][1].name, 1 - los[0][2], his[0][1].type.dtype.name


def _bound(node) -> tuple:
    """("hi" | "lo", position, offset): ``rows <= pos + offset`` ("hi") or
    ``rows >= pos + offset`` ("lo") for a compare of ``arange`` rows, else ()."""
    from tilefoundry.ir.expr import Var

    if _name(node) != "binary" or node.op.kind.value not in ("le", "lt", "gt", "ge"):
        return ()
    rows, edge = node.args
    if _name(rows) != "arange" or rows.op.start != 0 or rows.op.step != 1:
        return ()
    offset = 0
    if _name(edge) == "binary" and edge.op.kind.value in ("sub", "add") and _name(edge.args[1]) == "full_like":
        value = edge.args[1].op.value
        if not float(value).is_integer():
            return ()
        offset = int(value) * (-1 if edge.op.kind.value == "sub" else 1)
        edge = edge.args[0]
    if not isinstance(edge, Var) or tuple(edge.type.shape) != (1,):
        return ()
    kind = node.op.kind.value
    shift = {"le": 0, "lt": -1, "gt": 1, "ge": 0}[kind]
    return ("hi" if kind in ("le", "lt") else "lo"), edge, offset + shift


def _closure(node, group) -> list | None:
    """The calls that make ``node`` from parameters and literals only, operands
    first; None when it reads another made value."""
    from tilefoundry.ir.expr import Call, Constant, Var

    found, seen = [], set()

    def visit(n) -> bool:
        if isinstance(n, (Var, Constant)):
            return True
        if not isinstance(n, Call):
            return False
        if id(n) in seen:
            return True
        seen.add(id(n))
        if not all(visit(a) for a in n.args):
            return False
        found.append(n)
        return True

    return found if visit(node) else None


def core_settings(core: Core, ctas: int, budget) -> list:
    """(heads split, KV block) pairs: heads divides H, the splits ``C / heads``
    and the block tile the cache, the per-CTA state and blocks fit smem."""
    found = []
    if ctas < 2:
        return found
    for heads in (d for d in range(1, core.heads + 1) if core.heads % d == 0 and ctas % d == 0):
        splits = ctas // heads
        for block in BLOCKS:
            if core.ctx % (block * splits):
                continue
            per = core.heads // heads
            # q, the running state, and a k and a v block with their f32 casts
            held = 4 * per * core.group * (2 * core.dim + 2) + 2 * 6 * per * block * core.dim
            if budget.smem_bytes is None or held <= budget.smem_bytes:
                found.append((heads, block))
    return found


def _ax(extent, axis: str, size: int) -> str:
    return f"{extent} @ a.{axis}" if size > 1 else str(extent)


def _mma(core: Core, piece) -> str:
    """The products' operand dtype: over bf16 caches, bf16 operands with f32
    accumulation, as a person writes flash decoding (the blocks go to the tensor
    cores as read, with no f32 copy in smem; the query is rounded to bf16 once,
    the probabilities each trip; the check holds the answer to the logical
    kernel at a bound that carries those roundings); else f32, as written."""
    dtypes = {dtype for name, _, dtype, _ in piece.inputs if name in (core.k[0], core.v[0])}
    dtypes |= {dtype for name, _, dtype, _ in piece.inputs if core.k[1] and name == core.k[1][0]}
    dtypes |= {dtype for name, _, dtype, _ in piece.inputs if core.v[1] and name == core.v[1][0]}
    return "bf16" if dtypes == {"bf16"} else "f32"


def _visited(core: Core, step: int) -> int:
    """The windows of ``step`` rows a step visits: every one, or, under a sliding
    window of W rows, the ceil((W - 1) / step) + 1 it can touch."""
    every = core.ctx // step
    if not core.window:
        return every
    return min(every, -(-(core.window[1] - 1) // step) + 1)


def _walk_lines(core: Core, step: int) -> str:
    """How a trip's window of rows is written: the tile index, or a run-time window."""
    return "kk" if _visited(core, step) == core.ctx // step else f"at : at + {step}"


def _staged_mask_inputs(core: Core, piece) -> tuple:
    """(lines, name -> staged name): the parameters the mask is computed from (the
    position), read once into smem, so that the mask and the window's start are
    computed in smem: a chain of small gmem values costs a DRAM round trip per
    dependent statement (per wave) in the estimate, as a kernel that re-reads
    them from global memory would."""
    import re

    used = {word for _, text in core.mask_lines for word in re.findall(r"\b[A-Za-z_]\w*\b", text)}
    lines, renamed = [], {}
    for name, shape, _, _ in piece.inputs:
        if name in used and name not in {t for t, _ in core.mask_lines}:
            dims = ", ".join(str(x) for x in shape) + ("," if len(shape) == 1 else "")
            lines.append(f'    {name}_s = tf.reshard({name}, ({dims}), "smem")')
            renamed[name] = f"{name}_s"
    return lines, renamed


def _in_smem(text: str, renamed: dict) -> str:
    """A mask line over the staged inputs, a value it creates (an ``arange``) made in smem."""
    import re

    from tilefoundry.placer.placed_program import _renamed

    return re.sub(r'Tensor\[(\([^\]]*\)), "(\w+)"\]', r'Tensor[\1, "\2", "smem"]', _renamed(text, renamed))


def _loop_lines(core: Core, step: int) -> list:
    """The loop over the windows: every window (``tile``), or, under a sliding
    window, only the windows it touches from a run-time first one (the last
    window holding the position, back ``visited - 1`` windows, from 0 at the
    latest), as the zoo's placed Phi-3 walks them."""
    visited = _visited(core, step)
    if visited == core.ctx // step:
        return [f"    for kk in tile({core.ctx}, {step}):"]
    pos = f"{core.window[0]}_s"  # staged in smem with the mask's inputs
    arange = f'Tensor[({visited},), "{core.window[2]}", "smem"]'
    return [f"    win_step = tf.full_like({pos}, {step})",
            f"    win_first = tf.reshape(tf.maximum({pos} // win_step - tf.full_like({pos}, {visited - 1}), "
            f"tf.full_like({pos}, 0)) * win_step, ())",
            f"    win_offsets = tf.arange({arange}) * tf.reshape(win_step, ())",
            f"    for i in range({visited}):",
            "        at = win_first + tf.reshape(win_offsets[i : i + 1], ())"]


def core_block(piece, ctas: int, setting, level: str) -> list:
    """The flash-decoding kernel of a core piece (setting: heads split, block)."""
    core = piece.core
    heads, block = setting
    splits = ctas // heads
    h, g, d, n = core.heads, core.group, core.dim, core.ctx
    axes = [(name, size) for name, size in (("kvh", heads), ("s", splits)) if size > 1]
    mesh = (f'with Mesh(("{level}",), ({", ".join(str(z) for _, z in axes)},), '
            f'({", ".join(chr(34) + a + chr(34) for a, _ in axes)},)) as a:')
    hh, ss = _ax(h, "kvh", heads), _ax(splits, "s", splits)
    lines = [mesh]
    staged, renamed = _staged_mask_inputs(core, piece)
    lines += staged
    lines += [f"    {targets} = {_in_smem(text, renamed)}" for targets, text in core.mask_lines]
    caches = []
    for (name, update), role in ((core.k, "k"), (core.v, "v")):
        if update:
            cache, cur, count, new = update
            new_shape = next(shape for n_, shape, _, _ in piece.inputs if n_ == new)
            shape = ", ".join(str(x) for x in new_shape)
            lines.append(f'    {new}_in = tf.reshard({new}, ({shape}), "gmem")')
            lines.append(f"    {name} = tf.cache_update({cache}, {cur}, {count}, {new}_in)")
        caches.append(name)
    mma = _mma(core, piece)
    q = f'tf.reshard({core.q}, (1, {hh}, {g}, {d}), "smem")'
    q = q if core.q_dtype == mma else f'tf.cast({q}, "{mma}")'
    state = f"(1, {ss}, {hh}, {g}, 1)"
    lines += [
        f"    q_s = tf.reshape({q}, (1, 1, {h}, {g}, {d}))",
        f'    run_max = tf.full_like(tf.zeros(Tensor[{state}, "f32", "smem"]), {NEG_BIG})',
        f'    run_sum = tf.zeros(Tensor[{state}, "f32", "smem"])',
        f'    run_acc = tf.zeros(Tensor[(1, {ss}, {hh}, {g}, {d}), "f32", "smem"])',
    ]
    rows = _walk_lines(core, block * splits)
    lines += [f"    # window {rows} holds {splits} blocks of {block} cache rows: block s is split s's"]
    lines += _loop_lines(core, block * splits)
    for name, label in zip(caches, ("k_blk", "v_blk")):
        staged = (f"tf.reshard(tf.reshape({name}[:, {rows}, :, :], (1, {splits}, {block}, {h}, {d})), "
                  f'(1, {ss}, {block}, {hh}, {d}), "smem")')
        lines.append(f"        {label} = " + (staged if mma == "bf16" else f'tf.cast({staged}, "f32")'))
    # bf16 operands: the blocks as read, each product accumulated in f32 (out_dtype)
    wide = ', out_dtype="f32"' if mma == "bf16" else ""
    probs = 'tf.cast(probs, "bf16")' if mma == "bf16" else "probs"
    if core.mask:
        lines.append(f"        valid = tf.reshard(tf.reshape({core.mask}[{rows}], (1, {splits}, 1, 1, {block})), "
                     f'(1, {ss}, 1, 1, {block}), "smem")')
    lines.append(f"        scores = tf.matmul(q_s, tf.transpose(k_blk, (0, 1, 3, 4, 2)){wide})")
    lines += [f"        scores = {text}" for text in core.score_ops]
    lines += [
        "        new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))",
        "        rescale = tf.exp(run_max - new_max)",
        "        probs = tf.exp(scores - new_max)",
        "        run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)",
        f"        run_acc = run_acc * rescale + tf.matmul({probs}, tf.transpose(v_blk, (0, 1, 3, 2, 4)){wide})",
        "        run_max = new_max",
        "    # the splits combined: each sum over the split axis is a Partial over `s`",
        f'    peak = tf.reduce(tf.reshard(run_max, (1, {splits}, {hh}, {g}, 1), "smem"), (1,), True, ReduceKind.MAX)',
        "    weight = tf.exp(run_max - peak)",
        f'    num = tf.reshard(tf.reduce(run_acc * weight, (1,), False, ReduceKind.SUM), (1, {hh}, {g}, {d}), "smem")',
        f'    den = tf.reshard(tf.reduce(run_sum * weight, (1,), False, ReduceKind.SUM), (1, {hh}, {g}, 1), "smem")',
        f'    {core.out} = tf.reshard(num / den, (1, {hh}, {g}, {d}), "gmem")',
    ]
    return lines
