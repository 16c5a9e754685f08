"""One error-bound rule per op (``error_bounds``): given the operands' values
``xs`` and bounds ``es`` and the computed result ``x``, the bound of ``x``.

A rule adds two parts: what the operands' bounds become through the op
(propagation) and what the op itself adds (its roundings: ``u·|x|`` for one
rounding, ``gamma_n·sum|terms|`` for an n-term f32 accumulation, the stated
ulps of a special function). Each part is noted in the derivation under the
op's name.
"""
from __future__ import annotations

from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.op_numerics import np
from tilefoundry.execute.error_bounds import SPECIAL_ULPS, U32, check_supported, is_exact, unit_roundoff
from tilefoundry.execute.logical import context_of, evaluator_of

__all__ = ["bound_of", "DATA_MOVEMENT"]

#: ops that only move elements: the bound moves with them (index operands as computed)
DATA_MOVEMENT = {"reshape", "transpose", "concat", "stack", "split", "repeat_interleave", "slice",
                 "insert_slice", "index_select", "index_copy", "cache_update", "where", "reshard",
                 "local"}
#: results that are exact by construction (integers, shapes, comparisons)
_EXACT = {"argmax", "shape_of", "rank", "zeros"}


#: magnitudes made during one op's two bound rules (worst-case, then rss), by the id
#: of the array they were made from (kept beside it, so the id cannot be reused):
#: a layer's weight is widened to f64 once per op, not once per model
_MEMO: dict | None = None


def _wide(a):
    """|a| in f64 (the bound rules' arithmetic)."""
    if _MEMO is None:
        return _magnitude(a)
    hit = _MEMO.get(("wide", id(a)))
    if hit is None:
        hit = _MEMO[("wide", id(a))] = (a, _magnitude(a))
    return hit[1]


def _magnitude(a):
    array = np.asarray(a)
    if array.dtype.name == "bfloat16":
        # |a| of a bf16 is its bits without the sign; shifted into the top half of a
        # u32 they are the same number as an f32 (exact): one pass, where ml_dtypes'
        # own cast to f64 runs several times slower on a layer's weights
        bits = (array.view(np.uint16) & np.uint16(0x7FFF)).astype(np.uint32)
        bits <<= np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    if array.dtype == np.float32 or array.dtype == np.float16:
        return np.abs(array).astype(np.float64)  # |.| is exact at any width
    return np.abs(np.asarray(array, dtype=np.float64))


def remembered(key, array, make):
    """``make()`` once per op for ``array`` under ``key`` (both models' rules ask)."""
    if _MEMO is None:
        return make()
    hit = _MEMO.get((key, id(array)))
    if hit is None:
        hit = _MEMO[(key, id(array))] = (array, make())
    return hit[1]


def both_bounds(call, xs, es, ss, x, domain):
    """(worst-case bound, rss bound) of ``x``: the two rules share the operands'
    magnitudes (``_MEMO``)."""
    from tilefoundry.execute.error_bounds import RSS, WORST

    global _MEMO
    if call.op.name in _CONTRACTIONS and _any_float(call.type):
        worst, rss = _CONTRACTIONS[call.op.name](call, [np.asarray(v) for v in xs], es, ss, x)
        return (_finish(call, x, *worst, domain, WORST), _finish(call, x, *rss, domain, RSS))
    _MEMO = {}
    try:
        return bound_of(call, xs, es, x, domain, WORST), bound_of(call, xs, ss, x, domain, RSS)
    finally:
        _MEMO = None


def _result_dtype(call):
    return call.type.dtype if isinstance(call.type, TensorType) else None


def _final_rounding(call, x):
    """The runner's one rounding of the f32 result to a narrower result dtype."""
    dtype = _result_dtype(call)
    if dtype is None or not dtype.is_float or dtype.name == "f32":
        return 0.0
    return unit_roundoff(dtype) * _wide(x) + underflow(dtype)


def underflow(dtype) -> float:
    """Half the smallest subnormal of ``dtype``: the absolute error a rounding adds
    below the normal range, where u·|x| no longer bounds it (fp8 e4m3: 2^-10)."""
    import ml_dtypes

    from tilefoundry.semantics.op_numerics import numpy_dtype

    return float(ml_dtypes.finfo(numpy_dtype(dtype)).smallest_subnormal) / 2


