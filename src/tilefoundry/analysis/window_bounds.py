"""Every window a loop reaches lies inside what it reads (authoring §5.5-5.6).

A window whose start arrives at run time -- ``x[:, kk]`` of ``for kk in
tile(E, step)``, ``x[s : s + K]`` with ``s`` computed from loop variables and
mesh coordinates, ``insert_slice(dst, u, (0, kk))`` -- is typed by its size
alone, and its access relation assumes the start legal (its parameter guard), so
every family would count the work and the bytes of a window that reads or writes
past the tensor. The trips of the enclosing loops are known once the program is
concrete, so the program check asks, before any family runs, whether any of them
reaches outside, and refuses the first window that does, naming it, the
extent, the trip that reaches out and the remedy.

A start is read as an affine sum of loop variables and of bounded run-time
values (a mesh coordinate: an ``arange`` read through reshard/local/reshape),
each ranging independently over its own values, plus a constant. A start read
off anything else (a tensor's data, a loop carry) has no static range and is not
judged here; the executor checks it at run time.
"""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var, authored_label, postorder
from tilefoundry.ir.metadata import SourceSpanMetadata

__all__ = ["check_windows"]

# value-preserving ops a bounded rank-0 value may be read through
_SAME_VALUES = ("Reshape", "Reshard", "Local")
_DIM_OPS = {"DimAdd": "add", "DimSub": "sub", "DimMul": "mul"}


class _Term:
    """One independently ranging value of a start: a loop variable or a
    bounded run-time value."""

    __slots__ = ("lo", "hi", "loop", "label")

    def __init__(self, lo: int, hi: int, loop=None, label: str = ""):
        self.lo, self.hi, self.loop, self.label = lo, hi, loop, label


def _loop_values(loop: GridRegionExpr) -> tuple[int, int] | None:
    """(first, last) value of the loop variable, or None when it runs no trip
    or its bounds are not concrete ints."""
    start, extent, step = loop.start, loop.extent, loop.step
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, extent, step)):
        return None
    if step <= 0 or extent <= start:
        return None
    return start, start + (extent - 1 - start) // step * step


class _Starts:
    """Affine forms of rank-0 integer values: ({term id: coeff}, constant)."""

    def __init__(self, loops: dict):
        self.loops = loops  # id(induction Var) -> loop
        self.terms: dict[int, _Term] = {}
        self.memo: dict[int, object] = {}

    def form(self, node):
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self._form(node)
        return self.memo[key]

    def _form(self, node):
        if isinstance(node, Constant):
            value = node.value
            if isinstance(value, int) and not isinstance(value, bool):
                return {}, value
            return None
        if isinstance(node, Var):
            loop = self.loops.get(id(node))
            values = _loop_values(loop) if loop is not None else None
            if values is None:
                return None
            self.terms.setdefault(id(node), _Term(values[0], values[1], loop, node.name))
            return {id(node): 1}, 0
        if not isinstance(node, Call):
            return None
        kind = _arith(node)
        if kind is not None and len(node.args) == 2:
            left, right = self.form(node.args[0]), self.form(node.args[1])
            if left is None or right is None:
                return None
            if kind in ("add", "sub"):
                sign = 1 if kind == "add" else -1
                terms = dict(left[0])
                for k, c in right[0].items():
                    terms[k] = terms.get(k, 0) + sign * c
                return {k: c for k, c in terms.items() if c}, left[1] + sign * right[1]
            if kind == "mul":
                for fixed, other in ((left, right), (right, left)):
                    if not fixed[0]:
                        c = fixed[1]
                        return ({k: v * c for k, v in other[0].items() if v * c}, other[1] * c)
            return None
        bounds = self._bounded(node)
        if bounds is None:
            return None
        self.terms.setdefault(id(node), _Term(bounds[0], bounds[1], None, bounds[2]))
        return {id(node): 1}, 0

    def _bounded(self, node) -> tuple[int, int, str] | None:
        """(lo, hi, what) of every element a value can hold: an ``arange`` read
        through value-preserving ops (a mesh coordinate when it was localised)."""
        local = False
        for _ in range(64):
            if not (isinstance(node, Call) and type(node.op).__name__ in _SAME_VALUES):
                break
            local = local or type(node.op).__name__ == "Local"
            node = node.args[0]
        if not (isinstance(node, Call) and type(node.op).__name__ == "Arange"):
            return None
        shape = getattr(node.type, "shape", ())
        start, step = node.op.start, node.op.step
        if len(shape) != 1 or not all(isinstance(v, int) and not isinstance(v, bool)
                                      for v in (shape[0], start, step)) or shape[0] <= 0:
            return None
        last = start + (shape[0] - 1) * step
        return min(start, last), max(start, last), "a mesh coordinate" if local else "an arange value"


