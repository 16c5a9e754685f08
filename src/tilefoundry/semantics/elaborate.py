"""Function-call elaboration (spec §1, hir §1.1).

A call to another Function is elaborated per call site: the callee body is
rebuilt and each of its nodes re-derives its type through the same per-op
typeinfer under the call's actual argument types. Results are memoised per
(callee, argument types) within a session (``new_session()`` clears the memo).

Parameter matching: a layout-free parameter adopts the caller's layout and
storage; a parameter with a ShardLayout needs an exact match; DimVar extents
match any extent inside their envelope (and bind the DimVar for the body).
A prototype callee is not elaborated (its declared return type stands).
Function boundaries never complete or reject a Partial: the elaborated result
is whatever the body derives, Partials in nested tuple fields included.
"""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimVar, format_dim, free_dimvars, is_static, substitute
from tilefoundry.ir.expr import Call, Constant, Expr, GridRegionExpr, Op, Tuple, Var
from tilefoundry.ir.metadata import BindingMetadata, SourceSpanMetadata
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.typeinfer import build_call

__all__ = ["build_function_call", "retype_function", "elaborated_type", "new_session", "match_parameters"]

_MEMO: dict = {}


def new_session() -> None:
    """Forget every elaboration (one session = one authoring/analysis run)."""
    _MEMO.clear()


def _fail(function, message: str, where: dict):
    text = f"call of '{function.name}': {message}"
    location = where.get("location")
    if location:
        binding = where.get("binding")
        text += f"\n  at {location}" + (f" variable '{binding}'" if binding else "")
    raise VerifyError(text)


# ---------------------------------------------------------------- parameter matching


def _bind_extent(param_extent, arg_extent, bindings: dict) -> str | None:
    """Match one extent; returns an error text or None."""
    if isinstance(param_extent, DimVar):
        bound = bindings.get(param_extent.name)
        if bound is not None:
            return None if bound == arg_extent else (
                f"{param_extent.name} is bound to {format_dim(bound)} and to {format_dim(arg_extent)}")
        if arg_extent == param_extent:
            return None
        if is_static(arg_extent):
            if not param_extent.lo <= arg_extent < param_extent.hi:
                return (f"extent {arg_extent} is outside {param_extent.name}'s envelope "
                        f"[{param_extent.lo}, {param_extent.hi})")
        elif isinstance(arg_extent, DimVar):
            if not (param_extent.lo <= arg_extent.lo and arg_extent.hi <= param_extent.hi):
                return (f"{arg_extent.name} [{arg_extent.lo}, {arg_extent.hi}) does not lie inside "
                        f"{param_extent.name}'s envelope [{param_extent.lo}, {param_extent.hi})")
        bindings[param_extent.name] = arg_extent
        return None
    if is_static(param_extent):
        return None if param_extent == arg_extent else f"extent {format_dim(arg_extent)} != {param_extent}"
    expected = substitute(param_extent, bindings)
    if free_dimvars(expected) and expected != arg_extent:
        return None  # an expression over still-open dims: checked by the body's own rules
    return None if expected == arg_extent else (
        f"extent {format_dim(arg_extent)} != {format_dim(expected)}")


def _match(param_type, arg_type, bindings: dict, label: str):
    """The type the parameter takes inside the body, or an error text."""
    if isinstance(param_type, TupleType):
        if not isinstance(arg_type, TupleType) or len(arg_type.fields) != len(param_type.fields):
            return None, f"{label} expects a {len(param_type.fields)}-field tuple"
        fields = []
        for k, (p, a) in enumerate(zip(param_type.fields, arg_type.fields)):
            t, err = _match(p, a, bindings, f"{label}[{k}]")
            if err:
                return None, err
            fields.append(t)
        return TupleType(tuple(fields)), None
    if not isinstance(param_type, TensorType) or not isinstance(arg_type, TensorType):
        return (arg_type, None) if type(param_type) is type(arg_type) else (None, f"{label}: kind mismatch")
    if param_type.dtype != arg_type.dtype:
        return None, f"{label} expects dtype {param_type.dtype}, got {arg_type.dtype}"
    if param_type.rank != arg_type.rank:
        return None, f"{label} expects rank {param_type.rank}, got {arg_type.rank}"
    for axis, (p, a) in enumerate(zip(param_type.shape, arg_type.shape)):
        err = _bind_extent(p, a, bindings)
        if err:
            return None, f"{label} axis {axis}: {err}"
    if param_type.layout is None:
        return arg_type, None  # a layout-free parameter adopts the caller's layout and storage
    if param_type.layout != arg_type.layout or param_type.storage != arg_type.storage:
        return None, (f"{label} declares layout {param_type.layout!r} in {param_type.storage}, the argument "
                      f"has {arg_type.layout!r} in {arg_type.storage}; layouts must match exactly "
                      "(reshard the argument)")
    return arg_type, None


def match_parameters(function, arg_types, where=None):
    """(types the parameters take, DimVar bindings) for these argument types."""
    where = where or {}
    if len(arg_types) != len(function.params):
        _fail(function, f"takes {len(function.params)} argument(s), got {len(arg_types)}", where)
    bindings: dict = {}
    types = []
    for param, arg_type in zip(function.params, arg_types):
        t, err = _match(param.type, arg_type, bindings, f"parameter '{param.name}'")
        if err:
            _fail(function, err, where)
        types.append(t)
    return tuple(types), bindings


# ---------------------------------------------------------------- body rebuilding