def _moved(call, xs, es, x):
    """The op's own evaluator run on the bounds (index and bool operands as computed);
    exact operands move to an exact result."""
    if all(is_exact(e) for e in _leaf_bounds(call, es)):
        return np.zeros(())
    args = []
    for arg, xv, ev in zip(call.args, xs, es):
        args.append(_bound_operand(arg.type, xv, ev))
    ctx = context_of(call, tuple(a.type for a in call.args), call.type)
    if call.op.name in ("reshard", "local"):
        return es[0] if call.op.name == "reshard" else _local_bound(call, es[0], x)
    return evaluator_of(call)(call.op, tuple(args), ctx)


def _leaf_bounds(call, es):
    for arg, ev in zip(call.args, es):
        if isinstance(arg.type, TensorType) and arg.type.dtype.is_float:
            yield ev
        elif isinstance(arg.type, TupleType):
            yield from (v for v in _flat(ev))


def _flat(value):
    if isinstance(value, tuple):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _bound_operand(type_, xv, ev):
    if isinstance(type_, TupleType):
        return tuple(_bound_operand(t, a, b) for t, a, b in zip(type_.fields, xv, ev))
    if isinstance(type_, TensorType) and type_.dtype.is_float:
        return np.broadcast_to(np.asarray(ev, dtype=np.float64), np.shape(xv))
    return xv


def _local_bound(call, e, x):
    piece = next(iter(x.pieces.values())) if hasattr(x, "pieces") else x
    return np.full(np.shape(piece), float(np.max(e)) if np.size(e) else 0.0)


def bound_of(call, xs, es, x, domain, model):
    """The bound of ``x`` under ``model`` (``error_bounds.Model``); ``domain.derivation``
    notes the op's own share under that model."""
    name = call.op.name
    if name in DATA_MOVEMENT:
        return _moved(call, xs, es, x)
    if name in _EXACT or not _any_float(call.type):
        return _zeros(x)
    rule = _RULES.get(name)
    if rule is None:
        check_supported(call)
    propagated, own = rule(call, [np.asarray(v) if not isinstance(v, tuple) else v for v in xs], es, x,
                           model)
    return _finish(call, x, propagated, own, domain, model)


def _finish(call, x, propagated, own, domain, model):
    """A rule's two parts joined under ``model``, the result's own rounding to its
    dtype added, the op's share noted for the derivation."""
    name = call.op.name
    if isinstance(call.type, TupleType):
        for o, xv in zip(own, x):
            domain.derivation.note(name, o, xv, model.name)
        return tuple(model.add(p, o) for p, o in zip(propagated, own))
    own = model.add(own, _final_rounding(call, x))
    domain.derivation.note(name, own, x, model.name)
    return model.add(propagated, own)


def _any_float(type_) -> bool:
    if isinstance(type_, TupleType):
        return any(_any_float(t) for t in type_.fields)
    return isinstance(type_, TensorType) and type_.dtype.is_float


def _zeros(x):
    if isinstance(x, tuple):
        return tuple(_zeros(v) for v in x)
    return np.zeros(np.shape(x))


# ---------------------------------------------------------------- elementwise


def _binary(call, xs, es, x, m):
    kind = str(call.op.kind)
    a, b = _wide(xs[0]), _wide(xs[1])
    ea, eb = es
    y = _wide(x)
    # one value on both sides (x * x, x + x): its error is on both at once, never independent
    join = (lambda p, q: p + q) if call.args[0] is call.args[1] else m.add
    if kind in ("add", "sub"):
        return join(ea + 0 * y, eb + 0 * y), U32 * y
    if kind == "mul":
        return join(a * eb, b * ea) + ea * eb, U32 * y
    if kind == "div":
        with np.errstate(all="ignore"):
            room = b - eb
            propagated = np.where(room > 0, (ea + y * eb) / np.where(room > 0, room, 1), np.inf)
        return propagated, U32 * y
    if kind in ("min", "max"):  # exact; the operand that wins by more than both bounds keeps its own
        ra, rb = np.asarray(xs[0], np.float64), np.asarray(xs[1], np.float64)
        if kind == "min":
            ra, rb = -ra, -rb
        with np.errstate(all="ignore"):
            either = np.maximum(ea + 0 * y, eb + 0 * y)
            return np.where(ra - ea > rb + eb, ea + 0 * y, np.where(rb - eb > ra + ea, eb + 0 * y,
                                                                     either)), 0 * y
    return 0 * y, 0 * y  # comparisons and logic: bool, exact


