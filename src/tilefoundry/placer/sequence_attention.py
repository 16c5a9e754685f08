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

MLA's absorbed form (DeepSeek-V3) is the same core found by the same structure:
the scores are two products summed (the absorbed query against the latent cache,
the RoPE query against the RoPE-key cache, both ``(1, CTX, 1, D)`` caches read
through ``reshape`` to ``(1, CTX, D)``), scaled, masked and softmaxed, and the
weighted sum is over the latent cache itself; the query is ``(H, 1, D)``. It is
one KV head shared by H query rows, so its CTA mesh is ``query-row groups x
splits``: each CTA reads the same blocks once per group (one latent block serves
as both key and value) and keeps ``H / groups`` rows of online-softmax state.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Core", "core_block", "core_settings", "find_core", "head_extent"]

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
    #: further score products summed with the first (MLA's RoPE part): (query, its dtype, cache, D) each
    extra: tuple = ()
    #: MLA's layout: the query and the result ``(H, 1, D)``, one KV head (``heads == 1``, ``group == H``)
    latent: bool = False

    def products(self) -> tuple:
        """(query, its dtype, cache, D) of every score product, the first the value's partner."""
        return ((self.q, self.q_dtype, self.k, self.dim),) + self.extra


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


def _latent_cache(node, names, transposed: bool):
    """``(name, update operands)`` of an MLA cache ``(1, CTX, 1, D)`` read as
    ``[transpose(]cast(reshape(cache, (1, CTX, D)))[, (0, 2, 1))]`` (the cast optional)."""
    from tilefoundry.ir.expr import Var

    inner = []
    if transposed:
        if _name(node) != "transpose" or tuple(node.op.perm) != (0, 2, 1):
            return None
        inner, node = [node], node.args[0]
    if _name(node) == "cast":
        inner, node = inner + [node], node.args[0]
    if _name(node) != "reshape":
        return None
    cache = node.args[0]
    shape = tuple(cache.type.shape)
    if len(shape) != 4 or shape[0] != 1 or shape[2] != 1 or tuple(node.type.shape) != (1, shape[1], shape[3]):
        return None
    inner.append(node)
    if isinstance(cache, Var):
        return (cache.name, ()), inner
    if _name(cache) == "cache_update" and isinstance(cache.args[0], Var):
        return (names.of(cache), tuple(names.of(a) for a in cache.args)), inner + [cache]
    return None


def _products(node, resolve) -> list | None:
    """The score products under the score ops: one matmul, or two summed (MLA)."""
    if _name(node) == "matmul":
        return [node]
    if _name(node) == "binary" and node.op.kind.value == "add":
        found = [resolve(a) for a in node.args]
        if all(_name(f) == "matmul" for f in found):
            return found
    return None


def _latent_core(products, second, names) -> tuple | None:
    """(inner calls, Core fields) of MLA's absorbed form: every product a
    ``(H, 1, D)`` query against a latent-layout cache, the weighted sum over the
    first product's cache itself."""
    found, inner = [], []
    for product in products:
        read = _latent_cache(product.args[1], names, True)
        query = product.args[0].type.shape
        if read is None or len(query) != 3 or query[1] != 1:
            return None
        found.append((names.of(product.args[0]), product.args[0].type.dtype.name, read[0], query[2]))
        inner += read[1]
    value = _latent_cache(second.args[1], names, False)
    if value is None or value[0] != found[0][2]:
        return None
    heads = products[0].args[0].type.shape[0]
    if any(p.args[0].type.shape[0] != heads for p in products):
        return None
    if tuple(second.type.shape) != (heads, 1, found[0][3]):
        return None
    return inner + value[1], found


def find_core(group: list, names, resolve) -> tuple | None:
    """(the core's calls, Core) of a glue group holding one masked decode
    attention in the zoo's cache layout, or MLA's absorbed form, or None."""
    from tilefoundry.ir.expr import Call, Constant

    softmaxes = [c for c in group if _name(c) == "softmax"]
    rank = len(softmaxes[0].type.shape) if len(softmaxes) == 1 else 0
    if rank not in (3, 4) or softmaxes[0].op.axis % rank != rank - 1:
        return None
    soft = softmaxes[0]
    second = [c for c in group if _name(c) == "matmul" and resolve(c.args[0]) is soft]
    if len(second) != 1:
        return None
    chain, mask, node = [], None, soft.args[0]
    while isinstance(node, Call) and _products(node, resolve) is None:
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
    products = _products(node, resolve)
    if rank == 3:
        found = _found_latent(node, products, chain, mask, soft, second[0], group, names)
        inside = {id(c) for c in found[0]} if found else set()
        # a query the core itself makes (read back from its own cache) is no query from before it
        if found is None or any(id(resolve(p.args[0])) in inside for p in products):
            return None
        return found
    if len(products) != 1:
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
    from tilefoundry.placer.sequence_ops import op_lines

    mask_lines = tuple(line for c in mask_calls for line in op_lines(c, names, {}))
    core = Core(names.of(first.args[0]), first.args[0].type.dtype.name, k, v,
                names.of(mask) if mask is not None else "", mask_lines, _score_texts(chain, mask, names),
                names.of(second[0]),
                heads, group_rows, dim, ctx, _window(mask) if mask is not None else ())
    calls = [*k_inner, *v_inner, first, *chain, soft, second[0], *mask_calls]
    if q is soft:
        return None
    return calls, core


