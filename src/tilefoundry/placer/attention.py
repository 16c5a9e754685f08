"""Decode attention: read off the typed program, placed as flash decoding.

The logical kernel is attention as a person writes it for one new token per
sequence: ``softmax(q @ k^T * scale) @ v`` over a KV cache, with the heads as
the leading batch axis: ``q (H, G, D)`` (G query rows per KV head: grouped-query
attention), ``k, v (H, CTX, D)``. It is recognised by structure: two matmuls,
the first of ``q`` by the transposed ``k`` (casts allowed), elementwise ops with
literals on the scores (the scale), a softmax over the last axis, the second
matmul of the probabilities by ``v``, casts after.

The placement is split-K flash decoding: a CTA mesh ``heads x splits``; CTA
``(h, s)`` owns ``H / heads`` KV heads and, of every window of ``block x
splits`` cache rows, the ``s``-th ``block`` rows, runs its own online softmax
(running max, sum and weighted values in smem), and the splits' partials are
combined by sums over the split axis, each a Partial over ``s`` that a reshard
completes. Where a head has many query rows (a prefill: G of 32 or more), a
third mesh axis ``q`` splits them, each CTA keeping 16 rows or more and reading
the cache for its own rows (a decode step's few rows stay whole: splitting them
would read the cache again for nothing). The space — heads dividing H, row
blocks dividing G, splits and block dividing CTX — is a structured enumeration.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AttentionChoice", "attention_points", "attention_text", "cache_blocks", "empty_space_reason",
           "read_attention"]

#: the block sizes considered: at least one MMA k-step (16), at most 256 rows
BLOCKS = (16, 32, 64, 128, 256)
#: the starting running maximum: below every score a finite program makes
NEG_BIG = -1.0e30


@dataclass(frozen=True, order=True)
class AttentionChoice:
    """Flash decoding over ``heads x splits`` CTAs, ``block`` cache rows per trip;
    ``mma`` the products' operand dtype: "f32" (the blocks cast, as the logical
    kernel writes it) or "bf16" (a bf16 cache read as it is, the query and the
    probabilities rounded to bf16, both products accumulated in f32)."""

    heads: int
    splits: int
    block: int
    mma: str = "f32"
    rows: int = 1  # CTAs over each head's query rows (a prefill's; a decode step has a few)

    @property
    def ctas(self) -> int:
        return self.heads * self.splits * self.rows

    def describe(self) -> str:
        mma = ", bf16 MMA operands with f32 accumulation" if self.mma == "bf16" else ""
        rows = f" x {self.rows} query-row blocks" if self.rows > 1 else ""
        return (f"KV heads over {self.heads} CTA{'s' if self.heads != 1 else ''}{rows} x {self.splits} "
                f"sequence split{'s' if self.splits != 1 else ''}, KV block {self.block}{mma}")


@dataclass(frozen=True)
class AttentionShape:
    """What the writer needs: names, extents, dtypes, the score ops."""

    q: str
    k: str
    v: str
    heads: int
    group: int
    dim: int
    ctx: int
    score_ops: tuple  # op texts over the name "scores", in order
    out_dtype: str
    q_dtype: str = "f32"
    cache_dtype: str = "f32"


def _through_casts(node):
    from tilefoundry.ir.expr import Call

    while isinstance(node, Call) and node.op.name == "cast":
        node = node.args[0]
    return node


def read_attention(function, params, calls):
    """The AttentionShape of a decode-attention kernel, or None when the body is
    not one (the other kinds are tried)."""
    from tilefoundry.ir.expr import Call, Constant, Var
    from tilefoundry.placer.op_source import op_text

    names = [getattr(c.op, "name", None) for c in calls]
    if names.count("matmul") != 2 or names.count("softmax") != 1:
        return None
    out = _through_casts(function.body)
    if not (isinstance(out, Call) and out.op.name == "matmul"):
        return None
    probs, v = out.args[0], _through_casts(out.args[1])
    soft = _through_casts(probs)
    if not (isinstance(soft, Call) and soft.op.name == "softmax" and isinstance(v, Var)):
        return None
    score_ops, node = [], soft.args[0]
    while isinstance(node, Call) and node.op.name != "matmul":
        operands = [a for a in node.args if not isinstance(a, Constant)]
        if len(operands) != 1 or len(node.args) > 2:
            return None
        score_ops.append(node)
        node = operands[0]
    if not isinstance(node, Call):
        return None
    q, kt = _through_casts(node.args[0]), node.args[1]
    if not (isinstance(kt, Call) and kt.op.name == "transpose" and tuple(kt.op.perm) == (0, 2, 1)):
        return None
    k = _through_casts(kt.args[0])
    if not all(isinstance(x, Var) and len(x.type.shape) == 3 for x in (q, k, v)):
        return None
    heads, group, dim = q.type.shape
    if tuple(k.type.shape) != tuple(v.type.shape) or k.type.shape[0] != heads or k.type.shape[2] != dim:
        return None
    if soft.op.axis % 3 != 2:
        return None
    texts = []
    for op_node in reversed(score_ops):
        refs = ["scores" if not isinstance(a, Constant) else None for a in op_node.args]
        from tilefoundry.render.values import format_value

        refs = [r if r is not None else format_value(a.value) for r, a in zip(refs, op_node.args)]
        texts.append(op_text(op_node.op, refs))
    cache = k.type.dtype.name if k.type.dtype == v.type.dtype else "mixed"
    return AttentionShape(q.name, k.name, v.name, heads, group, dim, k.type.shape[1], tuple(texts),
                          function.body.type.dtype.name, q.type.dtype.name, cache)


def cache_blocks(ctx: int) -> tuple:
    """The KV block sizes of a cache of ``ctx`` rows: each of BLOCKS that divides
    it, or, where none does (a cache of 1000 rows), its own largest divisors up to
    the largest block: a trip reads whole blocks, and the program has no tail mask."""
    from tilefoundry.placer.spaces import _divisors

    powers = tuple(block for block in BLOCKS if ctx % block == 0)
    if powers:
        return powers
    own = [d for d in _divisors(ctx) if 1 < d <= BLOCKS[-1]]
    return tuple(own[-len(BLOCKS):])


def attention_points(shape: AttentionShape, budget) -> list[AttentionChoice]:
    """Every (heads, splits, block, operand dtype, row blocks) that divides its
    extents and fits the level."""
    from tilefoundry.placer.spaces import MAX_WAVES, _divisors

    found = []
    for heads in _divisors(shape.heads):
        for block in cache_blocks(shape.ctx):
            for splits in _divisors(shape.ctx // block):
                for rows in _row_splits(shape.group):
                    # one CTA is left out: an unsplit mesh of one position cannot carry
                    # the running state the way a split one does (the analysis refuses it)
                    ctas = heads * splits * rows
                    if ctas > budget.units * MAX_WAVES or ctas == 1:
                        continue
                    per = shape.heads // heads
                    for mma in _mmas(shape):
                        if budget.smem_bytes is None or _held(shape, per, block, mma, rows) <= budget.smem_bytes:
                            found.append(AttentionChoice(heads, splits, block, mma, rows))
    return found


#: the fewest query rows a CTA of a row split holds: one MMA's M
MIN_ROWS = 16


def _row_splits(group: int) -> list:
    """How many CTAs may share one head's query rows: each keeps MIN_ROWS or more
    (a decode step's few rows stay whole: splitting them reads the cache again)."""
    from tilefoundry.placer.spaces import _divisors

    return [r for r in _divisors(group) if r == 1 or group // r >= MIN_ROWS]


def empty_space_reason(shape: AttentionShape, budget) -> str:
    """Why ``attention_points`` found nothing, in one clause with its remedy."""
    if not cache_blocks(shape.ctx):
        return (f"the cache's {shape.ctx} rows have no divisor between 2 and {BLOCKS[-1]}, so no KV block "
                "reads them in whole trips; pad the cache to a multiple of 16 rows and mask the padding")
    least = min(_held(shape, 1, block, mma, max(_row_splits(shape.group)))
                for block in cache_blocks(shape.ctx) for mma in _mmas(shape))
    return (f"one KV head per CTA at the smallest KV block already holds {least} B in smem, more than "
            f"the {budget.smem_bytes} B a CTA has; place a smaller head dimension or query group")


def _held(shape: AttentionShape, per: int, block: int, mma: str, rows: int = 1) -> int:
    """Smem bytes a CTA of ``per`` KV heads and 1/``rows`` of their query rows
    holds: q, the running state, and a k and a v block (with their f32 casts where
    the products run in f32)."""
    staged = 2 if mma == "bf16" else 6
    return 4 * per * (shape.group // rows) * (2 * shape.dim + 2) + 2 * staged * per * block * shape.dim


def _mmas(shape: AttentionShape) -> tuple:
    """The products' operand dtypes: as written (f32), and, over a bf16 cache,
    bf16 operands with f32 accumulation, as a person writes flash decoding: the
    blocks go to the tensor cores as they were read (no f32 copy in smem), the
    query is rounded to bf16 once and the probabilities each trip. Both are
    checked against the logical kernel, whose bound then carries those roundings."""
    return ("f32", "bf16") if shape.cache_dtype == "bf16" else ("f32",)


def attention_surrogate(shape: AttentionShape, choice: AttentionChoice, budget) -> tuple:
    """(waves, ns): the points of one wave of CTAs first (a second wave repeats
    every trip's latency), then the cache's bytes over the units busy plus a
    latency per trip of each wave."""
    from tilefoundry.placer.spaces import TRIP_NS, _occupancy

    waves = -(-choice.ctas // budget.units)
    moved = 2 * 2 * shape.heads * shape.ctx * shape.dim * choice.rows  # each row block reads the cache
    trips = shape.ctx // (choice.block * choice.splits)
    return waves, moved / budget.bandwidth / _occupancy(choice.ctas, budget.units) * 1e9 + TRIP_NS * trips * waves


def _staged(cache: str, h: str, s: str, dtype: str, mma: str) -> str:
    """One trip's block of a cache in smem, cast to the products' dtype where it differs."""
    block = (f"tf.reshard(tf.reshape({cache}[:, kk, :], (HEADS, SPLITS, BLOCK, DIM)), "
             f'({h}, {s}, BLOCK, DIM), "smem")')
    return block if dtype == mma else f'tf.cast({block}, "{mma}")'


def attention_text(kernel, choice: AttentionChoice, level: str = "cta") -> str:
    """The flash-decoding program of ``kernel`` under ``choice``."""
    from tilefoundry.placer.placed_program import _header, cast_to

    a = kernel.attention
    consts = [("HEADS", a.heads), ("GROUP", a.group), ("DIM", a.dim), ("CTX", a.ctx),
              ("SPLITS", choice.splits), ("BLOCK", choice.block), ("NEG_BIG", NEG_BIG)]
    h = "HEADS @ a.h" if choice.heads > 1 else "HEADS"
    s = "SPLITS @ a.s" if choice.splits > 1 else "SPLITS"
    g = "GROUP @ a.q" if choice.rows > 1 else "GROUP"
    axes = [(n, size) for n, size in (("h", choice.heads), ("q", choice.rows), ("s", choice.splits))
            if size > 1] or [("h", 1)]
    mesh = (f'with Mesh(("{level}",), ({", ".join(str(z) for _, z in axes)},), '
            f'({", ".join(repr(n).replace(chr(39), chr(34)) for n, _ in axes)},)) as a:')
    # the split axis sits where the window's reshape puts it (after the heads), so
    # each CTA reads only its own rows of the window: no transpose of gmem data
    state = f"({h}, {s}, {g}, 1)"
    low = choice.mma == "bf16"
    q_in = f'tf.reshard({a.q}, ({h}, {g}, DIM), "smem")'
    q_in = q_in if a.q_dtype == choice.mma else f'tf.cast({q_in}, "{choice.mma}")'
    # bf16 operands: the blocks as read, each product accumulated in f32 (out_dtype)
    wide = ', out_dtype="f32"' if low else ""
    probs = 'tf.cast(probs, "bf16")' if low else "probs"
    body = [
        mesh,
        f"    q_s = tf.reshape({q_in}, (HEADS, 1, GROUP, DIM))",
        f'    run_max = tf.full_like(tf.zeros(Tensor[{state}, "f32", "smem"]), NEG_BIG)',
        f'    run_sum = tf.zeros(Tensor[{state}, "f32", "smem"])',
        f'    run_acc = tf.zeros(Tensor[({h}, {s}, {g}, DIM), "f32", "smem"])',
        "    # window kk holds SPLITS blocks of BLOCK cache rows: block s is split s's",
        "    for kk in tile(CTX, BLOCK * SPLITS):",
        f"        k_blk = {_staged(a.k, h, s, a.cache_dtype, choice.mma)}",
        f"        v_blk = {_staged(a.v, h, s, a.cache_dtype, choice.mma)}",
        f"        scores = tf.matmul(q_s, tf.transpose(k_blk, (0, 1, 3, 2)){wide})",
        *[f"        scores = {text}" for text in a.score_ops],
        "        new_max = tf.maximum(run_max, tf.reduce(scores, (-1,), True, ReduceKind.MAX))",
        "        rescale = tf.exp(run_max - new_max)",
        "        probs = tf.exp(scores - new_max)",
        "        run_sum = run_sum * rescale + tf.reduce(probs, (-1,), True, ReduceKind.SUM)",
        f"        run_acc = run_acc * rescale + tf.matmul({probs}, v_blk{wide})",
        "        run_max = new_max",
        "    # the splits combined: each sum over the split axis is a Partial over `s`",
        f'    peak = tf.reduce(tf.reshard(run_max, ({h}, SPLITS, {g}, 1), "smem"), (1,), True, ReduceKind.MAX)',
        "    weight = tf.exp(run_max - peak)",
        f'    num = tf.reshard(tf.reduce(run_acc * weight, (1,), False, ReduceKind.SUM), ({h}, {g}, DIM), "smem")',
        f'    den = tf.reshard(tf.reduce(run_sum * weight, (1,), False, ReduceKind.SUM), ({h}, {g}, 1), "smem")',
        "    out = num / den",
        f'    return tf.reshard({cast_to("out", a.out_dtype)}, '
        f'({h}, {g}, DIM), "gmem")',
    ]
    doc = (f"{kernel.name}: decode attention ({a.heads} KV heads x {a.group} query rows, {a.ctx} cache "
           f"rows) placed by `tilefoundry place` as flash decoding: {choice.describe()}.")
    lines = _header(kernel, doc, consts, level, choice.ctas)
    lines += [f"        {line}" for line in body]
    lines += list(kernel.converters)
    return "\n".join(lines) + "\n"
