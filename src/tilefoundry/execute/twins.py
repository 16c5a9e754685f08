"""Twins (``check --against``): the program held against a reference, a second
program or a user's Python function, on the same inputs, output by output.

A Python twin is called with the program's arguments positionally, in the
program's parameter order (entry parameters, then ConstTensor weights in
their promoted order, as ``tilefoundry run --json`` lists them), as numpy
arrays — or as torch tensors when the twin's file imports torch. It returns
one array, a tuple/list of them in output order, or a dict by output name.

A twin cannot fool or crash the check: it gets its own copy of every input
(an in-place change touches nothing of the program's; a function that states
``reads_only = True`` gets read-only views instead, which refuse a write),
anything it prints goes to stderr (never into ``--json`` output), and
whatever it raises (SystemExit
included) or returns that is not a real array of the output's shape and kind
(complex, strings, objects, ragged nests, a wrong shape, an integer for a
float output) is one line naming the twin and what it returned.
"""
from __future__ import annotations

import contextlib
import sys

from tilefoundry.errors import EvaluationError
from tilefoundry.execute.compare import compare, derived_bound, explicit_bound
from tilefoundry.execute.error_bounds import held_apart, held_to
from tilefoundry.semantics.op_numerics import is_float, np

__all__ = ["hold_against", "quiet_stdout", "owned_copy", "frozen"]


def owned_copy(arrays: dict) -> dict:
    """Each array copied, so one side's in-place change never reaches the other
    (what a Python twin, which may write into its inputs, is given)."""
    return {key: np.array(value, copy=True) for key, value in arrays.items()}


def frozen(arrays: dict) -> dict:
    """Each array as a read-only view: what the interpreter's runs share. They
    never write into an argument, and a write would be refused, not shared; a
    layer's weights (hundreds of MB) are not copied for each side."""
    views = {}
    for key, value in arrays.items():
        view = np.asarray(value).view()
        view.flags.writeable = False
        views[key] = view
    return views


def _given_to(function, arguments: dict) -> dict:
    """What a Python twin is called with: its own copy of each input, or, for a
    function that states it only reads them (``function.reads_only = True``: place's
    logical twin), read-only views, which no write can reach through (numpy refuses
    it, and the twin's error is one line) and which cost nothing beside a layer's
    hundreds of MB of weights."""
    return frozen(arguments) if getattr(function, "reads_only", False) is True else owned_copy(arguments)