def _through(call, xs, es, x, function):
    """A smooth function's image of [x - e, x + e], as far as it moves from f(x)."""
    value = np.asarray(xs[0], dtype=np.float32)
    e = np.asarray(es[0], dtype=np.float64)
    with np.errstate(all="ignore"):
        here = function(value).astype(np.float64)
        up = function((value + e).astype(np.float32)).astype(np.float64)
        down = function((value - e).astype(np.float32)).astype(np.float64)
        moved = np.maximum(np.abs(up - here), np.abs(down - here))
    return np.where(e > 0, moved, 0.0)


def _special(name: str):
    def rule(call, xs, es, x, m):
        ctx = context_of(call, tuple(a.type for a in call.args), call.type)
        evaluator = evaluator_of(call)

        def f(v):
            return np.asarray(evaluator(call.op, (v,), ctx), dtype=np.float64)

        ulps = SPECIAL_ULPS.get(name, 4)
        y = _wide(x)
        own = 2 * ulps * U32 * y  # one ulp of f32 is at most 2u relative
        if name == "gelu":  # 0.5 x (1 + t): t's absolute error, scaled by |x|
            own = own + 2 * ulps * U32 * _wide(xs[0])
        return _through(call, xs, es, x, f), own
    return rule


def _unary(call, xs, es, x, m):
    kind = str(call.op.kind)
    e = es[0]
    if kind in ("neg", "abs", "relu"):
        return _kept(e, x), 0.0
    y = _wide(x)
    if kind == "square":
        a = _wide(xs[0])
        return 2 * a * e + e * e, U32 * y
    if kind in ("ceil", "round"):  # a step: the operand's bound, moved to the next step
        moved = np.where(e > 0, np.ceil(e) + 1, 0)
        return moved + 0 * y, 0 * y
    return _special(kind)(call, xs, es, x, m)


def _kept(e, x):
    """An operand's bound carried unchanged to an elementwise result: an exact one
    stays the number 0 (a weight cast to f32 is still exact: no zero array of its
    size is made, and every op downstream skips its terms)."""
    return e if is_exact(e) else np.broadcast_to(np.asarray(e, np.float64), np.shape(x))


def _clamp(call, xs, es, x, m):
    return _kept(es[0], x), 0.0


def _cast(call, xs, es, x, m):
    return _kept(es[0], x), 0.0  # the rounding to the target: _final_rounding


def _full_like(call, xs, es, x, m):
    exact = float(call.op.value)
    with np.errstate(all="ignore"):
        own = np.abs(_wide(x) - abs(exact)) if np.isfinite(exact) else 0 * _wide(x)
    return 0 * _wide(x), own


def _arange(call, xs, es, x, m):
    return 0 * _wide(x), U32 * _wide(x)


# ---------------------------------------------------------------- accumulations


def _matmul(call, xs, es, x, m):
    a, b = _wide(xs[0]), _wide(xs[1])
    ea, eb = es
    k = a.shape[-1] if a.ndim else 1
    propagated = m.dot(np.matmul, a, eb, ea, b, _squared)
    return propagated, m.gamma(k) * remembered("matmul", a, lambda: np.matmul(a, b))


def _squared(v):
    return remembered("square", v, lambda: v * v)


#: elements of the right operand widened to f64 at a time (8 MB): a layer's weight
#: (Gemma-2's 3584 x 14336, 51 M elements) is never held whole in f64, whose
#: fresh pages cost more than the products (and vary from run to run)
_BLOCK = 1 << 20


