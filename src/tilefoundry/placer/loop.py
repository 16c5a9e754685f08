"""A logical kernel whose body walks one loop carrying state: read off the typed
program, placed by splitting a data-parallel axis over CTAs, the loop kept as
written inside the mesh.

A recurrence such as a selective scan (``for t in range(T): state = state *
decay_t + u_t; y = insert_slice(y, state @ c_t, t)``) cannot be cut into kernels
meeting in gmem: each trip reads what the last one wrote. A person places it by
giving each CTA its own share of the state (some heads) and letting every CTA
walk the whole sequence in its loop, the state staged in smem or rmem, each
trip's inputs read at the induction variable and staged in smem.

Which axis is data-parallel is found by structure, never by name: the axes of
every value are joined through each op's axis map (an elementwise op joins the
axes its operands share with its result, a reshape the outermost axes of each
group of equal product, a matmul its batch and M/N axes, a slice or an
insert_slice the axes it keeps whole, a loop's carried value its init's and its
yield's); an axis an op reads across (a reduction, a contraction, a slice or
insert_slice at a run-time offset, any other op) closes its class. A class that
holds an axis of every carried value and that no op reads across is one the
loop's trips never mix: each CTA can own a block of it. The shard propagation
then checks each point as it loads (an op it cannot carry refuses the point),
and the check compares the answer with the logical kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.errors import AnalysisError
from tilefoundry.placer.loop_axes import Axes as _Axes, join_axes

__all__ = ["LoopChoice", "LoopShape", "loop_points", "loop_surrogate", "loop_text", "read_loop"]

#: where the carried state may live per CTA (a value past the level's capacity per
#: CTA stays in gmem: a whole output sequence gathered trip by trip)
STAGINGS = ("smem", "rmem")
#: the most classes split at once (a mesh of at most two axes: heads x head rows)
MAX_SPLIT_AXES = 2


@dataclass(frozen=True, order=True)
class LoopChoice:
    """``splits``: (class index, CTAs) of each class split, the mesh's axes in
    order; ``staging``: where the carried values that fit a CTA live."""

    splits: tuple
    staging: str
    labels: tuple = ()  # each split class in words (LoopShape.labels), for describe()

    @property
    def ctas(self) -> int:
        count = 1
        for _, size in self.splits:
            count *= size
        return count

    def describe(self) -> str:
        axes = " x ".join(f"{self.labels[c] if c < len(self.labels) else f'axis class {c}'} over {n}"
                          for c, n in self.splits)
        return f"loop kept as written over {self.ctas} CTAs ({axes}), carried state in {self.staging}"


@dataclass(frozen=True)
class LoopShape:
    """What the writer needs, by source name.

    Attributes:
        before: (target, op text) of the ops before the loop.
        staged: (name, shape, dtype) of each value made outside the loop that the
            loop reads whole: staged in smem once, before the loop.
        carried: (name, init source, shape, dtype) of each carried value; an
            init source "" is zeros made in the value's placed layout.
        header: the loop's ``for`` line.
        body: (target, op text, shape or ()) of each op in the loop; a shape
            marks a slice of an outside value at the induction variable, staged
            in smem each trip.
        yields: (carried name, the body's value that is its next value).
        after: (target, op text) of the ops after the loop.
        results: (source, shape) of each returned value.
        axes: name -> ((axis, class index), ...) of every named value.
        classes: (extent, ...) of each candidate class: the extents its members
            split (every split divides each).
        labels: each class in words (the first carried value's axis in it).
    """

    before: tuple
    staged: tuple
    carried: tuple
    header: str
    body: tuple
    yields: tuple
    after: tuple
    results: tuple
    axes: dict
    classes: tuple
    labels: tuple = ()
    trips: int = 0


def _name(node) -> str | None:
    return getattr(getattr(node, "op", None), "name", None)


def _shape(node) -> tuple:
    return tuple(getattr(node.type, "shape", ()))


class _Names:
    """Each node's source spelling: a parameter's or carried value's name, a
    literal, a tuple of them, ``v<i>`` for a call."""

    def __init__(self):
        self.text: dict = {}

    def of(self, node) -> str:
        from tilefoundry.ir.expr import Constant, Tuple, Var
        from tilefoundry.render.values import format_value

        if id(node) in self.text:
            return self.text[id(node)]
        if isinstance(node, Var):
            return node.name
        if isinstance(node, Constant):
            return format_value(node.value)
        if isinstance(node, Tuple):
            fields = [self.of(f) for f in node.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        raise KeyError(id(node))


def _children(node) -> list:
    from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple

    if isinstance(node, Call):
        return list(node.args)
    if isinstance(node, Tuple):
        return list(node.fields)
    if isinstance(node, GridRegionExpr):
        return list(node.inits) + list(node.yields)
    return []


def _refuse(where: str, why: str):
    raise AnalysisError(f"{where}: place: {why}")


def _the_loop(nodes, where: str):
    from tilefoundry.ir.expr import GridRegionExpr

    loops = [n for n in nodes if isinstance(n, GridRegionExpr)]
    if len(loops) > 1:
        _refuse(where, f"the kernel walks {len(loops)} loops; the loop kind places a body of one loop "
                       "(no loop nested in another, none after it)")
    loop = loops[0]
    if loop.kind != "range" or loop.start != 0 or loop.step != 1 or not isinstance(loop.extent, int):
        _refuse(where, f"the loop is not `for i in range(N)` over a static N (a `{loop.kind}` loop, start "
                       f"{loop.start}, step {loop.step}, extent {loop.extent}); the loop kind walks one "
                       "trip per index (a dimension is bound with --dim)")
    return loop


def _regions(nodes, loop) -> dict:
    """id -> "before", "in" or "after" for every call: in the loop when it reads
    the induction variable or a carried value, after it when it reads its result."""
    from tilefoundry.ir.expr import Call

    inner = {id(loop.induction_var), *(id(v) for v in loop.carried)}
    region: dict = {}
    for node in nodes:
        kids = _children(node) if node is not loop else []
        if node is loop:
            region[id(node)] = "loop"
        elif id(node) in inner:
            region[id(node)] = "in"
        elif any(region.get(id(k)) in ("after", "loop") for k in kids):
            region[id(node)] = "after"
        elif any(region.get(id(k)) == "in" for k in kids):
            region[id(node)] = "in"
        elif isinstance(node, Call) or kids:
            region[id(node)] = "before"
    return region


def read_loop(function, params, where: str) -> LoopShape | None:
    """The LoopShape of a body walking one loop, None when it walks none; a
    refusal when the loop is not one this kind places."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import GridRegionExpr, Tuple, Var

    nodes = iter_nodes(function.body)
    if not any(isinstance(n, GridRegionExpr) for n in nodes):
        return None
    _refuse_placed(nodes, where)
    loop = _the_loop(nodes, where)
    region = _regions(nodes, loop)
    names, calls = _named_calls(nodes, loop, where)
    axes = join_axes(calls, loop, names)
    # a carried value that starts as zeros no op reads is made in its placed layout
    read = {id(a) for call in calls for a in call.args}
    made = {id(i) for i in loop.inits if _name(i) == "zeros" and region.get(id(i)) == "before" and id(i) not in read}
    outside = {p.name for p in params} | {names.of(c) for c in calls if region[id(c)] == "before"}
    lines, staged = _lines(calls, names, region, outside, made)
    carried = tuple((v.name, "" if id(init) in made else names.of(init), _shape(v), v.type.dtype.name)
                    for v, init in zip(loop.carried, loop.inits))
    yields = tuple((v.name, names.of(y)) for v, y in zip(loop.carried, loop.yields))
    body = function.body
    returned = body.fields if isinstance(body, Tuple) else (body,)
    if any(isinstance(r, Var) and r.name in {p.name for p in params} for r in returned):
        _refuse(where, "the kernel returns a parameter unchanged; there is nothing to place")
    classes = _classes(axes, loop, where)
    by_name: dict = {}
    for name, axis in list(axes.extent):
        root = axes.find((name, axis))
        if root in classes:
            by_name.setdefault(name, []).append((axis, classes.index(root)))
    extents = tuple(tuple(sorted({e for _, _, e in _members(axes, root)})) for root in classes)
    first = loop.carried[0].name
    labels = tuple(next(f"{first} axis {a}" for n, a, _ in sorted(_members(axes, root)) if n == first)
                   for root in classes)
    header = f"for {loop.induction_var.name} in range({loop.extent}):"
    return LoopShape(tuple(lines["before"]), tuple(staged.values()), carried, header, tuple(lines["in"]),
                     yields, tuple(lines["after"]), tuple((names.of(r), _shape(r)) for r in returned),
                     {k: tuple(sorted(v)) for k, v in by_name.items()}, extents, labels, loop.extent)


def _refuse_placed(nodes, where: str) -> None:
    """A kernel that reshards is placed already, whatever its loops."""
    from tilefoundry.ir.expr import Call

    for node in nodes:
        if isinstance(node, Call) and _name(node) == "reshard":
            from tilefoundry.placer.sequence import _at

            _refuse(where, f"the kernel already reshards a value{_at(node)}; place takes a logical "
                           "(unplaced) kernel: drop its reshards and meshes")


def _named_calls(nodes, loop, where: str) -> tuple:
    """(names, the calls in program order): a call ``v<i>``, the loop's results
    its carried values' names (after the loop a name holds its last value)."""
    from tilefoundry.ir.expr import Call

    names, calls = _Names(), []
    for index, node in enumerate(nodes):
        if not isinstance(node, Call):
            continue
        if _name(node) == "tuple_get_item" and node.args[0] is loop:
            names.text[id(node)] = loop.carried[node.op.index].name
            continue
        if not hasattr(node.type, "shape"):
            _refuse(where, f"'{_name(node)}' makes several values inside the loop's kernel; the loop kind "
                           "keeps one tensor per op")
        names.text[id(node)] = f"v{index}"
        calls.append(node)
    return names, calls


def _lines(calls, names, region, outside: set, made: set) -> tuple:
    """({"before", "in", "after"}: their op lines, {name: (name, shape, dtype)}
    of the values made outside the loop that it reads whole). A slice of an
    outside value in the loop (a trip's input) carries its shape: it is staged."""
    from tilefoundry.ir.expr import Tuple
    from tilefoundry.placer.sequence_ops import op_lines

    lines: dict = {"before": [], "in": [], "after": []}
    staged: dict = {}
    for call in calls:
        if id(call) in made:
            continue
        written = op_lines(call, names, {})
        if region[id(call)] != "in":
            lines[region[id(call)]] += written
            continue
        sliced = _name(call) == "slice" and names.of(call.args[0]) in outside
        lines["in"] += [(t, text, ()) for t, text in written[:-1]]
        lines["in"].append((*written[-1], _shape(call) if sliced else ()))
        for arg in call.args[1 if sliced else 0:]:
            if not isinstance(arg, Tuple) and _shape(arg) and names.of(arg) in outside:
                staged[names.of(arg)] = (names.of(arg), _shape(arg), arg.type.dtype.name)
    return lines, staged


def _members(axes: _Axes, root) -> list:
    return [(name, axis, extent) for (name, axis), extent in axes.extent.items() if axes.find((name, axis)) == root]


def _classes(axes: _Axes, loop, where: str) -> list:
    """The classes no op reads across that hold an axis of every carried value,
    each splitting at most one axis of any value."""
    found = []
    roots = {axes.find(key) for key in axes.extent}
    for root in sorted(roots, key=str):
        if root in axes.closed:
            continue
        members = _members(axes, root)
        held = {name for name, _, _ in members}
        if not all(v.name in held for v in loop.carried):
            continue
        if len(held) != len(members) or min(e for _, _, e in members) < 2:
            continue  # a value split on two axes at once, or an axis of one element
        found.append(root)
    if not found:
        _refuse(where, "no axis of the loop's carried values is data-parallel (every axis is read across "
                       "by a reduction, a contraction or a run-time window), so no CTA can own a share of "
                       "the state; the loop kind splits such an axis")
    return found


def _bytes(dtype: str) -> int:
    from tilefoundry.placer.spaces import _DTYPE_BYTES

    return _DTYPE_BYTES.get(dtype, 4)


def _per_cta(shape: LoopShape, name: str, dims: tuple, dtype: str, choice: LoopChoice) -> int:
    """The bytes of value ``name`` one CTA holds under ``choice``."""
    split = dict(choice.splits)
    count = 1
    for axis, extent in enumerate(dims):
        cls = dict(shape.axes.get(name, ())).get(axis)
        count *= extent // split[cls] if cls in split else extent
    return count * _bytes(dtype)


def _staging_of(shape: LoopShape, choice: LoopChoice, budget) -> dict:
    """carried name -> its level: the choice's where it fits one CTA, else gmem."""
    cap = budget.smem_bytes if choice.staging == "smem" else budget.rmem_bytes
    found = {}
    for name, _, dims, dtype in shape.carried:
        fits = cap is None or _per_cta(shape, name, dims, dtype, choice) <= cap
        found[name] = choice.staging if fits else "gmem"
    return found


def loop_points(shape: LoopShape, budget) -> list[LoopChoice]:
    """Every split of one class, or of two at once, over at most the level's
    units (each CTA walks the whole loop: a second wave walks it again), the
    carried state in smem or rmem; a point where no carried value fits the level
    (each would stay in gmem) is left out."""
    from itertools import combinations
    from math import gcd, prod

    from tilefoundry.placer.spaces import _divisors

    counts = [[d for d in _divisors(gcd(*extents)) if d > 1] for extents in shape.classes]
    found = []
    for width in range(1, MAX_SPLIT_AXES + 1):
        for picked in combinations(range(len(counts)), width):
            for sizes in _products([counts[c] for c in picked]):
                if prod(sizes) > budget.units:
                    continue
                for staging in STAGINGS:
                    choice = LoopChoice(tuple(zip(picked, sizes)), staging, shape.labels)
                    if any(level != "gmem" for level in _staging_of(shape, choice, budget).values()):
                        found.append(choice)
    return found


def _products(options: list) -> list:
    found = [()]
    for values in options:
        found = [done + (v,) for done in found for v in values]
    return found


def loop_surrogate(shape: LoopShape, choice: LoopChoice, budget) -> tuple:
    """The least carried bytes per CTA first (the state each CTA updates every
    trip), then registers before smem."""
    held = sum(_per_cta(shape, name, dims, dtype, choice) for name, _, dims, dtype in shape.carried)
    return held, 0 if choice.staging == "rmem" else 1


def _layout(shape: LoopShape, name: str, dims: tuple, mesh_axes: dict) -> str:
    by_axis = dict(shape.axes.get(name, ()))
    cells = [f"{extent} @ g.{mesh_axes[by_axis[axis]]}" if by_axis.get(axis) in mesh_axes else str(extent)
             for axis, extent in enumerate(dims)]
    return "(" + ", ".join(cells) + ("," if len(cells) == 1 else "") + ")"


def _header(kernel, doc: str, level: str, ctas: int) -> list:
    from tilefoundry.placer.placed_program import _annotation, _class_name, _target_import

    imported, spelled = _target_import(kernel.target)
    params = ", ".join(f"{p.name}: {_annotation(p)}" for p in kernel.params)
    return ['"""' + doc.strip() + '\n"""', "", "from tilefoundry import module", "from tilefoundry.dsl import *",
            imported, "", "", f'@module(entry="{kernel.name}", target={spelled}, '
            f'topologies=(Topology("{level}", {ctas}),))', f"class {_class_name(kernel.name)}:", "    @func",
            f"    def {kernel.name}({params}):"]


def loop_text(kernel, choice: LoopChoice, level: str = "cta", budget=None) -> str:
    """The placed loop of ``kernel`` under ``choice``: one mesh over the split
    classes; the split parameters relabelled onto it in gmem; the values the
    loop reads whole staged once, each trip's slices of the inputs staged every
    trip and the carried values kept, at the choice's level (a carried value
    too large for a CTA's share of it in gmem); the loop as written."""
    from tilefoundry.placer.placed_program import _renamed
    from tilefoundry.placer.spaces import budget_of

    shape = kernel.loop
    budget = budget or budget_of(kernel.target, level)
    one = len(choice.splits) == 1
    mesh_axes = {cls: "p" if one else f"p{j}" for j, (cls, _) in enumerate(choice.splits)}
    tail = "," if one else ""
    sizes = ", ".join(str(n) for _, n in choice.splits) + tail
    spelled = ", ".join(f'"{mesh_axes[c]}"' for c, _ in choice.splits) + tail
    lines = [f'with Mesh(("{level}",), ({sizes}), ({spelled})) as g:']
    outer: dict = {}
    for p in kernel.params:
        if any(cls in mesh_axes for _, cls in shape.axes.get(p.name, ())):
            lines.append(f'    {p.name}_in = tf.reshard({p.name}, {_layout(shape, p.name, p.shape, mesh_axes)}, "gmem")')
            outer[p.name] = f"{p.name}_in"
    lines += [f"    {target} = {_renamed(text, outer)}" for target, text in shape.before]
    inner = dict(outer)
    # the values each trip reads live where the state does: an op reads its
    # operands at one level (registers with registers, smem with smem)
    cap = budget.smem_bytes if choice.staging == "smem" else budget.rmem_bytes
    for name, dims, dtype in shape.staged:
        if cap is None or _per_cta(shape, name, dims, dtype, choice) <= cap:
            lines.append(f'    {name}_s = tf.reshard({outer.get(name, name)}, '
                         f'{_layout(shape, name, dims, mesh_axes)}, "{choice.staging}")')
            inner[name] = f"{name}_s"
    levels = _staging_of(shape, choice, budget)
    for name, init, dims, dtype in shape.carried:
        layout = _layout(shape, name, dims, mesh_axes)
        if not init:  # zeros made where they live: each CTA its own share, never the whole
            lines.append(f'    {name} = tf.zeros(Tensor[{layout}, "{dtype}", "{levels[name]}"])')
            continue
        lines.append(f'    {name} = tf.reshard({outer.get(init, init)}, {layout}, "{levels[name]}")')
    lines.append(f"    {shape.header}")
    for target, text, sliced in shape.body:
        text = _renamed(text, inner)
        if sliced:
            text = f'tf.reshard({text}, {_layout(shape, target, sliced, mesh_axes)}, "{choice.staging}")'
        lines.append(f"        {target} = {text}")
    lines += [f"        {name} = {value}" for name, value in shape.yields if name != value]
    lines += [f"    {target} = {_renamed(text, outer)}" for target, text in shape.after]
    returned = [f'tf.reshard({source}, {_layout(shape, source, dims, mesh_axes)}, "gmem")'
                for source, dims in shape.results]
    lines.append("    return " + ", ".join(returned))
    doc = (f"{kernel.name}: a loop carrying state, placed by `tilefoundry place`: {choice.describe()}; "
           "each CTA walks every trip over its own share of the state.")
    text = _header(kernel, doc, level, choice.ctas) + [f"        {line}" for line in lines]
    return "\n".join(text + list(kernel.converters)) + "\n"

