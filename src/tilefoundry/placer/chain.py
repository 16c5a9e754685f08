"""A chain of GEMV/GEMM stages (an MLP): read off the typed program, written as
one kernel per stage, searched stage by stage.

A **stage** is every matmul of one left operand by a weight (gate and up read
the same row: one stage), the elementwise ops on its results alone (its
epilogue: SiLU(gate) * up), and the row-wise ops that make its left operand
from values in global memory (its prologue, computed whole in every CTA: a
norm between two projections). A stage writes its one output to gmem, where
the next stage reads it: a value crosses a kernel boundary through global
memory exactly where the chain has a matmul whose left operand is made by
another stage.

Every stage runs on one mesh of the same CTAs (the placed Module declares one
topology, and a mesh must cover it), split over the stage's output columns;
each stage walks K in its own tile. So the space is a CTA count C dividing
every stage's N, times a K tile per stage; the objective of a chain is taken as
the sum of its kernels' (each launch is priced on its own), so for each C the
best tile of each stage is found by pricing the stage alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.errors import AnalysisError
from tilefoundry.placer.placed_program import cast_to

__all__ = ["ChainChoice", "Stage", "chain_text", "read_stages", "stage_kernel_text"]


@dataclass(frozen=True)
class Stage:
    """One kernel of a chain.

    Attributes:
        left: the source name of the left operand inside the stage.
        matmuls: (line name, weight name, N, result dtype) of each matmul.
        prologue, epilogue: (line name, op text) in program order.
        inputs: (gmem name, shape, dtype) of each non-weight value read.
        output: (line name, shape, dtype) of the value written to gmem.
        m, k, n: the stage's extents.
    """

    left: str
    left_dtype: str
    matmuls: tuple
    prologue: tuple
    epilogue: tuple
    inputs: tuple
    output: tuple
    m: int
    k: int
    n: int


@dataclass(frozen=True, order=True)
class ChainChoice:
    """A chain placement: every stage over ``ctas`` CTAs (split over its output
    columns), stage ``i`` walking K in ``tiles[i]``."""

    ctas: int
    tiles: tuple

    def describe(self) -> str:
        return (f"{len(self.tiles)} kernels over {self.ctas} CTAs (output columns), K tiles "
                + ", ".join(str(t) for t in self.tiles))


def _refuse(where: str, why: str):
    raise AnalysisError(f"{where}: place: {why}")


def _owners(calls, where):
    """Each call's owner: ("stage", s) for a matmul and its epilogue, ("prologue",)
    for a row-wise op made from gmem values; and the stages' left operands."""
    from tilefoundry.ir.expr import Constant, Var
    from tilefoundry.placer.op_source import ELEMENTWISE, ROW_OPS

    owner, lefts, stage_n = {}, [], []
    for call in calls:
        name = call.op.name
        if name == "matmul":
            left, right = call.args
            if not (isinstance(right, Var) and len(right.type.shape) == 2 and len(left.type.shape) == 2):
                _refuse(where, "a matmul's right operand is not a rank-2 weight parameter; a chain "
                               "multiplies a row by weights")
            key = id(left)
            if key not in [k for k, _ in lefts]:
                lefts.append((key, left))
                stage_n.append(call.type.shape[1])
            s = [k for k, _ in lefts].index(key)
            if call.type.shape[1] != stage_n[s]:
                _refuse(where, f"the matmuls of one row have {stage_n[s]} and {call.type.shape[1]} "
                               "output columns; a stage splits one column count over its CTAs")
            owner[id(call)] = ("stage", s)
            continue
        stages = {owner[id(a)] for a in call.args if id(a) in owner and owner[id(a)][0] == "stage"}
        from_params = any(isinstance(a, Var) for a in call.args)
        shape = tuple(call.type.shape)
        # an epilogue op reads its stage's values and literals only: anything else is
        # not in the stage's kernel when the op runs
        own = all(isinstance(a, Constant) or owner.get(id(a)) in stages for a in call.args)
        if name in ELEMENTWISE and len(stages) == 1 and not from_params and own:
            (s,) = stages
            if shape == (shape[0], stage_n[s[1]]):
                owner[id(call)] = s
                continue
        if len(stages) > 1:
            _refuse(where, f"'{name}' combines the results of two stages; a chain's epilogue reads one stage")
        if name not in ELEMENTWISE and name not in ROW_OPS:
            _refuse(where, f"the op '{name}' is neither a matmul by a weight nor a row-wise op")
        if len(shape) != 2:
            _refuse(where, f"'{name}' makes a value of shape {shape}; a chain keeps (rows, columns) values")
        if not all(isinstance(a, (Var, Constant)) or id(a) in owner for a in call.args):
            _refuse(where, f"'{name}' reads a value place cannot follow")
        owner[id(call)] = ("prologue",)
    return owner, lefts