def _contraction_both(call, xs, es, ss, x, u: float):
    """((propagated, own) worst-case, (propagated, own) rss) of ``a @ b`` whose K
    terms accumulate with unit roundoff ``u``: both models in one pass over the
    right operand, a block of its columns at a time (``_BLOCK``). Per element
    the sums are those of ``Model.dot`` and ``gamma_K·|a|@|b|``: the columns of
    a matmul's result are independent, so blocking them changes no term (only
    the f64 rounding of the bound's own sums, 2^-53 relative, where BLAS orders
    a block's sum otherwise)."""
    from tilefoundry.execute.error_bounds import RSS, WORST

    a, bx = _wide(xs[0]), xs[1]
    ea, eb = es
    sa, sb = ss
    k = a.shape[-1] if a.ndim else 1
    a2 = a * a if not is_exact(sb) else None
    ea_, sa2 = (None if is_exact(ea) else ea), (None if is_exact(sa) else sa * sa)
    n = bx.shape[-1] if bx.ndim >= 2 else 1
    step = n if bx.ndim < 2 else max(1, _BLOCK // max(1, bx.size // n))
    parts: dict = {"own": [], "worst": [], "rss": []}
    for start in range(0, n, step):
        cols = (Ellipsis, slice(start, start + step)) if bx.ndim >= 2 else (Ellipsis,)
        b = _magnitude(bx[cols])
        ebc = None if is_exact(eb) else np.broadcast_to(eb, bx.shape)[cols]
        sbc = None if is_exact(sb) else np.broadcast_to(sb, bx.shape)[cols]
        parts["own"].append(np.matmul(a, b))
        worst = rss = 0.0
        with np.errstate(all="ignore"):
            if ebc is not None:
                worst = worst + np.matmul(a, ebc)
            if ea_ is not None:
                worst = worst + np.matmul(ea_, b)
            if ea_ is not None and ebc is not None:
                worst = worst + np.matmul(ea_, ebc)
            if sbc is not None:
                rss = rss + np.matmul(a2, sbc * sbc)
            if sa2 is not None:
                rss = rss + np.matmul(sa2, b * b)
            if sa2 is not None and sbc is not None:
                rss = rss + np.matmul(sa2, sbc * sbc)
            parts["worst"].append(worst)
            parts["rss"].append(np.sqrt(rss) if not np.ndim(rss) == 0 else rss)

    def joined(blocks):
        if all(np.ndim(v) == 0 for v in blocks):
            return 0.0  # every term exact
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=-1)

    own = joined(parts["own"])
    return ((joined(parts["worst"]), WORST.gamma(k, u) * own), (joined(parts["rss"]), RSS.gamma(k, u) * own))


def _matmul_both(call, xs, es, ss, x):
    return _contraction_both(call, xs, es, ss, x, U32)


def _mma_both(call, xs, es, ss, x):
    # an f32 add, then the accumulator's rounding
    return _contraction_both(call, xs, es, ss, x, unit_roundoff(call.op.dtype_acc) + U32)


def _mma(call, xs, es, x, m):
    a, b = _wide(xs[0]), _wide(xs[1])
    ea, eb = es
    k = a.shape[-1]
    u = unit_roundoff(call.op.dtype_acc) + U32  # f32 add, then the accumulator's rounding
    propagated = m.dot(np.matmul, a, eb, ea, b)
    return propagated, m.gamma(k, u) * np.matmul(a, b)


def _conv2d(call, xs, es, x, m):
    ctx = context_of(call, tuple(a.type for a in call.args), call.type)
    conv = evaluator_of(call)
    a, w, bias = (_wide(v) for v in xs)
    ea, ew, eb = (np.broadcast_to(np.asarray(v, np.float64), np.shape(xv)) for v, xv in zip(es, xs))
    zero = np.zeros_like(bias)

    def c(p, q):
        return np.asarray(conv(call.op, (p, q, zero), ctx), dtype=np.float64)

    n = int(np.prod(w.shape[1:])) + 1
    propagated = m.dot(c, a, ew, ea, w) + eb[:, None, None]
    return propagated, m.gamma(n) * (c(a, w) + bias[:, None, None])


def _axes_of(op, ndim):
    axes = op.axes if isinstance(op.axes, tuple) else (op.axes,)
    return tuple(a % ndim for a in axes)


def _max_bound(v, e, axes, keep):
    """A max moves at most as far as the entries that can still be the max:
    those whose upper bound reaches the largest lower bound (an entry -1e30
    below the row's top, a masked score, cannot win however far it moves).
    An entry whose bounds are not numbers stays a candidate."""
    with np.errstate(all="ignore"):
        low = np.max(v - e, axis=axes, keepdims=True, initial=-np.inf)
        candidate = ~(v + e < low)
        return np.max(np.where(candidate, e, 0.0), axis=axes, keepdims=keep, initial=0.0)


def _reduce(call, xs, es, x, m):
    kind = str(call.op.kind)
    a, e = _wide(xs[0]), np.broadcast_to(np.asarray(es[0], np.float64), np.shape(xs[0]))
    axes = _axes_of(call.op, a.ndim)
    keep = call.op.keepdim
    n = int(np.prod([a.shape[i] for i in axes])) if axes else 1
    if kind in ("max", "abs_max"):  # `a` is the magnitude; max reads the signed values
        signed = np.asarray(xs[0], np.float64)
        return _max_bound(a if kind == "abs_max" else signed, e, axes, keep), 0 * _wide(x)
    total_e = m.total(e, axes, keep)
    own = m.gamma(max(n - 1, 1)) * np.sum(a, axis=axes, keepdims=keep)
    if kind == "mean":
        return total_e / max(n, 1), own / max(n, 1) + U32 * _wide(x)
    return total_e, own