def _score_texts(chain, mask, names) -> tuple:
    """The score ops as op texts over ``scores`` and ``valid``, in order."""
    from tilefoundry.ir.expr import Constant
    from tilefoundry.placer.op_source import op_text

    texts = []
    for op_node in reversed(chain):
        refs = ["valid" if a is mask else ("scores" if not isinstance(a, Constant) else names.of(a))
                for a in op_node.args]
        texts.append(op_text(op_node.op, refs))
    return tuple(texts)


def _found_latent(summed, products, chain, mask, soft, second, group, names) -> tuple | None:
    """(the core's calls, Core) of MLA's absorbed form, or None."""
    from tilefoundry.placer.sequence_ops import op_lines

    latent = _latent_core(products, second, names)
    if latent is None:
        return None
    inner, found = latent
    heads = second.type.shape[0]
    ctx = soft.type.shape[-1]
    mask_calls = _closure(mask, group) if mask is not None else []
    if mask is not None and (mask_calls is None or tuple(mask.type.shape) != (ctx,)):
        return None
    if any(tuple(p.type.shape) != (heads, 1, ctx) for p in products):
        return None
    mask_lines = tuple(line for c in mask_calls for line in op_lines(c, names, {}))
    (q, q_dtype, cache, dim), extra = found[0], tuple(found[1:])
    core = Core(q, q_dtype, cache, cache, names.of(mask) if mask is not None else "", mask_lines,
                _score_texts(chain, mask, names), names.of(second), 1, heads, dim, ctx,
                _window(mask) if mask is not None else (), extra, True)
    summed_call = [summed] if summed is not products[0] else []
    calls = [*inner, *products, *summed_call, *chain, soft, second, *mask_calls]
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


def head_extent(core: Core) -> int:
    """What the mesh's first axis splits: the KV heads, or, over one KV head
    (MLA), its query rows."""
    return core.group if core.heads == 1 and core.latent else core.heads


def core_settings(core: Core, ctas: int, budget) -> list:
    """(heads split, KV block) pairs: heads divides H (MLA: the query rows), the
    splits ``C / heads`` and the block tile the cache, the per-CTA state and blocks
    fit smem."""
    found = []
    if ctas < 2:
        return found
    extent = head_extent(core)
    keyed = sum(dim for *_, dim in core.products())
    shared = {cache[0] for _, _, cache, _ in core.products()}
    valued = 0 if core.v[0] in shared else core.dim
    for heads in (d for d in range(1, min(extent, ctas) + 1) if extent % d == 0 and ctas % d == 0):
        splits = ctas // heads
        for block in BLOCKS:
            if core.ctx % (block * splits):
                continue
            per = core.heads // heads if extent == core.heads else 1
            rows = per * core.group if extent == core.heads else core.group // heads
            # q, the running state, and the key and value blocks with their f32 casts
            held = 4 * rows * (keyed + core.dim + 2) + 6 * per * block * (keyed + valued)
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
    caches = [cache for _, _, cache, _ in core.products()] + [core.v]
    read = {name for name, _ in caches} | {update[0] for _, update in caches if update}
    dtypes = {dtype for name, _, dtype, _ in piece.inputs if name in read}
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


def _cache_lines(core: Core, piece) -> list:
    """Each cache written in the core (its new rows through gmem), once."""
    lines, done = [], set()
    for name, update in [cache for _, _, cache, _ in core.products()] + [core.v]:
        if update and name not in done:
            cache, cur, count, new = update
            new_shape = next(shape for n_, shape, _, _ in piece.inputs if n_ == new)
            shape = ", ".join(str(x) for x in new_shape)
            lines.append(f'    {new}_in = tf.reshard({new}, ({shape}), "gmem")')
            lines.append(f"    {name} = tf.cache_update({cache}, {cur}, {count}, {new}_in)")
        done.add(name)
    return lines


def _query_line(core: Core, index: int, query: str, dtype: str, dim: int, hh: str, mma: str) -> str:
    """Query ``index`` in smem as ``(1, 1, H, G, D)``: the zoo's ``(1, H, G, D)``,
    or MLA's ``(H, 1, D)`` (one KV head, its H query rows split over the head groups)."""
    h, g = core.heads, core.group
    if core.latent:
        q = f'tf.reshard({query}, ({hh}, 1, {dim}), "smem")'
    else:
        q = f'tf.reshard({query}, (1, {hh}, {g}, {dim}), "smem")'
    q = q if dtype == mma else f'tf.cast({q}, "{mma}")'
    return f"    q_s{index or ''} = tf.reshape({q}, (1, 1, {h}, {g}, {dim}))"