def _where_of(node) -> dict:
    span = node.get_metadata(SourceSpanMetadata)
    binding = node.get_metadata(BindingMetadata)
    return {"location": str(span) if span else None, "binding": binding.name if binding else None}


def _copy_metadata(old, new):
    if new is not old:
        for record in old.metadata.values():
            new.with_metadata(record)
    return new


def _bind_dims(value, bindings):
    if not bindings:
        return value
    try:
        from tilefoundry.ir.substitute import bind_dims
    except ImportError:  # pragma: no cover - substitution helper not available
        return value
    return bind_dims(value, bindings)


def _children(node):
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, GridRegionExpr):
        return node.inits
    return ()


def _rebuild(root, mapping: dict, bindings: dict):
    """Rebuild ``root`` bottom-up (iteratively) with ``mapping`` (old id -> new node)."""
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in mapping:
            continue
        if not ready:
            stack.append((node, True))
            for child in _children(node):
                if id(child) not in mapping:
                    stack.append((child, False))
            continue
        mapping[id(node)] = _rebuild_one(node, mapping, bindings)
    return mapping[id(root)]


def _rebuild_one(node, mapping, bindings):
    if isinstance(node, Var):
        return node  # free Vars (loop induction variables) keep their identity
    if isinstance(node, Constant):
        return node
    if isinstance(node, Tuple):
        fields = tuple(mapping[id(f)] for f in node.fields)
        if all(a is b for a, b in zip(fields, node.fields)):
            return node
        return _copy_metadata(node, Tuple(fields, TupleType(tuple(f.type for f in fields))))
    if isinstance(node, Call):
        args = tuple(mapping[id(a)] for a in node.args)
        op = node.op
        new_op = _bind_dims(op, bindings) if isinstance(op, Op) else op
        if new_op is op and all(a is b for a, b in zip(args, node.args)):
            return node
        where = _where_of(node)
        if isinstance(op, Op):
            call = build_call(new_op, args, **where)
        else:
            call = build_function_call(op, args, **where)
        return _copy_metadata(node, call)
    if isinstance(node, GridRegionExpr):
        return _rebuild_loop(node, mapping, bindings)
    raise VerifyError(f"elaboration: cannot rebuild {type(node).__name__}")


def _rebuild_loop(node: GridRegionExpr, mapping, bindings):
    inits = tuple(mapping[id(i)] for i in node.inits)
    start = _bind_dims(node.start, bindings)
    extent = _bind_dims(node.extent, bindings)
    if (all(a is b for a, b in zip(inits, node.inits)) and start is node.start and extent is node.extent
            and all(i.type == c.type for i, c in zip(inits, node.carried))):
        # body may still depend on rebuilt outer values: rebuild yields under the same carried vars
        inner = dict(mapping)
        yields = tuple(_rebuild(y, inner, bindings) for y in node.yields)
        if all(a is b for a, b in zip(yields, node.yields)):
            return node
        carried = node.carried
    else:
        carried = tuple(_copy_metadata(c, Var(c.name, i.type, c.is_const)) for c, i in zip(node.carried, inits))
        inner = dict(mapping)
        for old, new in zip(node.carried, carried):
            inner[id(old)] = new
        yields = tuple(_rebuild(y, inner, bindings) for y in node.yields)
    for c, y in zip(carried, yields):
        if isinstance(c.type, TensorType) and isinstance(y.type, TensorType):
            if c.type.shape != y.type.shape or c.type.dtype != y.type.dtype:
                raise VerifyError(
                    f"loop-carried '{c.name}' enters as {c.type.dtype}{list(c.type.shape)} but is yielded as "
                    f"{y.type.dtype}{list(y.type.shape)}"
                )
    type_ = carried[0].type if len(carried) == 1 else TupleType(tuple(c.type for c in carried))
    loop = GridRegionExpr(node.induction_var, carried, inits, yields, start, extent, node.step, node.kind, type_)
    return _copy_metadata(node, loop)


def retype_function(function, arg_types, where=None):
    """The callee's parameters and body re-derived under ``arg_types``:
    ``(new_params, new_body)``; reusable by the analysis inliner."""
    param_types, bindings = match_parameters(function, tuple(arg_types), where)
    if function.is_prototype:
        return function.params, None
    mapping: dict = {}
    new_params = []
    for param, type_ in zip(function.params, param_types):
        if type_ == param.type and not bindings:
            new = param
        else:
            new = _copy_metadata(param, Var(param.name, type_, param.is_const))
        mapping[id(param)] = new
        new_params.append(new)
    if all(p is q for p, q in zip(new_params, function.params)) and not bindings:
        return function.params, function.body
    body = _rebuild(function.body, mapping, bindings)
    return tuple(new_params), body


def elaborated_type(function, arg_types, where=None):
    """The call's result type under these argument types (memoised per session)."""
    key = (id(function), tuple(arg_types))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is function:
        return hit[1]
    if function.is_prototype:
        match_parameters(function, tuple(arg_types), where)
        result = function.return_type
    else:
        _, body = retype_function(function, arg_types, where)
        result = body.type
    _MEMO[key] = (function, result)
    return result


def build_function_call(function, args, **where) -> Call:
    """A typed Call of ``function`` elaborated for this call site."""
    args = tuple(args)
    for k, arg in enumerate(args):
        if not isinstance(arg, Expr):
            _fail(function, f"argument {k} is not an IR value ({arg!r})", where)
    result = elaborated_type(function, tuple(a.type for a in args), where)
    return Call(function, args, result)