def _index_add(call, xs, es, x, m):
    ctx = context_of(call, tuple(a.type for a in call.args), call.type)
    add = evaluator_of(call)
    dst, index, src = xs[0], xs[1], xs[2]
    ed, es_ = (np.broadcast_to(np.asarray(v, np.float64), np.shape(xv)) for v, xv in
               ((es[0], dst), (es[2], src)))
    counts = np.bincount(np.asarray(index).reshape(-1)) if np.size(index) else np.zeros(1)
    most = int(counts.max()) + 1 if counts.size else 1
    propagated = np.asarray(add(call.op, (ed, index, es_), ctx), np.float64)
    magnitude = np.asarray(add(call.op, (_wide(dst), index, _wide(src)), ctx), np.float64)
    return propagated, m.gamma(most) * magnitude


# ---------------------------------------------------------------- row-wise


def _rms_norm(call, xs, es, x, m):
    a, w = (np.asarray(v, np.float64) for v in xs)
    ea, ew = (np.broadcast_to(np.asarray(v, np.float64), np.shape(xv)) for v, xv in zip(es, xs))
    n = a.shape[-1]
    r = np.sqrt(np.mean(a * a, axis=-1, keepdims=True) + float(call.op.eps))
    spread = np.mean(np.abs(a) * ea, axis=-1, keepdims=True)  # bounds |delta r| * r
    with np.errstate(all="ignore"):
        propagated = np.abs(w) * (ea / r + np.abs(a) * spread / r ** 3) + ew * np.abs(a) / r
    return propagated, m.gamma(n + 6) * _wide(x)


def _layer_norm(call, xs, es, x, m):
    a, w, b = (np.asarray(v, np.float64) for v in xs)
    ea, ew, eb = (np.broadcast_to(np.asarray(v, np.float64), np.shape(xv)) for v, xv in zip(es, xs))
    axes = tuple(range(call.op.axis % a.ndim, a.ndim))
    n = int(np.prod([a.shape[i] for i in axes]))
    centred = a - np.mean(a, axis=axes, keepdims=True)
    sigma = np.sqrt(np.mean(centred * centred, axis=axes, keepdims=True) + float(call.op.eps))
    moved = ea + np.mean(ea, axis=axes, keepdims=True)
    dsigma = np.mean(np.abs(centred) * moved, axis=axes, keepdims=True) / sigma
    with np.errstate(all="ignore"):
        propagated = (np.abs(w) * (moved / sigma + np.abs(centred) * dsigma / sigma ** 2)
                      + ew * np.abs(centred) / sigma + eb)
        mean_abs = np.mean(np.abs(a), axis=axes, keepdims=True)
        own = (m.gamma(n + 2) * np.abs(w) * mean_abs / sigma
               + m.gamma(n + 8) * np.abs(w * centred / sigma) + U32 * _wide(x))
    return propagated, own


def _softmax(call, xs, es, x, m):
    a = np.asarray(xs[0], np.float64)
    e = np.broadcast_to(np.asarray(es[0], np.float64), a.shape)
    axis = call.op.axis % a.ndim
    s = np.asarray(x, np.float64)
    n = a.shape[axis]
    # an entry whose weight is 0 (a masked score, -1e30 below the row's top) stays 0
    # however far its score moves, so it neither widens the bound nor adds to a sum
    counts = s > 0
    worst = (np.max(np.where(counts, e, 0.0), axis=axis, keepdims=True) if e.size else 0.0)
    with np.errstate(all="ignore"):
        weighted = np.where(counts, s * e, 0.0)
        # first order s_i (e_i + sum_j s_j e_j), widened by exp(2 max e) for larger bounds
        propagated = np.where(counts, s * (e + np.sum(weighted, axis=axis, keepdims=True))
                              * np.exp(2 * worst), 0.0)
        top = np.max(np.where(np.isfinite(a), a, -np.inf), axis=axis, keepdims=True)
        spread = np.where(np.isfinite(a), np.abs(a - top), 0.0)
        exp_err = U32 * spread + 2 * SPECIAL_ULPS["exp"] * U32
        # the denominator's relative error is its terms' errors weighted by their shares
        denominator = np.sum(np.where(counts, s * exp_err, 0.0), axis=axis, keepdims=True)
        own = np.where(counts, s * (exp_err + denominator + m.gamma(n) + 2 * U32), 0.0)
    return propagated, own