def _arith(call: Call) -> str | None:
    name = type(call.op).__name__
    if name in _DIM_OPS:
        return _DIM_OPS[name]
    if name == "Binary":
        kind = getattr(getattr(call.op, "kind", None), "value", None)
        return kind if kind in ("add", "sub", "mul") else None
    return None


def _loop_text(loop: GridRegionExpr) -> str:
    var = loop.induction_var.name
    if loop.kind == "tile" and loop.start == 0:
        head = f"for {var} in tile({loop.extent}, {loop.step})"
    else:
        head = f"for {var} in range({loop.start}, {loop.extent}, {loop.step})"
    span = loop.get_metadata(SourceSpanMetadata)
    return f"{head} at {span}" if span else head


def _windows(call: Call):
    """(axis, start node, extent, length, verb, source) per run-time start of a
    Slice (what it reads) or an InsertSlice (what it writes)."""
    name = type(call.op).__name__
    if name == "Slice":
        source, starts, verb = call.args[0], call.args[1], "reads"
        lengths = [(size - 1) * stride + 1 if isinstance(size, int) and size > 0 else None
                   for size, stride in zip(call.op.sizes, call.op.strides)]
    elif name == "InsertSlice":
        source, starts, verb = call.args[0], call.args[2], "writes"
        lengths = list(getattr(call.args[1].type, "shape", ()))
    else:
        return
    if not isinstance(starts, Tuple):
        return
    shape = getattr(source.type, "shape", ())
    for axis, (start, extent, length) in enumerate(zip(starts.fields, shape, lengths)):
        if isinstance(start, Constant) or not isinstance(extent, int) or not isinstance(length, int):
            continue
        yield axis, start, extent, length, verb, source


def check_windows(function, nodes=None) -> None:
    """Refuse the first run-time window any reached trip places outside the
    tensor it reads or writes (VerifyError, one line). ``nodes``: the body's
    postorder, where the caller has walked it already."""
    if function.body is None:
        return
    nodes = list(postorder(function.body)) if nodes is None else nodes
    loops = {id(n.induction_var): n for n in nodes if isinstance(n, GridRegionExpr)}
    if not loops:
        return
    starts = _Starts(loops)
    for call in nodes:
        if not isinstance(call, Call):
            continue
        for axis, start, extent, length, verb, source in _windows(call):
            form = starts.form(start)
            if form is None or not form[0]:
                continue
            coeffs, const = form
            terms = [(starts.terms[k], c) for k, c in coeffs.items()]
            low = const + sum(c * (t.lo if c > 0 else t.hi) for t, c in terms)
            high = const + sum(c * (t.hi if c > 0 else t.lo) for t, c in terms)
            if low < 0:
                _refuse(call, axis, source, extent, length, verb, low, terms, least=True)
            if high + length > extent:
                _refuse(call, axis, source, extent, length, verb, high, terms, least=False)


def _refuse(call, axis, source, extent, length, verb, start, terms, least: bool):
    span = call.get_metadata(SourceSpanMetadata)
    name = authored_label(call)
    what = f"'{name}'" if name else f"the {call.op.name}"
    src = authored_label(source)
    src = f"'{src}'" if src else "its operand"
    witness = []
    for term, coeff in terms:
        value = term.lo if (coeff > 0) == least else term.hi
        if term.loop is not None:
            witness.append(f"{term.label} = {value} ({_loop_text(term.loop)})")
        else:
            witness.append(f"{term.label} = {value}")
    when = " and ".join(witness)
    window = f"[{start}, {start + length})"
    if least:
        fault = f"starts before 0 when {when}"
        remedy = "start the loop where the first window begins at 0 or later"
    else:
        fault = f"ends past it when {when}"
        rest = "read the rest with a sized slice" if verb == "reads" else "write the rest apart"
        remedy = (f"stop the loop where the last window still fits (a start of at most "
                  f"{extent - length}), or {rest}")
    head = f"{span}: " if span else ""
    raise VerifyError(
        f"{head}the window {window} that {what} {verb} on axis {axis} of {src} (extent {extent}) "
        f"{fault}; every window a loop reaches must lie inside [0, {extent}) (authoring "
        f"§5.5-5.6): {remedy}")
