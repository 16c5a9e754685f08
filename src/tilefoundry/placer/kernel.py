"""What `place` is asked to place: a logical kernel read off its typed program.

A kernel is recognised by the structure of its checked, inlined view, never by
its name: a **matmul** is one ``matmul`` of two rank-2 parameters (a GEMM, or a
GEMV when M is 1), or of two rank-3 ones with one batch extent, that is the
function's result or feeds an elementwise epilogue (a bias row, an
activation, a residual: rank-2 only), the second perhaps read through its
transpose (a weight stored (N, K), as a PyTorch Linear keeps it); a **chain** is several
matmuls by weights with elementwise epilogues and row-wise prologues (an MLP:
placer/chain.py); a **rows** kernel is a body of
row-wise ops only (elementwise ops, casts, last-axis reductions and
normalisations) over ``(R, H)`` or ``(B, S, H)`` parameters and rank-1 ``(H,)``
parameters broadcast along the rows. Anything else is refused in one line that
says which op or value keeps it out of the space (docs/place.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.errors import AnalysisError

from tilefoundry.placer.op_source import ELEMENTWISE, ROW_OPS, Operand, op_text

__all__ = ["Kernel", "Operand", "read_kernel"]

@dataclass(frozen=True)
class Kernel:
    """One logical kernel, as the search and the program writer need it.

    Attributes:
        kind: "matmul", "attention" (decode attention: placer/attention.py), "chain"
            (several GEMV/GEMM stages: placer/chain.py), "rows", "sequence"
            (placer/sequence.py) or "loop" (a loop carrying state: placer/loop.py).
        name: the function's name (the placed program keeps it).
        params: the parameters, in order.
        result: (shape, dtype name) of the one result.
        lines: for "rows", the body as (name, op text over parameter and line
            names) in program order; empty for "matmul".
        returned: for "rows", the name of the returned line.
        target: the Target the kernel is placed for.
        where: ``file:line`` of the function (for messages).
    """

    kind: str
    name: str
    params: tuple
    result: tuple
    lines: tuple = ()
    returned: str = ""
    target: object = None
    where: str = ""
    stages: tuple = ()  # for "chain": placer.chain.Stage, in order
    attention: object = None  # for "attention": placer.attention.AttentionShape
    pieces: tuple = ()  # for "sequence": placer.sequence.Piece, in the order they run
    results: tuple = ()  # for "sequence": the names the placed function returns
    converters: tuple = ()  # the function's weight converters as class-body source lines
    loop: object = None  # for "loop": placer.loop.LoopShape
    b_transposed: bool = False  # for "matmul": B is given (N, K) and read through its transpose
    product: str = ""  # for a matmul with an epilogue (``lines`` over "mm"): the product's dtype

    @property
    def dims(self) -> dict:
        """The named extents of a matmul: M, K, N, and B where it is batched."""
        a, b = self.params[0].shape, self.params[1].shape
        named = {"M": a[-2], "K": a[-1], "N": b[-2] if self.b_transposed else b[-1]}
        return {"B": a[0], **named} if len(a) == 3 else named


def _static_shape(type_, what: str, where: str) -> tuple:
    shape = tuple(type_.shape)
    if not all(isinstance(d, int) for d in shape):
        raise AnalysisError(f"{where}: place: {what} has shape {shape}, which is not static; "
                         "place searches static shapes only: bind the DimVar (--dim NAME=EXTENT)")
    return shape


def _operands(function, where: str) -> tuple:
    from tilefoundry.ir.tensor_type import TensorType

    found = []
    for param in function.params:
        if not isinstance(param.type, TensorType):
            raise AnalysisError(f"{where}: place: parameter '{param.name}' is a {type(param.type).__name__}, "
                             "not a tensor; place takes kernels over tensors")
        shape = _static_shape(param.type, f"parameter '{param.name}'", where)
        found.append(Operand(param.name, shape, param.type.dtype.name, bool(param.is_const)))
    return tuple(found)


def _calls(function, where: str) -> list:
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple

    nodes = iter_nodes(function.body)
    for node in nodes:
        if isinstance(node, GridRegionExpr):
            raise AnalysisError("place: the kernel already walks a loop; place takes a logical "
                             "(unplaced, loop-free) kernel")
        if isinstance(node, Tuple):
            raise AnalysisError("place: the kernel returns or builds a tuple; place takes a kernel of one result")
    calls = [node for node in nodes if isinstance(node, Call)]
    from tilefoundry.ir.tensor_type import TensorType

    for call in calls:
        if not isinstance(call.type, TensorType):
            raise AnalysisError(f"{where}: place: '{getattr(call.op, 'name', call.op)}' makes several values "
                                "(a tuple); place's kernels keep one tensor per op")
    return calls


def _check_unplaced(calls, where: str) -> None:
    for call in calls:
        if getattr(call.op, "name", None) == "reshard":
            raise AnalysisError(f"{where}: place: the kernel already reshards a value; place takes a "
                             "logical (unplaced) kernel: drop its reshards and meshes")


def _matmul(function, params, calls, where) -> Kernel | None:
    from tilefoundry.ir.expr import Var

    matmuls = [c for c in calls if getattr(c.op, "name", None) == "matmul"]
    if len(matmuls) != 1:
        return None
    epilogue = _epilogue(function, params, calls, matmuls[0])
    if epilogue is None:
        return None
    a, b = matmuls[0].args
    # x @ W^T with W stored (N, K), as a PyTorch Linear keeps its weight: read
    # through the transpose, never a transposed copy of the weight
    rank = len(a.type.shape)  # 2, or 3 for a batch of products (one batch extent on both sides)
    turned = (1, 0) if rank == 2 else (0, 2, 1)
    transposed = getattr(b, "op", None) is not None and getattr(b.op, "name", None) == "transpose" \
        and tuple(b.op.perm) == turned and isinstance(b.args[0], Var)
    if transposed:
        b = b.args[0]
    if len(calls) != 1 + transposed + len(epilogue) or (epilogue and rank != 2):
        return None
    if not (isinstance(a, Var) and isinstance(b, Var) and rank in (2, 3) and len(b.type.shape) == rank):
        return None
    if rank == 3 and a.type.shape[0] != b.type.shape[0]:
        return None
    read = {p.name for p in params[2:]}  # the epilogue's operands (a bias, a residual)
    if [p.name for p in params[:2]] != [a.name, b.name] or read - _names_in(epilogue):
        return None
    shape = _static_shape(function.body.type, "the result", where)
    return Kernel("matmul", function.name, params, (shape, function.body.type.dtype.name),
                  tuple(epilogue), epilogue[-1][0] if epilogue else "", where=where,
                  b_transposed=transposed, product=matmuls[0].type.dtype.name if epilogue else "")


def _epilogue(function, params, calls, product) -> list | None:
    """The elementwise ops from the matmul to the function's result, each over the
    running value (named ``mm`` from the product on), literals and parameters of
    the output's shape or its ``(N,)`` row: [(name, op text)]; [] where the
    product is the result; None where anything else is read or made."""
    from tilefoundry.ir.expr import Constant, Var
    from tilefoundry.render.values import format_value

    out = tuple(product.type.shape)
    shapes = {p.name: tuple(p.shape) for p in params}
    names, lines, running = {id(product): "mm"}, [], product
    for call in calls[calls.index(product) + 1:]:
        refs = []
        for arg in call.args:
            if isinstance(arg, Constant):
                refs.append(format_value(arg.value))
            elif isinstance(arg, Var) and shapes.get(arg.name) in (out, out[-1:]):
                refs.append(arg.name)
            elif id(arg) in names and arg is running:
                refs.append(names[id(arg)])
            else:
                return None
        if call.op.name not in ELEMENTWISE or tuple(call.type.shape) != out \
                or not any(arg is running for arg in call.args):
            return None
        names[id(call)] = f"e{len(lines)}"
        lines.append((names[id(call)], op_text(call.op, refs)))
        running = call
    return lines if function.body is running else None


def _names_in(lines) -> set:
    import re

    return {word for _, text in lines for word in re.findall(r"[A-Za-z_]\w*", text)}


def _attention(function, params, calls, where) -> Kernel | None:
    """softmax(q @ k^T * scale) @ v over a KV cache: placer/attention.py."""
    from tilefoundry.placer.attention import read_attention

    shape = read_attention(function, params, calls)
    if shape is None:
        return None
    result = _static_shape(function.body.type, "the result", where)
    return Kernel("attention", function.name, params, (result, function.body.type.dtype.name),
                  where=where, attention=shape)


def _chain(function, params, calls, where) -> Kernel | None:
    """Matmuls by weights with their prologues and epilogues: placer/chain.py."""
    if not any(getattr(c.op, "name", None) == "matmul" for c in calls):
        return None
    from tilefoundry.placer.chain import read_stages

    stages = read_stages(function, params, calls, where)
    shape = _static_shape(function.body.type, "the result", where)
    return Kernel("chain", function.name, params, (shape, function.body.type.dtype.name),
                  where=where, stages=stages)


def _row_axis_ok(call) -> bool:
    """A row op reads the last axis only."""
    name = call.op.name
    rank = len(call.args[0].type.shape)
    if name == "reduce":
        axes = tuple(a % rank for a in call.op.axes)
        return axes == (rank - 1,) and bool(call.op.keepdim)
    if name == "softmax":
        return call.op.axis % rank == rank - 1
    return True  # rms_norm / layer_norm normalise the last axis by definition (docs/ops.md)


def _rows(function, params, calls, where) -> Kernel:
    from tilefoundry.ir.expr import Constant, Var

    # rows are the leading axes: (R, H), or (B, S, H) as a model file writes a prompt
    full = [p for p in params if len(p.shape) in (2, 3)]
    if not full:
        raise AnalysisError(f"{where}: place: no (rows, hidden) parameter; a rows kernel "
                         "reads at least one (R, H) or (B, S, H) tensor")
    lead = full[0].shape[:-1]
    for p in params:
        if len(p.shape) != 1 and p.shape[:-1] != lead:
            raise AnalysisError(f"{where}: place: parameter '{p.name}' has shape {p.shape}; a rows kernel "
                             f"reads {(*lead, 'H')} tensors and (H,) vectors only")
    names: dict = {}
    lines = []
    for index, call in enumerate(calls):
        name = call.op.name
        if name not in ELEMENTWISE and name not in ROW_OPS:
            raise AnalysisError(f"{where}: place: the op '{name}' is neither a matmul of two parameters "
                             "nor a row-wise op; place's kernel kinds are a matmul and a rows "
                             "kernel (docs/place.md)")
        if name in ROW_OPS and not _row_axis_ok(call):
            raise AnalysisError(f"{where}: place: '{name}' reads an axis other than the last; a rows "
                             "kernel splits rows, so every reduction must be over the last axis")
        shape = tuple(call.type.shape)
        if shape[:-1] != lead:
            raise AnalysisError(f"{where}: place: '{name}' makes a value of shape {shape}; a rows kernel "
                             f"keeps {(*lead, '...')} values")
        refs = []
        for arg in call.args:
            if isinstance(arg, Var):
                refs.append(arg.name)
            elif isinstance(arg, Constant):
                from tilefoundry.render.values import format_value

                refs.append(format_value(arg.value))
            else:
                refs.append(names[id(arg)])
        line = f"v{index}"
        names[id(call)] = line
        lines.append((line, op_text(call.op, refs)))
    returned = names.get(id(function.body))
    if returned is None:
        raise AnalysisError(f"{where}: place: the kernel returns a parameter unchanged; there is nothing to place")
    shape = _static_shape(function.body.type, "the result", where)
    return Kernel("rows", function.name, params, (shape, function.body.type.dtype.name),
                  tuple(lines), returned, where=where)


def _program(function, params, where) -> Kernel:
    """Any other loop-free body: GEMV and glue pieces meeting in gmem."""
    from tilefoundry.placer.sequence import read_pieces

    pieces, results = read_pieces(function, params, where)
    body = function.body
    result = ((), "") if not hasattr(body.type, "shape") else (tuple(body.type.shape), body.type.dtype.name)
    return Kernel("sequence", function.name, params, result, where=where, pieces=pieces, results=results)


def _loop(function, params, where) -> Kernel | None:
    """A body walking one loop that carries state: placer/loop.py."""
    from tilefoundry.placer.loop import read_loop

    shape = read_loop(function, params, where)
    if shape is None:
        return None
    return Kernel("loop", function.name, params, ((), ""), where=where, loop=shape)


def read_kernel(module, function, dims=None) -> Kernel:
    """The Kernel of a logical selection (checked as `analyze` checks it)."""
    from tilefoundry import api

    typed = api.analyze((module, function), dims=dims)
    view = typed.function
    location = getattr(function, "location", None)
    where = f"{location[0]}:{location[1]}:{location[2]}" if location else f"{module.name}.{function.name}"
    params = _operands(view, where)
    found = _loop(view, params, where)
    try:
        if found is None:
            calls = _calls(view, where)
            _check_unplaced(calls, where)
            found = (_matmul(view, params, calls, where) or _attention(view, params, calls, where)
                     or _chain(view, params, calls, where) or _rows(view, params, calls, where))
    except AnalysisError:  # none of the narrow kinds: a sequence of kernels (placer/sequence.py)
        found = _program(view, params, where)
    object.__setattr__(found, "target", module.target)
    from tilefoundry.placer.op_source import converter_lines

    object.__setattr__(found, "converters", converter_lines(function))
    return found