def _rope(call, xs, es, x, m):
    cos, sin = (np.asarray(v, np.float64) for v in xs[2:4])
    ec, esn = (np.broadcast_to(np.asarray(v, np.float64), np.shape(xv)) for v, xv in
               ((es[2], xs[2]), (es[3], xs[3])))
    pos = np.asarray(xs[4])
    props, owns = [], []
    for q, eq, y in ((xs[0], es[0], x[0]), (xs[1], es[1], x[1])):
        q = np.asarray(q, np.float64)
        eq = np.broadcast_to(np.asarray(eq, np.float64), q.shape)
        half = q.shape[-1] // 2
        p = np.broadcast_to(pos, q.shape[:-2])
        c, s, dc, ds = (t[p][..., None, :] if q.ndim >= 2 else t[p] for t in (cos, sin, ec, esn))
        rot = np.abs(np.concatenate([q[..., half:], q[..., :half]], axis=-1))
        erot = np.concatenate([eq[..., half:], eq[..., :half]], axis=-1)
        aq = np.abs(q)
        props.append(eq * np.abs(c) + erot * np.abs(s) + aq * dc + rot * ds + eq * dc + erot * ds)
        rounding = unit_roundoff(call.type.fields[0].dtype) if call.type.fields[0].dtype.name != "f32" else 0
        owns.append(3 * U32 * (aq * np.abs(c) + rot * np.abs(s)) + rounding * _wide(y))
    return tuple(props), tuple(owns)


def _quant(call, xs, es, x, m):
    a = np.asarray(xs[0], np.float64)
    e = np.broadcast_to(np.asarray(es[0], np.float64), a.shape)
    g = call.op.group
    q, scale = (np.asarray(v, np.float64) for v in x)
    grouped = e.reshape(a.shape[:-1] + (a.shape[-1] // g, g))
    import ml_dtypes
    from tilefoundry.semantics.op_numerics import numpy_dtype

    top = float(ml_dtypes.finfo(numpy_dtype(call.op.target_dtype)).max)
    escale = np.max(grouped, axis=-1) / top + U32 * scale
    s = np.repeat(scale, g, axis=-1).reshape(a.shape)
    ds = np.repeat(escale, g, axis=-1).reshape(a.shape)
    with np.errstate(all="ignore"):
        eq = np.where(s > ds, (e + np.abs(q) * ds) / np.where(s > ds, s - ds, 1), np.inf)
    rounding = (unit_roundoff(call.op.target_dtype) + 2 * U32) * np.abs(q) + underflow(call.op.target_dtype)
    return (eq, escale), (rounding, 0 * scale)


def _topk(call, xs, es, x, m):
    axis = call.op.axis % np.ndim(xs[0])
    e = np.broadcast_to(np.asarray(es[0], np.float64), np.shape(xs[0]))
    worst = np.max(e, axis=axis, keepdims=True, initial=0.0)
    values = np.broadcast_to(worst, np.shape(x[0])).copy()
    return (values, np.zeros(np.shape(x[1]))), (0 * values, np.zeros(np.shape(x[1])))


_CONTRACTIONS = {"matmul": _matmul_both, "mma_sm80_16x8x16": _mma_both, "wgmma_sm90_64x128x16": _mma_both}

_RULES = {
    "binary": _binary, "unary": _unary, "clamp": _clamp, "cast": _cast, "relu": _clamp,
    "exp": _special("exp"), "tanh": _special("tanh"), "sigmoid": _special("sigmoid"),
    "silu": _special("silu"), "softplus": _special("softplus"), "gelu": _special("gelu"),
    "full_like": _full_like, "arange": _arange,
    "matmul": _matmul, "conv2d": _conv2d, "reduce": _reduce, "index_add": _index_add,
    "mma_sm80_16x8x16": _mma, "wgmma_sm90_64x128x16": _mma,
    "rms_norm": _rms_norm, "layer_norm": _layer_norm, "softmax": _softmax, "rope": _rope,
    "quant": _quant, "topk": _topk,
}