def core_block(piece, ctas: int, setting, level: str) -> list:
    """The flash-decoding kernel of a core piece (setting: heads split, block)."""
    core = piece.core
    heads, block = setting
    splits = ctas // heads
    h, g, d = core.heads, core.group, core.dim
    head_axis = "qg" if head_extent(core) != h else "kvh"
    axes = [(name, size) for name, size in ((head_axis, heads), ("s", splits)) if size > 1]
    mesh = (f'with Mesh(("{level}",), ({", ".join(str(z) for _, z in axes)},), '
            f'({", ".join(chr(34) + a + chr(34) for a, _ in axes)},)) as a:')
    # the split of the heads: the KV heads' axis, or MLA's query rows
    hh, gg = (_ax(h, "kvh", heads), str(g)) if head_axis == "kvh" else (str(h), _ax(g, "qg", heads))
    ss = _ax(splits, "s", splits)
    lines = [mesh]
    staged, renamed = _staged_mask_inputs(core, piece)
    lines += staged
    lines += [f"    {targets} = {_in_smem(text, renamed)}" for targets, text in core.mask_lines]
    lines += _cache_lines(core, piece)
    mma = _mma(core, piece)
    products = core.products()
    for index, (query, dtype, _, dim) in enumerate(products):
        lines.append(_query_line(core, index, query, dtype, dim, gg if core.latent else hh, mma))
    state = f"(1, {ss}, {hh}, {gg}, 1)"
    lines += [
        f'    run_max = tf.full_like(tf.zeros(Tensor[{state}, "f32", "smem"]), {NEG_BIG})',
        f'    run_sum = tf.zeros(Tensor[{state}, "f32", "smem"])',
        f'    run_acc = tf.zeros(Tensor[(1, {ss}, {hh}, {gg}, {d}), "f32", "smem"])',
    ]
    rows = _walk_lines(core, block * splits)
    lines += [f"    # window {rows} holds {splits} blocks of {block} cache rows: block s is split s's"]
    lines += _loop_lines(core, block * splits)
    blocks = {}
    labels = [f"k_blk{i or ''}" for i in range(len(products))] + ["v_blk"]
    for (name, dim), label in zip([(cache[0], dim) for _, _, cache, dim in products] + [(core.v[0], d)], labels):
        if name in blocks:
            continue  # MLA: the latent block is both a key and the value
        blocks[name] = label
        staged = (f"tf.reshard(tf.reshape({name}[:, {rows}, :, :], (1, {splits}, {block}, {h}, {dim})), "
                  f'(1, {ss}, {block}, {hh}, {dim}), "smem")')
        lines.append(f"        {label} = " + (staged if mma == "bf16" else f'tf.cast({staged}, "f32")'))
    # bf16 operands: the blocks as read, each product accumulated in f32 (out_dtype)
    wide = ', out_dtype="f32"' if mma == "bf16" else ""
    probs = 'tf.cast(probs, "bf16")' if mma == "bf16" else "probs"
    if core.mask:
        lines.append(f"        valid = tf.reshard(tf.reshape({core.mask}[{rows}], (1, {splits}, 1, 1, {block})), "
                     f'(1, {ss}, 1, 1, {block}), "smem")')
    summed = " + ".join(f"tf.matmul(q_s{i or ''}, tf.transpose({blocks[cache[0]]}, (0, 1, 3, 4, 2)){wide})"
                        for i, (_, _, cache, _) in enumerate(products))
    lines.append(f"        scores = {summed}")
    lines += [f"        scores = {text}" for text in core.score_ops]
    lines += [
        "        new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))",
        "        rescale = tf.exp(run_max - new_max)",
        "        probs = tf.exp(scores - new_max)",
        "        run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)",
        f"        run_acc = run_acc * rescale + tf.matmul({probs}, tf.transpose({blocks[core.v[0]]}, (0, 1, 3, 2, 4)){wide})",
        "        run_max = new_max",
        "    # the splits combined: each sum over the split axis is a Partial over `s`",
        f'    peak = tf.reduce(tf.reshard(run_max, (1, {splits}, {hh}, {gg}, 1), "smem"), (1,), True, ReduceKind.MAX)',
        "    weight = tf.exp(run_max - peak)",
        f'    num = tf.reshard(tf.reduce(run_acc * weight, (1,), False, ReduceKind.SUM), (1, {hh}, {gg}, {d}), "smem")',
        f'    den = tf.reshard(tf.reduce(run_sum * weight, (1,), False, ReduceKind.SUM), (1, {hh}, {gg}, 1), "smem")',
    ]
    if core.latent:
        lines.append(f'    {core.out} = tf.reshard(tf.reshape(num / den, ({g}, 1, {d})), ({gg}, 1, {d}), "gmem")')
    else:
        lines.append(f'    {core.out} = tf.reshard(num / den, (1, {hh}, {g}, {d}), "gmem")')
    return lines
