"""Twins (``check --against``): one program held against a second program or
a user's Python function, on the same inputs, output by output.

A Python twin is called with the program's arguments positionally, in the
program's parameter order (entry parameters, then ConstTensor weights in
their promoted order, as ``tilefoundry run --json`` lists them), as numpy
arrays — or as torch tensors when the twin's file imports torch. It returns
one array, a tuple/list of them in output order, or a dict by output name.
"""
from __future__ import annotations

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.expr import Tuple
from tilefoundry.ir.tensor_type import TupleType
from tilefoundry.execute import output_names
from tilefoundry.execute.compare import NO_PATH, compare, derived_bound, explicit_bound, rounding_depths
from tilefoundry.semantics.evaluation import np

__all__ = ["hold_against", "output_nodes"]


def output_nodes(function) -> list:
    body = function.body
    if isinstance(function.body.type, TupleType) and isinstance(body, Tuple):
        return list(body.fields)
    if isinstance(function.body.type, TupleType):
        return [body] * len(function.body.type.fields)
    return [body]


def _output_types(function) -> list:
    type_ = function.body.type
    return list(type_.fields) if isinstance(type_, TupleType) else [type_]


def hold_against(function, arguments: dict, expected: dict, twin, run_program, rtol, atol) -> list:
    """One Verdict per output of ``function``."""
    depths = rounding_depths(function)
    extra = {}
    if twin.program is not None:
        other, actual = run_program(twin.program)
        other_depths = rounding_depths(other)
        extra = dict(zip(output_names(other), (other_depths.get(id(n), NO_PATH) for n in output_nodes(other))))
    else:
        actual = _call_python(twin, list(arguments.values()), list(expected))
    verdicts = []
    for name, node, type_ in zip(output_names(function), output_nodes(function), _output_types(function)):
        if name not in actual:
            raise EvaluationError(f"--against {twin.label}: it returns no output '{name}' "
                                  f"(it returns {sorted(actual)})")
        bound = _bound(name, type_, depths.get(id(node), NO_PATH), extra.get(name, NO_PATH),
                       expected[name], rtol, atol)
        verdicts.append(compare(name, expected[name], actual[name], bound))
    return verdicts


def _pick(value, name: str):
    if value is None or isinstance(value, (int, float)):
        return value
    return value.get(name) if hasattr(value, "get") else None


def _bound(name, type_, mine, theirs, expected, rtol, atol):
    stated_r, stated_a = _pick(rtol, name), _pick(atol, name)
    if stated_r is not None or stated_a is not None:
        return explicit_bound(float(stated_r or 0.0), float(stated_a or 0.0))
    return derived_bound(type_.dtype, mine.plus(theirs), expected)


def _call_python(twin, arrays: list, names: list) -> dict:
    torch = _torch_for(twin.function)
    args = [_to_torch(torch, a) for a in arrays] if torch is not None else arrays
    try:
        result = twin.function(*args)
    except Exception as exc:  # the user's function: say where it failed, in one line
        raise EvaluationError(f"--against {twin.label}: the function raised {type(exc).__name__}: "
                              f"{exc}") from None
    if isinstance(result, dict):
        return {k: _to_numpy(v) for k, v in result.items()}
    if not isinstance(result, (tuple, list)):
        result = (result,)
    if len(result) != len(names):
        raise EvaluationError(f"--against {twin.label}: it returns {len(result)} values where the "
                              f"program has {len(names)} outputs ({', '.join(names)})")
    return {name: _to_numpy(v) for name, v in zip(names, result)}


def _torch_for(function):
    module = getattr(function, "__globals__", {}).get("torch")
    return module if getattr(module, "__name__", None) == "torch" else None


def _to_torch(torch, array):
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


def _to_numpy(value):
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)