def read_stages(function, params, calls, where) -> tuple:
    """The stages of a chain kernel, in order; refused in one line where the body
    is not one."""
    from tilefoundry.ir.expr import Var
    from tilefoundry.placer.op_source import op_text

    names = {id(call): f"v{index}" for index, call in enumerate(calls)}
    owner, lefts = _owners(calls, where)
    body = function.body
    if owner.get(id(body), ("",))[0] != "stage" or owner[id(body)][1] != len(lefts) - 1:
        _refuse(where, "the result is not the last stage's output; a chain returns its last stage")

    def ref(node, staged: set) -> str:
        if isinstance(node, Var):
            return node.name + ("_s" if node.name in staged else "")
        if id(node) in names:
            return names[id(node)] + ("_s" if names[id(node)] in staged else "")
        from tilefoundry.render.values import format_value

        return format_value(node.value)

    stages = []
    for s, (_, left) in enumerate(lefts):
        prologue_nodes, inputs, seen = [], [], set()

        def visit(node):  # the prologue closure of the left operand, operands first
            if id(node) in seen:
                return
            seen.add(id(node))
            if isinstance(node, Var):  # a parameter the prologue reads (the row, a norm's gain)
                inputs.append((node.name, node.name, node.type))
                return
            if id(node) not in owner:
                return
            if owner[id(node)][0] == "stage":
                if owner[id(node)][1] >= s:
                    _refuse(where, "a stage's left operand depends on its own or a later stage")
                inputs.append((names[id(node)], names[id(node)] + "_g", node.type))
                return
            for arg in node.args:
                visit(arg)
            prologue_nodes.append(node)

        visit(left)
        staged = {local for local, _, _ in inputs}
        prologue = tuple((names[id(n)], op_text(n.op, [ref(a, staged) for a in n.args]))
                         for n in prologue_nodes)
        mine = [c for c in calls if owner.get(id(c)) == ("stage", s)]
        matmuls = tuple((names[id(c)], c.args[1].name, c.type.shape[1], c.type.dtype.name)
                        for c in mine if c.op.name == "matmul")
        epilogue = tuple((names[id(c)], op_text(c.op, [ref(a, set()) for a in c.args]))
                         for c in mine if c.op.name != "matmul")
        out = _stage_output(mine, calls, s, body, where)
        m, k = left.type.shape
        stages.append(Stage(ref(left, staged), left.type.dtype.name, matmuls, prologue, epilogue,
                            tuple((local, gmem, tuple(t.shape), t.dtype.name) for local, gmem, t in inputs),
                            (names[id(out)], tuple(out.type.shape), out.type.dtype.name), m, k, matmuls[0][2]))
    return tuple(stages)


def _stage_output(mine, calls, s, body, where):
    """The one value of stage ``s`` read outside it (by a later stage or returned)."""
    inside = {id(c) for c in mine}
    read = [c for c in mine if c is body or any(
        id(c) in {id(a) for a in other.args} for other in calls if id(other) not in inside)]
    if len(read) != 1:
        _refuse(where, f"stage {s + 1} of the chain writes {len(read)} values to the next; a chain "
                       "stage writes one")
    return read[0]