@contextlib.contextmanager
def quiet_stdout():
    """A twin's prints go to stderr: stdout carries only our report (``--json``)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def hold_against(program: dict, bounds: dict, derivation, arguments: dict, types: dict, twin,
                 run_program, rtol, atol) -> list:
    """One Verdict per output of the program (``program``/``bounds``: output name ->
    array, its error bound; ``types``: output name -> TensorType)."""
    if twin.program is not None:
        reference, _, reference_derivation = run_program(twin.program)
        reference_parts, own = reference_derivation.parts, False
        if derivation.tie is None:  # a near tie on either side leaves the choice open (near_ties.py)
            derivation.tie = reference_derivation.tie
    elif getattr(twin.function, "by_name", False):  # the hf: twin reads arguments by name (models/hf_twin.py)
        reference = twin.function(owned_copy(arguments), list(types))
        reference_parts, own = derivation.parts, True
    else:
        reference = _call_python(twin, list(_given_to(twin.function, arguments).values()), types)
        reference_parts, own = derivation.parts, True
    verdicts = []
    for name, type_ in types.items():
        if name not in reference:
            raise EvaluationError(f"--against {twin.label}: it returns no output '{name}' "
                                  f"(it returns {sorted(reference)})")
        got = _checked_result(twin, name, reference[name], type_)
        bound = _bound(name, type_, derivation.parts.get(name), reference_parts.get(name), own,
                       derivation, rtol, atol)
        verdicts.append(compare(name, program[name], got, bound))
    return verdicts


def _pick(value, name: str):
    if value is None or isinstance(value, (int, float)):
        return value
    return value.get(name) if hasattr(value, "get") else None


def _bound(name, type_, mine, theirs, assumed: bool, derivation, rtol, atol):
    stated_r, stated_a = _pick(rtol, name), _pick(atol, name)
    if stated_r is not None or stated_a is not None:
        return explicit_bound(float(stated_r or 0.0), float(stated_a or 0.0))
    if not type_.dtype.is_float:
        from tilefoundry.execute.compare import Bound

        return Bound(0.0, 0.0, f"{type_.dtype.name} output: exact (rtol = atol = 0)")
    theirs = mine if theirs is None or np.shape(theirs[0]) != np.shape(mine[0]) else theirs
    allowed = held_apart(mine, theirs)
    side = ("the reference (a Python function) taken to carry the program's own bounds: the same "
            "arithmetic at the same precisions" if assumed else "the reference's own bounds, derived "
            "from its program")
    return derived_bound(allowed, _derivation_text(type_, mine, side, derivation))


def _derivation_text(type_, mine, side: str, derivation) -> str:
    mine = held_to(*mine)
    finite = mine[np.isfinite(mine)]
    largest = float(finite.max()) if finite.size else 0.0
    terms = [f"{what} {min(worst, rss):.3g}·|value| (worst case {worst:.3g}, 8·rss {rss:.3g})"
             for what, worst, rss in derivation.dominant()]
    text = (f"{type_.dtype.name} output: |program - reference| <= min(W_program + W_reference, "
            f"8·sqrt(R_program^2 + R_reference^2)) per element (forward error bounds: each result "
            f"rounded once to its dtype, u = 2^-p; n-term f32 sums gamma_n·sum|terms|; W worst case, "
            f"R root sum of squares); the program's own bound up to {largest:.3g}")
    if terms:
        text += "; dominant own terms (median over a value's elements): " + ", ".join(terms)
    return text + f"; reference: {side}"


def _call_python(twin, arrays: list, types: dict) -> dict:
    names = list(types)
    torch = _torch_for(twin.function)
    args = [_to_torch(torch, a) for a in arrays] if torch is not None else arrays
    try:
        with quiet_stdout():
            result = twin.function(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's function: SystemExit too; say what, in one line
        raise EvaluationError(f"--against {twin.label}: the function raised {type(exc).__name__}"
                              f"{': ' + str(exc) if str(exc) else ''}") from None
    if isinstance(result, dict):
        unknown = sorted(str(k) for k in result if k not in types)
        if unknown:
            raise EvaluationError(f"--against {twin.label}: it returns '{unknown[0]}', which names no "
                                  f"output of the program (it has {', '.join(names)})")
        return {k: _to_numpy(twin, k, v) for k, v in result.items()}
    if not isinstance(result, (tuple, list)) or len(names) == 1 and not isinstance(result, tuple):
        result = (result,)
    if len(result) != len(names):
        raise EvaluationError(f"--against {twin.label}: it returns {len(result)} values where the "
                              f"program has {len(names)} outputs ({', '.join(names)})")
    return {name: _to_numpy(twin, name, v) for name, v in zip(names, result)}


def _checked_result(twin, name: str, value, type_):
    """A real array of the output's shape and kind (any float width for a float
    output: the comparison is in f64), else one line naming what came back."""
    array = value
    expected = tuple(int(e) for e in type_.shape)
    kind = "float" if type_.dtype.is_float else ("bool" if type_.dtype.is_bool else "integer")
    got = "bool" if array.dtype.kind == "b" else ("integer" if array.dtype.kind in "iu" else (
        "float" if is_float(array.dtype) else None))
    if got is None:
        raise EvaluationError(f"--against {twin.label}: output '{name}' is {_described(array)}; "
                              f"the program's is {type_.dtype.name}{list(expected)}: return real numbers")
    if got != kind:
        raise EvaluationError(f"--against {twin.label}: output '{name}' is {got} "
                              f"({array.dtype.name}) where the program's is {kind} ({type_.dtype.name})")
    if tuple(array.shape) != expected:
        raise EvaluationError(f"--against {twin.label}: output '{name}' has shape {list(array.shape)} "
                              f"where the program's is {list(expected)}")
    return array


def _described(array) -> str:
    return {"c": "complex", "U": "text", "S": "bytes", "O": "a Python object array (ragged or "
            "nested values)", "V": "raw bytes", "M": "dates", "m": "time spans"}.get(
        array.dtype.kind, array.dtype.name) + f" ({array.dtype.name})"


def _torch_for(function):
    module = getattr(function, "__globals__", {}).get("torch")
    return module if getattr(module, "__name__", None) == "torch" else None


def _to_torch(torch, array):
    array = np.asarray(array)
    if not array.flags.writeable:  # torch shares a numpy array's memory and may write it
        array = np.array(array, copy=True)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


def _to_numpy(twin, name, value):
    """The returned value as a numpy array; anything numpy cannot hold as one
    array (a ragged nest, a generator) is named in one line."""
    try:
        if hasattr(value, "detach") and hasattr(value, "cpu"):
            value = value.detach().cpu()
            if str(value.dtype) == "torch.bfloat16":
                value = value.float()
            return np.asarray(value.numpy())
        with np.errstate(all="ignore"):
            return np.asarray(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise EvaluationError(f"--against {twin.label}: output '{name}' is a {type(value).__name__} "
                              f"numpy cannot hold as one array ({type(exc).__name__})") from None
