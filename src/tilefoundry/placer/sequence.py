"""Any other loop-free logical kernel: read off the typed program as a sequence
of kernels meeting in global memory, each placed on its own.

This is the kind every body the narrower kinds (matmul, attention, chain, rows)
do not take falls to: tuple results, RoPE, KV-cache updates, masked attention,
reshapes, gathers. The body is cut into **pieces**, one kernel each:

- a **GEMV piece** is every matmul of one left operand by a rank-2 weight
  parameter (q, k and v of one row): placed as the zoo's projections are, split
  over its output columns (and, with split-K, over its K: a Partial a reshard
  completes), K walked in a tile staged through smem with an f32 accumulator
  per matmul, each result written to gmem;
- a **glue piece** is every other op between two GEMV depths, in program order
  (a norm, RoPE, the cache writes, a router's softmax and top-k): a
  data-parallel kernel whose *seed* input is split on one axis over ``split``
  CTAs, the rest read whole, every op keeping the split the shard propagation
  carries (an op it cannot carry refuses the point, counted out), or with every
  value in smem (placer/sequence_glue.py); the ops of a level's glue that keep
  the previous GEMV's columns (a conv step) are a glue piece of their own, which
  may be that GEMV's epilogue (sequence_glue.cut_columns).

A value made in one piece and read in another crosses through gmem; an op of
parameters and literals only (an ``arange <= pos`` mask) is computed in each
piece that reads it. Each piece runs over its own count of CTAs: the Module
declares the largest, a piece of fewer runs on a slice of the level.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tilefoundry.errors import AnalysisError
from tilefoundry.placer.placed_program import cast_to
from tilefoundry.placer.sequence_experts import own_description, written_here
from tilefoundry.placer.sequence_glue import _layout, completed, cut_columns

__all__ = ["Piece", "SequenceChoice", "read_pieces", "piece_text", "sequence_text"]


@dataclass(frozen=True)
class Piece:
    """One kernel of the sequence.

    Attributes:
        kind: "gemv", "glue" or "attention" (a masked decode attention found in
            a glue piece: placer/sequence_attention.py).
        lines: glue: (assigned names, op text) in program order; gemv:
            (result name, weight name, N, result dtype) of each matmul.
        inputs: (name, shape, dtype, const) of every value it reads that a
            parameter or another piece made.
        outputs: names of the values it leaves in gmem for later pieces or the result.
        left, m, k: a gemv piece's left operand and its extents.
    """

    kind: str
    lines: tuple
    inputs: tuple
    outputs: tuple
    left: str = ""
    m: int = 0
    k: int = 0
    core: object = None  # an "attention" piece: placer.sequence_attention.Core
    # a glue piece: (assigned name, ((operand source, shape), ...)) of each op, for
    # a seed that completes a Partial before the op that reads it
    operands: tuple = ()
    experts: object = None  # a glue piece: placer.sequence_experts.Experts, its expert core
    shapes: tuple = ()  # (name, shape) of each output
    columns: tuple = ()  # a GEMV's column part (sequence_glue.cut_columns): (value, its column axis)


@dataclass(frozen=True, order=True)
class SequenceChoice:
    """The sequence over at most ``ctas`` CTAs, the level's size the placed Module
    declares. ``tiles`` of each GEMV piece: (split-K, K tile), its output columns
    over ``count / split-K`` CTAs; ``seeds`` of each glue piece ((input names),
    (their split axes), split, "replicas", (value, operand) pairs whose operand is
    completed before the value's op), or () (whole); ``kinds`` and ``counts``
    each piece's kind and CTA count in program order (a piece of fewer CTAs than
    ``ctas`` runs on a slice of the level; a fused glue piece takes the next
    piece's count)."""

    ctas: int
    tiles: tuple
    seeds: tuple
    cores: tuple = ()  # of each attention piece: (KV heads split, KV block)
    fused: tuple = ()  # glue pieces run as the next piece's prologue (their seed is ())
    kinds: tuple = ()  # of each piece: "gemv", "glue", "attention"; () where counts is
    counts: tuple = ()  # of each piece; () where every piece runs over ``ctas``
    epilogues: tuple = ()  # glue pieces run as the previous GEMV's epilogue (their seed is ())

    def count_of(self, index: int) -> int:
        """The CTA count piece ``index`` runs over."""
        return self.counts[index] if self.counts else self.ctas

    def _counts(self, kind: str) -> list:
        if not self.counts:
            return [self.ctas] * len({"gemv": self.tiles, "glue": self.seeds, "attention": self.cores}[kind])
        return [c for c, k in zip(self.counts, self.kinds) if k == kind]

    def describe(self) -> str:
        count = len(self.tiles) + len(self.seeds) + len(self.cores) - len(self.fused) - len(self.epilogues)
        parts = [f"{count} kernels over {'at most ' if len(set(self.counts)) > 1 else ''}{self.ctas} CTAs"]
        for (split_k, tile), ctas in zip(self.tiles, self._counts("gemv")):
            cut = f" x split-K {split_k}" if split_k > 1 else ""
            parts.append(f"GEMV over {ctas // split_k} output-column CTAs{cut}, K tile {tile}")
        for (heads, block), ctas in zip(self.cores, self._counts("attention")):
            parts.append(f"flash decoding over {heads} head-group CTAs x {ctas // heads} splits, KV block {block}")
        if self.fused:
            parts.append(f"{len(self.fused)} glue piece{'s' if len(self.fused) > 1 else ''} run as the next "
                         "kernel's prologue")
        if self.epilogues:
            parts.append(f"{len(self.epilogues)} glue piece{'s' if len(self.epilogues) > 1 else ''} run as the "
                         "previous GEMV's epilogue")
        glue = [i for i, kind in enumerate(self.kinds) if kind == "glue"] or range(len(self.seeds))
        for seed, ctas, index in zip(self.seeds, self._counts("glue"), glue):
            if index in self.fused + self.epilogues:  # said above: it runs inside another kernel
                continue
            if not seed:
                parts.append("glue whole" + (f" over {ctas} CTAs" if ctas > 1 else ""))
                continue
            from tilefoundry.placer.sequence_glue import glue_description

            parts.append(own_description(seed) if written_here(seed) else glue_description(seed, ctas))
        return "; ".join(parts)


def _refuse(where: str, why: str):
    raise AnalysisError(f"{where}: place: {why}")


#: the fewest output columns a GEMV piece splits over CTAs: a narrower matmul by a
#: weight (a shared expert's one-column gate) is glue, computed whole where it is read,
#: so that it does not force every kernel of the sequence onto one CTA
MIN_GEMV_COLUMNS = 16


def _is_gemv(call, weights: set) -> bool:
    """A matmul of a rank-2 row by a rank-2 weight parameter of at least
    ``MIN_GEMV_COLUMNS`` output columns."""
    from tilefoundry.ir.expr import Var

    if getattr(call.op, "name", None) != "matmul":
        return False
    left, right = call.args
    return (isinstance(right, Var) and right.name in weights and len(right.type.shape) == 2
            and len(left.type.shape) == 2 and right.type.shape[1] >= MIN_GEMV_COLUMNS)


class _Names:
    """Each node's source spelling: a parameter's name, a literal, ``v<i>`` for a
    call, ``v<i>_<j>`` for element j of a call that makes a tuple."""

    def __init__(self):
        self.text: dict = {}

    def of(self, node) -> str:
        from tilefoundry.ir.expr import Constant, Tuple, Var

        if isinstance(node, Var):
            return node.name
        if isinstance(node, Constant):
            from tilefoundry.render.values import format_value

            return format_value(node.value)
        if isinstance(node, Tuple) and id(node) not in self.text:  # a tuple operand (a slice's starts)
            fields = [self.of(f) for f in node.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        return self.text[id(node)]


def _lines(call, names, elements) -> list:
    from tilefoundry.placer.sequence_ops import op_lines

    return op_lines(call, names, elements)


def _at(node) -> str:
    """`` (at file:line:col)`` where the node was written (a called kernel's line
    names which callee is placed already), else nothing."""
    from tilefoundry.ir.metadata import SourceSpanMetadata

    span = node.get_metadata(SourceSpanMetadata)
    return f" (at {span})" if span is not None else ""


def _walk(function, where: str):
    """(calls in program order, names, tuple element names of each tuple call,
    the result names)."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var
    from tilefoundry.ir.tensor_type import TensorType

    names, calls, elements = _Names(), [], {}
    for index, node in enumerate(iter_nodes(function.body)):
        if isinstance(node, GridRegionExpr):
            _refuse(where, f"the kernel already walks a loop{_at(node)}; place takes a logical (unplaced, "
                           "loop-free) kernel")
        if isinstance(node, (Var, Constant)):
            continue
        if isinstance(node, Tuple):
            continue  # an inlined call's results: its elements are read by tuple_get_item
        if not isinstance(node, Call):
            _refuse(where, f"a {type(node).__name__} node is in the body; place reads ops over tensors")
        name = getattr(node.op, "name", None)
        if name == "reshard":
            _refuse(where, f"the kernel already reshards a value{_at(node)}; place takes a logical "
                           "(unplaced) kernel: drop its reshards and meshes")
        if name == "tuple_get_item":
            source = node.args[0]
            if isinstance(source, Tuple):
                names.text[id(node)] = names.of(source.fields[node.op.index])
            else:
                names.text[id(node)] = elements[id(source)][node.op.index]
            continue
        names.text[id(node)] = f"v{index}"
        if not isinstance(node.type, TensorType):
            count = len(node.type.fields)
            elements[id(node)] = tuple(f"v{index}_{j}" for j in range(count))
        calls.append(node)
    body = function.body
    results = ([names.of(f) for f in body.fields] if isinstance(body, Tuple) else [names.of(body)])
    return calls, names, elements, results


def _depths(calls, gemv_ids) -> dict:
    """The GEMV depth of each call: a GEMV is one deeper than its left operand, any
    other op as deep as its deepest operand (parameters and literals at 0)."""
    depth: dict = {}

    def of(node) -> int:
        return depth.get(id(node), 0)

    for call in calls:
        if id(call) in gemv_ids:
            depth[id(call)] = of(call.args[0]) + 1
        else:
            depth[id(call)] = max((of(a) for a in _operands(call)), default=0)
    return depth


def _operands(call) -> list:
    """The operands of a call, through the tuples an inlined call returns."""
    from tilefoundry.ir.expr import Call, Tuple

    found = []
    for arg in call.args:
        while isinstance(arg, Call) and getattr(arg.op, "name", None) == "tuple_get_item":
            source = arg.args[0]
            arg = source.fields[arg.op.index] if isinstance(source, Tuple) else source
        found.append(arg)
    return found


def _resolve(node):
    """The call (or parameter) a value is made by, through tuple reads."""
    from tilefoundry.ir.expr import Call, Tuple

    while isinstance(node, Call) and getattr(node.op, "name", None) == "tuple_get_item":
        source = node.args[0]
        node = source.fields[node.op.index] if isinstance(source, Tuple) else source
    return node


def _param_only(calls, gemv_ids) -> set:
    """Calls that read only parameters, literals and other such calls."""
    from tilefoundry.ir.expr import Call

    found: set = set()
    for call in calls:
        if id(call) in gemv_ids:
            continue
        if all(not isinstance(a, Call) or id(a) in found for a in _operands(call)):
            found.add(id(call))
    return found


def _levels(calls, gemv_ids, depth, results) -> dict:
    """The glue levels each non-GEMV call is computed at: its depth; a call of
    parameters only at every level that reads it (recomputed, never crossing)."""
    from tilefoundry.ir.expr import Call

    cheap = _param_only(calls, gemv_ids)
    readers: dict = {}
    for call in calls:
        for arg in _operands(call):
            if isinstance(arg, Call):
                readers.setdefault(id(arg), []).append(call)
    levels: dict = {}
    for call in reversed(calls):
        if id(call) in gemv_ids:
            continue
        if id(call) not in cheap:
            levels[id(call)] = {depth[id(call)]}
            continue
        wanted = {depth[id(call)]} if id(call) in results else set()
        for reader in readers.get(id(call), ()):
            wanted |= ({depth[id(reader)] - 1} if id(reader) in gemv_ids else levels[id(reader)])
        levels[id(call)] = wanted or {depth[id(call)]}
    return levels


def read_pieces(function, params, where: str) -> tuple:
    """(the pieces of a logical kernel in the order they run, the result names)."""
    from tilefoundry.ir.expr import Call, Tuple, Var

    calls, names, elements, result_names = _walk(function, where)
    weights = {p.name for p in params if p.const}
    gemv_ids = {id(c) for c in calls if _is_gemv(c, weights)}
    depth = _depths(calls, gemv_ids)
    body = function.body
    result_nodes = [_resolve(f) for f in (body.fields if isinstance(body, Tuple) else (body,))]
    if any(isinstance(r, Var) for r in result_nodes):
        _refuse(where, "the kernel returns a parameter unchanged; there is nothing to place")
    levels = _levels(calls, gemv_ids, depth, {id(r) for r in result_nodes})
    top = max(depth.values(), default=0)
    members: list = []  # (kind, [calls], left)
    for level in range(top + 1):
        if level:
            lefts: dict = {}
            for call in calls:
                if id(call) in gemv_ids and depth[id(call)] == level:
                    lefts.setdefault(id(_resolve(call.args[0])), []).append(call)
            members += [("gemv", group, group[0].args[0]) for group in lefts.values()]
        glue = [c for c in calls if id(c) not in gemv_ids and level in levels[id(c)]]
        if glue:
            members += cut_columns(members, _split_core(glue, names), names, _resolve)
    return _pieces(members, names, elements, result_nodes, result_names, params), tuple(result_names)


def _split_core(glue: list, names) -> list:
    """A glue group as members: the group itself, or, where it holds a masked
    decode attention, the glue before it, the attention, the glue after it."""
    from tilefoundry.placer.sequence_attention import find_core

    from tilefoundry.placer.sequence_experts import find_experts

    found = find_core(glue, names, _resolve)
    if found is None:
        return [("glue", glue, find_experts(glue, names, _resolve))]
    core_calls, core = found
    inside = {id(c) for c in core_calls}
    out = next(c for c in core_calls if names.of(c) == core.out)
    after, reached = [], {id(out)}
    for call in glue:
        if id(call) not in inside and any(id(a) in reached for a in _operands(call)):
            reached.add(id(call))
            after.append(call)
    before = [c for c in glue if id(c) not in inside and id(c) not in reached]
    return [m for m in (("glue", before, None), ("attention", core_calls, core), ("glue", after, None)) if m[1]]


def _pieces(members, names, elements, result_nodes, result_names, params) -> tuple:
    from tilefoundry.ir.expr import Call, Var

    kinds = {p.name: p for p in params}
    made_in = {}
    for index, (_, group, _) in enumerate(members):
        for call in group:
            made_in.setdefault(id(call), set()).add(index)
    pieces = []
    for index, (kind, group, left) in enumerate(members):
        mine = {id(c) for c in group}
        inputs: dict = {}
        for call in group:
            for arg, raw in zip(_operands(call), call.args):
                if isinstance(arg, Var):
                    p = kinds[arg.name]
                    if kind != "gemv" or arg is left:
                        inputs[arg.name] = (arg.name, p.shape, p.dtype, p.const)
                elif isinstance(arg, Call) and id(arg) not in mine:
                    inputs[names.of(raw)] = (names.of(raw), tuple(raw.type.shape), raw.type.dtype.name, False)
        outputs = []
        for later, (_, others, _) in enumerate(members):
            for call in others:
                if later == index:
                    continue
                for arg, raw in zip(_operands(call), call.args):
                    if id(arg) in mine and index == min(made_in[id(arg)]) and id(arg) not in {id(c) for c in others}:
                        outputs.append(names.of(raw))
        for node, name in zip(result_nodes, result_names):
            if id(node) in mine and index == min(made_in[id(node)]):
                outputs.append(name)
        outputs = tuple(dict.fromkeys(outputs))
        shapes = tuple((name, tuple(getattr(node.type, "shape", ()))) for name, node in _made_nodes(
            group, members, index, names, result_nodes, result_names) if name in outputs)
        if kind == "gemv":
            lines = tuple((names.of(c), c.args[1].name, c.type.shape[1], c.type.dtype.name) for c in group)
            m, k = left.type.shape
            pieces.append(Piece("gemv", lines, tuple(inputs.values()), outputs, names.of(left), m, k, shapes=shapes))
        elif kind == "attention":
            pieces.append(Piece("attention", (), tuple(inputs.values()), outputs, core=left))
        else:
            operands = tuple((names.of(c), tuple((names.of(a), tuple(getattr(a.type, "shape", ())))
                                                  for a in c.args)) for c in group if id(c) not in elements)
            pieces.append(Piece("glue", tuple(line for c in group for line in _lines(c, names, elements)),
                                tuple(inputs.values()), outputs, operands=operands,
                                experts=left if kind == "glue" else None, columns=left if kind == "columns" else (),
                                shapes=shapes))
    return tuple(pieces)


def _made_nodes(group, members, index, names, result_nodes, result_names):
    """(name, node) of every value the members read from another and of every result."""
    for later, (_, others, _) in enumerate(members):
        if later != index:
            yield from ((names.of(raw), raw) for call in others for raw in call.args)
    yield from zip(result_names, result_nodes)


def _glue_block(piece: Piece, ctas: int, seed, level: str) -> list:
    """A glue piece over its own ``ctas`` CTAs: its seed inputs (and values it
    makes that the seed names) split over ``p``, values of other pieces read
    onto this mesh whole, the ops as written, every value in gmem; a split
    below ``ctas`` repeats its work over the ``C / split``
    replicas of a ``(split, C / split)`` mesh (the search gives each glue piece
    as many CTAs as its split: sequence_text runs it on a slice of the level)."""
    from tilefoundry.placer.placed_program import _renamed
    from tilefoundry.placer.sequence_experts import own_block, written_here

    from tilefoundry.placer.sequence_glue import glue_mesh, is_staged, staged_seed_block

    if written_here(seed) or is_staged(seed):  # no seed in gmem: sequence_experts.py, sequence_glue.py
        return (own_block if written_here(seed) else staged_seed_block)(piece, ctas, seed, level)
    names, axes, split, _, complete = seed if seed else ((), (), 1, "replicas", ())
    axis_of = dict(zip(names, axes))
    lines, pad = [glue_mesh(level, ctas, split)], "    "
    renamed = {}
    for name, shape, _, const in piece.inputs:
        if name in axis_of:
            lines.append(f'{pad}{name}_in = tf.reshard({name}, {_layout(shape, axis_of[name])}, "gmem")')
        elif not _is_param_name(name, piece):
            lines.append(f'{pad}{name}_in = tf.reshard({name}, {_layout(shape)}, "gmem")')
        else:
            continue
        renamed[name] = f"{name}_in"
    operands = dict(piece.operands)
    for targets, text in piece.lines:
        # a Partial the op cannot read: completed (summed over the split) first
        text = completed(lines, pad, targets, _renamed(text, renamed), complete, operands, renamed, "gmem")
        lines.append(f"{pad}{targets} = {text}")
        if targets in axis_of and targets not in renamed:
            # a value made here that the seed splits: the ops after it read it split
            shape = next(shape for _, args in piece.operands for source, shape in args if source == targets)
            lines.append(f'{pad}{targets}_s = tf.reshard({targets}, {_layout(shape, axis_of[targets])}, "gmem")')
            renamed[targets] = f"{targets}_s"
    return lines


def _is_param_name(name: str, piece: Piece) -> bool:
    """Values other pieces make are named ``v<i>`` (``v<i>_<j>``); parameters keep theirs."""
    return not re.fullmatch(r"v\d+(_\d+)?", name)


def _gemv_block(piece: Piece, index: int, ctas: int, setting, level: str) -> list:
    """A GEMV piece over ``ctas`` CTAs (setting: split-K, K tile): the row whole
    in smem, each weight over its output columns across ``ctas / split-K`` CTAs
    walked in ``tile`` rows (one tile of the whole K: no loop), an f32
    accumulator per matmul; with split-K, CTA ``s`` of a column group takes the
    ``s``-th tile of every window into a partial on a split axis summed at the
    end (as the matmul kind's split-K, placed_program.py)."""
    from tilefoundry.placer.spaces import gemv_piece_native

    split_k, tile = setting
    cols = ctas // split_k
    native = gemv_piece_native(piece)  # narrow tiles into the tensor cores as they are

    def staged(src: str, layout: str) -> str:  # in smem, an f32 copy unless native
        value = f'tf.reshard({src}, ({layout}), "smem")'
        as_is = native or (src == piece.left and left_dtype == "f32")
        return value if as_is else f'tf.cast({value}, "f32")'

    def product(left: str, w: str) -> str:
        return f'tf.matmul({left}, {w}, out_dtype="f32")' if native else f"tf.matmul({left}, {w})"
    left_dtype = next((d for n, _, d, _ in piece.inputs if n == piece.left), "f32")
    row, m = f"row{index}", piece.m
    axes = [(name, size) for name, size in (("n", cols), ("ks", split_k)) if size > 1] or [("n", 1)]
    shape = ", ".join(str(size) for _, size in axes)
    names = ", ".join(f'"{name}"' for name, _ in axes)
    one = "," if len(axes) == 1 else ""
    lines = [f'with Mesh(("{level}",), ({shape}{one}), ({names}{one})) as g:',
             f"    {row} = {staged(piece.left, f'{m}, {piece.k}')}"]

    def out(n: int) -> str:  # the output columns over the column CTAs
        from tilefoundry.placer.sequence_ops import column_layout

        return column_layout(n, ctas, setting)

    part = f"{split_k} @ g.ks, " if split_k > 1 else ""
    if split_k == 1 and tile == piece.k:  # K whole in one tile: no loop, no running sum
        for j, (_, weight, n, _) in enumerate(piece.lines):
            lines.append(f"    w{index}_{j} = {staged(weight, f'{tile}, {out(n)}')}")
            lines.append(f'    acc{index}_{j} = tf.reshard({product(row, f"w{index}_{j}")}, ({m}, {out(n)}), "rmem")')
        return lines + _gemv_outputs(piece, index, split_k, m, out)
    for j, (_, _, n, _) in enumerate(piece.lines):
        lines.append(f'    acc{index}_{j} = tf.zeros(Tensor[({part}{m}, {out(n)}), "f32", "rmem"])')
    lines.append(f"    for kk in tile({piece.k}, {tile * split_k}):")
    left = f"{row}[:, kk]"
    if split_k > 1:
        lines.append(f"        # window kk holds {split_k} tiles of K: tile s is split s's share")
        lines.append(f"        a{index} = tf.transpose(tf.reshape({row}[:, kk], ({m}, {split_k}, {tile})), (1, 0, 2))")
        left = f"a{index}"
    for j, (_, weight, n, _) in enumerate(piece.lines):
        window = f"{weight}[kk, :]" if split_k == 1 else f"tf.reshape({weight}[kk, :], ({split_k}, {tile}, {n}))"
        lines.append(f"        w{index}_{j} = {staged(window, f'{part}{tile}, {out(n)}')}")
        lines.append(f"        acc{index}_{j} = acc{index}_{j} + tf.reshard({product(left, f'w{index}_{j}')}, "
                     f'({part}{m}, {out(n)}), "rmem")')
    if split_k > 1:
        lines.append("    # the split axis summed: a Partial over `ks` that the reshard completes")
    return lines + _gemv_outputs(piece, index, split_k, m, out)


def _gemv_outputs(piece: Piece, index: int, split_k: int, m: int, out) -> list:
    """Each accumulator (its split axis summed) cast to its dtype and written to gmem."""
    lines = []
    for j, (name, _, n, dtype) in enumerate(piece.lines):
        value = f"acc{index}_{j}"
        if split_k > 1:
            value = f'tf.reshard(tf.reduce({value}, (0,), False, ReduceKind.SUM), ({m}, {out(n)}), "smem")'
        value = cast_to(value, dtype)
        lines.append(f'    {name} = tf.reshard({value}, ({m}, {out(n)}), "gmem")')
    return lines


def _header(kernel, name: str, params, doc: str, level: str, ctas: int) -> list:
    from tilefoundry.placer.placed_program import _annotation, _class_name, _target_import

    imported, spelled = _target_import(kernel.target)
    lines = ['"""' + doc.strip() + '\n"""', "", "from tilefoundry import module",
             "from tilefoundry.dsl import *", imported, "", "",
             f'@module(entry="{name}", target={spelled}, topologies=(Topology("{level}", {ctas}),))',
             f"class {_class_name(name)}:", "    @func"]
    lines.append(f"    def {name}({', '.join(f'{p.name}: {_annotation(p)}' for p in params)}):")
    return lines


def _block_of(kernel, index: int, ctas: int, setting, level: str, prologue: list) -> list:
    """One piece's ``with Mesh`` block; ``prologue`` (a fused glue piece's lines,
    computed whole in every CTA) right after the mesh line."""
    piece = kernel.pieces[index]
    if piece.kind == "gemv":
        block = _gemv_block(piece, index, ctas, setting, level)
    elif piece.kind == "attention":
        from tilefoundry.placer.sequence_attention import core_block

        block = core_block(piece, ctas, setting, level)
    else:
        block = _glue_block(piece, ctas, setting, level)
    return block[:1] + prologue + block[1:]


def _prologue(kernel, index: int, ctas: int, level: str) -> list:
    """Glue piece ``index`` as lines of the next piece's block (whole, no mesh line)."""
    return _glue_block(kernel.pieces[index], ctas, (), level)[1:]


def piece_text(kernel, index: int, ctas: int, setting, level: str = "cta", *, fused: bool = False,
               epilogue: bool = False) -> str:
    """Piece ``index`` alone, as a program of its own (its inputs and weights its
    parameters; ``ctas`` its own count, ``setting`` its (split-K, K tile), seed or
    flash-decoding split): what each piece is priced by. ``fused``: with the glue
    piece before it as its prologue; ``epilogue``: with the glue piece after it as
    its epilogue (sequence_ops.epilogue_block)."""
    from tilefoundry.placer.op_source import Operand
    from tilefoundry.placer.sequence_ops import epilogue_block, epilogue_outputs

    piece = kernel.pieces[index]
    weights = {p.name: p for p in kernel.params}
    inputs = list(piece.inputs) + (list(kernel.pieces[index + 1].inputs) if epilogue else [])
    inputs = [i for i in inputs if not (epilogue and i[0] in piece.outputs)]
    prologue = []
    if fused:
        glue = kernel.pieces[index - 1]
        inputs = list(glue.inputs) + [i for i in inputs if i[0] not in set(glue.outputs)]
        prologue = _prologue(kernel, index - 1, ctas, level)
    params = [Operand(n, shape, dtype, const) for n, shape, dtype, const in dict((i[0], i) for i in inputs).values()]
    if piece.kind == "gemv":
        params += [weights[w] for _, w, _, _ in piece.lines if w not in {p.name for p in params}]
    block = _block_of(kernel, index, ctas, setting, level, prologue)
    block = epilogue_block(kernel, index + 1, block, ctas, setting) if epilogue else block
    lines = _header(kernel, f"piece{index}", params, f"piece {index} of {kernel.name}", level, ctas)
    lines += [f"        {line}" for line in block]
    lines.append("        return " + ", ".join(epilogue_outputs(kernel, index) if epilogue else piece.outputs))
    return "\n".join(lines) + "\n"


def sequence_text(kernel, choice: SequenceChoice, level: str = "cta") -> str:
    """The placed sequence: one block per piece in one function (a fused glue
    piece inside the next one's), each over its own count of CTAs, on a slice
    of the level where that is below the count the Module declares; then the
    results."""
    from tilefoundry.placer.placed_program import on_level
    from tilefoundry.placer.sequence_ops import epilogue_block

    doc = (f"{kernel.name}: {len(kernel.pieces) - len(choice.fused + choice.epilogues)} kernels meeting in gmem, "
           "placed by "
           f"`tilefoundry place`: {choice.describe()}.")
    lines = _header(kernel, kernel.name, kernel.params, doc, level, choice.ctas)
    settings = {"gemv": iter(choice.tiles), "glue": iter(choice.seeds), "attention": iter(choice.cores)}
    for index, piece in enumerate(kernel.pieces):
        setting = next(settings[piece.kind])
        if index in choice.fused or index in choice.epilogues:
            continue
        ctas = choice.count_of(index)
        prologue = _prologue(kernel, index - 1, ctas, level) if index - 1 in choice.fused else []
        block = _block_of(kernel, index, ctas, setting, level, prologue)
        if index + 1 in choice.epilogues:
            block = epilogue_block(kernel, index + 1, block, ctas, setting)
        lines += [f"        {line}" for line in [on_level(block[0], choice.ctas)] + block[1:]]
    lines.append("        return " + ", ".join(kernel.results))
    lines += list(kernel.converters)
    return "\n".join(lines) + "\n"