def _layout(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def stage_block(stage: Stage, index: int, ctas: int, tile: int, level: str, *, last: bool) -> list:
    """The ``with Mesh`` block of one stage: read its inputs whole into smem, run
    its prologue, walk K in ``tile`` rows of each weight staged in smem with an
    f32 accumulator per matmul, run its epilogue, write its output to gmem."""
    cols = f"{stage.n} @ g.n"
    lines = [f'with Mesh(("{level}",), ({ctas},), ("n",)) as g:']
    for local, gmem, shape, _ in stage.inputs:
        lines.append(f'    {local}_s = tf.reshard({gmem}, {_layout(shape)}, "smem")')
    lines += [f"    {name} = {text}" for name, text in stage.prologue]
    # a stage's own names carry its index: a loop may not rebind another loop's locals
    # the matmuls' operands share the left operand's dtype (matmul's rule): a
    # narrow one goes to the tensor cores as it is, the product in f32
    row, native = stage.left, stage.left_dtype != "f32"
    accs = [f"acc{index}_{j}" for j in range(len(stage.matmuls))]
    for acc in accs:
        lines.append(f'    {acc} = tf.zeros(Tensor[({stage.m}, {cols}), "f32", "rmem"])')
    lines.append(f"    for kk in tile({stage.k}, {tile}):")
    for j, (_, weight, _, _) in enumerate(stage.matmuls):
        w = f"w{index}_{j}"
        lines.append(f'        {w} = tf.reshard({weight}[kk, :], ({tile}, {cols}), "smem")')
        product = f'tf.matmul({row}[:, kk], {w}' + (', out_dtype="f32")' if native else ")")
        lines.append(f'        {accs[j]} = {accs[j]} + tf.reshard({product}, ({stage.m}, {cols}), "rmem")')
    for j, (name, _, _, dtype) in enumerate(stage.matmuls):
        lines.append(f"    {name} = {cast_to(accs[j], dtype)}")
    lines += [f"    {name} = {text}" for name, text in stage.epilogue]
    out = stage.output[0]
    written = f'tf.reshard({out}, ({stage.m}, {cols}), "gmem")'
    lines.append(f"    return {written}" if last else f"    {out}_g = {written}")
    return lines


def chain_text(kernel, choice: ChainChoice, level: str = "cta") -> str:
    """The placed chain: one stage block after another in one function."""
    from tilefoundry.placer.placed_program import _header

    doc = f"{kernel.name}: a chain of {len(kernel.stages)} GEMV/GEMM kernels placed by `tilefoundry place`: {choice.describe()}."
    lines = _header(kernel, doc, [], level, choice.ctas)
    for index, (stage, tile) in enumerate(zip(kernel.stages, choice.tiles)):
        block = stage_block(stage, index, choice.ctas, tile, level, last=index == len(kernel.stages) - 1)
        lines += [f"        {line}" for line in block]
    lines += list(kernel.converters)
    return "\n".join(lines) + "\n"


def stage_kernel_text(kernel, index: int, ctas: int, tile: int, level: str = "cta") -> str:
    """Stage ``index`` alone, as a program of its own (its gmem inputs and weights
    its parameters): what each stage's K tile is priced by."""
    from dataclasses import replace

    from tilefoundry.placer.op_source import Operand
    from tilefoundry.placer.placed_program import _header

    stage = kernel.stages[index]
    weights = {p.name: p for p in kernel.params}
    params = [Operand(gmem, shape, dtype, weights[gmem].const if gmem in weights else False)
              for _, gmem, shape, dtype in stage.inputs]
    params += [weights[w] for _, w, _, _ in stage.matmuls if w not in {p.name for p in params}]
    alone = replace(kernel, name=f"stage{index}", params=tuple(params), result=stage.output[1:])
    lines = _header(alone, f"stage {index} of {kernel.name}", [], level, ctas)
    lines += [f"        {line}" for line in stage_block(stage, index, ctas, tile, level, last=True)]
    return "\n".join(lines) + "\n"


def _stage_bytes(stage: Stage, ctas: int, tile: int) -> int:
    """smem one CTA holds: its inputs whole (and the row), one weight tile per
    matmul (of the row's dtype: matmul's rule), and each f32 product tile."""
    from tilefoundry.placer.spaces import _bytes

    inputs = sum(_bytes(dtype) * _count(shape) for _, _, shape, dtype in stage.inputs)
    row = _bytes(stage.left_dtype) * stage.m * stage.k
    cols = stage.n // ctas
    weights = _bytes(stage.left_dtype) * len(stage.matmuls) * tile * cols
    return inputs + row + weights + 4 * stage.m * cols * len(stage.matmuls)


def chain_empty_reason(kernel, budget) -> str:
    """Why ``chain_points`` found nothing: no CTA count divides every stage's N,
    or a stage overflows smem at its least (the most CTAs, the smallest K tile)."""
    from tilefoundry.placer.spaces import MAX_WAVES, MIN_TILE_K

    counts = [c for c in range(1, budget.units * MAX_WAVES + 1)
              if all(stage.n % c == 0 for stage in kernel.stages)]
    for index, stage in enumerate(kernel.stages):
        least = _stage_bytes(stage, max(counts), min(MIN_TILE_K, stage.k))
        if budget.smem_bytes is not None and least > budget.smem_bytes:
            return (f"stage {index + 1} ({stage.m} x {stage.k} @ {stage.k} x {stage.n}) holds its whole "
                    f"left operand and inputs in smem: {least} B at {max(counts)} CTAs and a K tile of "
                    f"{min(MIN_TILE_K, stage.k)}, more than the {budget.smem_bytes} B a CTA has; a chain "
                    "is a decode step's kernel (a few rows): place a prompt's matmuls one by one")
    return f"no CTA count up to {budget.units * MAX_WAVES} divides every stage's N and fits their K tiles"


def _count(shape) -> int:
    total = 1
    for d in shape:
        total *= d
    return total


def chain_points(kernel, budget) -> list:
    """(CTA count, [K tiles of each stage]) for every CTA count that divides every
    stage's N and fits the level, best surrogate first; a tile is kept where the
    stage's smem fits the per-CTA capacity."""
    from tilefoundry.placer.spaces import MAX_TILE_K, MAX_WAVES, MIN_TILE_K, TRIP_NS, _occupancy

    counts = [c for c in range(1, budget.units * MAX_WAVES + 1)
              if all(stage.n % c == 0 for stage in kernel.stages)]
    plan = []
    for ctas in counts:
        tiles = []
        for stage in kernel.stages:
            fits = [t for t in range(min(MIN_TILE_K, stage.k), min(MAX_TILE_K, stage.k) + 1)
                    if stage.k % t == 0 and (budget.smem_bytes is None
                                             or _stage_bytes(stage, ctas, t) <= budget.smem_bytes)]
            tiles.append(fits)
        if all(tiles):
            moved = sum(2 * stage.k * stage.n * len(stage.matmuls) for stage in kernel.stages)
            surrogate = (moved / budget.bandwidth / _occupancy(ctas, budget.units) * 1e9
                         + sum(TRIP_NS * stage.k // max(t) for stage, t in zip(kernel.stages, tiles)))
            plan.append((surrogate, -ctas, ctas, tiles))
    return [(ctas, tiles) for _, _, ctas, tiles in sorted(plan)]
