"""The execution API (docs/execution.md): ``tilefoundry.run`` and
``tilefoundry.check``, over ``tilefoundry.execute``.

A facade like ``api``: it checks a selection exactly as an analysis does (the
program check, no analysis family) and hands the inlined view to the
executor, which never imports ``analysis``.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["run", "check", "Prepared", "prepare", "output_summary", "CheckResult", "Twin"]


@dataclass
class Prepared:
    """One selection ready to run: its inlined view and its arguments."""

    module: Any
    view: Any  # analysis.view.ProgramView
    arguments: dict  # param Var -> array
    names: list  # (param Var, name, is weight)
    dims: dict = field(default_factory=dict)

    @property
    def function(self):
        return self.view.function

    def by_name(self) -> dict:
        return {name: self.arguments[param] for param, name, _ in self.names}


def _view(module, function, dims):
    from tilefoundry.api import _typed_view

    return _typed_view(module, function, dims)


def _given(source, what: str) -> tuple[dict, str]:
    import os

    if source is None or source == "random":
        return {}, what
    if isinstance(source, Mapping):
        return dict(source), what
    from tilefoundry.execute.tensor_files import read_tensor_file

    return read_tensor_file(os.fspath(source)), os.fspath(source)


def _checked_arrays(value, who: str, argument: str, *, random: bool):
    """``inputs``/``weights``: None, ('random'), a .npz/.safetensors path (a str
    or a pathlib.Path), or a mapping of name -> array."""
    import os

    from tilefoundry.api import refused_argument

    if value is None or isinstance(value, Mapping) or (random and value == "random"):
        return value
    takes = ("'random', " if random else "") + "a .npz or .safetensors path, or a mapping of name -> array"
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise refused_argument(who, argument, takes, value)
    return value


def _checked_tolerance(value, who: str, argument: str):
    """rtol/atol: None, one number >= 0, or a mapping of output name -> number >= 0."""
    import math
    import numbers

    from tilefoundry.api import refused_argument

    def number(v, shown):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v < 0:
            raise refused_argument(who, shown, "a finite number >= 0 (or None: the bound of the dtype)", v)
        return float(v)

    if value is None:
        return None
    if isinstance(value, Mapping):  # kept as given (the CLI's carries a default for the rest)
        for name, v in value.items():
            number(v, f"{argument}['{name}']")
        return value
    return number(value, argument)


def _checked_given(given, who: str):
    """Arrays already bound by name (a twin's shared inputs), or None."""
    from tilefoundry.arguments import checked, instance_of, optional

    return checked(who, "given", given, optional(instance_of(Mapping, "a mapping of name -> array")))


def _numbers(value):
    """``value`` as a numpy array of numbers or booleans (what an output is)."""
    import numpy as np

    from tilefoundry.arguments import Wrong

    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        raise Wrong() from None
    from tilefoundry.semantics.op_numerics import is_float

    if array.dtype.kind not in "biuf" and not is_float(array.dtype):  # bf16/fp8: ml_dtypes' kind V
        raise Wrong()
    return array


def _numbers_rule():
    from tilefoundry.arguments import Rule

    return Rule("an array of numbers (a numpy array, as run returns)", _numbers)


def prepare(selection, *, dims: Mapping[str, int] | None = None, inputs=None, weights=None,
            seed: int = 0, target=None, given: Mapping | None = None,
            who: str = "tilefoundry.run") -> Prepared:
    """Check one selection and bind its arguments (random where not given)."""
    from tilefoundry.api import checked_dims, checked_seed, checked_target, retarget, selected
    from tilefoundry.execute.inputs import bind_arguments, parameter_names, random_arguments

    dims = checked_dims(dims, who)
    seed = checked_seed(seed, who)
    target = checked_target(target, who)
    inputs = _checked_arrays(inputs, who, "inputs", random=True)
    weights = _checked_arrays(weights, who, "weights", random=False)
    given = _checked_given(given, who)
    opened = _opened_checkpoint(selection, weights) if given is None else None
    if opened is not None:
        selection = opened.selection
    module, function = selected(selection, who)
    module = retarget(module, target)
    view = _view(module, function, dims)
    fn, promoted = view.function, view.promoted
    arrays: dict = {}
    if given is not None:
        arrays.update(given)
    else:
        # a weight is given in its stored form wherever it comes from (--inputs, --weights,
        # a mapping): its converter (@fn.converter) makes the form the program reads
        supplied, source = _given(inputs, "--inputs")
        if opened is not None:  # the checkpoint's RoPE tables where --inputs gives none (models room)
            supplied = {**opened.inputs_for(fn, promoted), **supplied}
        supplied = _converted(module, supplied, source)
        arrays.update(bind_arguments(fn, promoted, supplied, source=source))
        if weights is not None:
            checkpoint, source = (opened.weights_for(fn, promoted), str(weights)) if opened is not None \
                else _given(weights, "--weights")
            checkpoint = _converted(module, checkpoint, source)
            arrays.update(bind_arguments(fn, promoted, checkpoint, source=source, require="weights"))
    arguments = random_arguments(fn, promoted, seed, arrays)
    return Prepared(module, view, arguments, parameter_names(fn, promoted), dict(dims or {}))


def _opened_checkpoint(selection, weights):
    """A Hugging Face checkpoint directory given as --weights, opened by the zoo
    model's mapping (the models room reads it: models/checkpoints.py, issue 39)."""
    if weights is None or isinstance(weights, Mapping):
        return None
    from tilefoundry.models.checkpoints import is_checkpoint_dir, open_checkpoint

    return open_checkpoint(selection, weights) if is_checkpoint_dir(weights) else None


def converters_by_name(module) -> dict:
    """Dotted weight name (as promoted: Module path relative to ``module``, then
    the weight) -> the converter Function its declaring function states."""
    from tilefoundry.ir.module import dotted_tree

    found: dict = {}
    for node, prefix in dotted_tree(module):
        for function in node.functions:
            for declared in (function, *(variant for _, variant in function.variants)):
                for weight, converter in declared.converters.items():
                    found.setdefault(f"{prefix}{weight}", converter)
    return found


def _converted(module, checkpoint: dict, source: str) -> dict:
    """A checkpoint stores weights as published; a weight with a converter
    (``@fn.converter("w")``) is the converter's result on the stored array,
    which must have the converter's parameter type."""
    from tilefoundry.analysis.view import build_view
    from tilefoundry.execute import run_logical
    from tilefoundry.execute.inputs import checked_array

    converters = converters_by_name(module)
    converted = dict(checkpoint)
    for name, array in checkpoint.items():
        converter = converters.get(name)
        if converter is None:
            continue
        raw = converter.params[0]
        stored = checked_array(array, raw.type, name, f"{source} (stored form, before the converter)")
        view = build_view(module, converter)
        converted[name] = run_logical(view.function, {view.function.params[0]: stored})["output"]
    return converted


def run(selection, *, dims: Mapping[str, int] | None = None, inputs=None, weights=None,
        seed: int = 0, target=None) -> dict:
    """Execute one selection in numpy and return output name -> array.

    Args:
        selection: ``"file.py:Root.fn"``, a Module (a ``@module`` class) or a
            ``(module, function)`` pair.
        dims: DimVar bindings (``--dim``).
        inputs: None/"random", a ``.npz``/``.safetensors`` path, or name -> array.
        weights: a ``.safetensors`` checkpoint (or name -> array) holding every
            ConstTensor weight by its dotted Module path and name.
        seed: the seed of every random draw.
    """
    from tilefoundry.execute import run_logical

    prepared = prepare(selection, dims=dims, inputs=inputs, weights=weights, seed=seed, target=target)
    return run_logical(prepared.function, prepared.arguments)


def output_summary(name: str, array) -> dict:
    """What ``tilefoundry run`` prints of one output."""
    import numpy as np

    from tilefoundry.arguments import NAME, checked
    from tilefoundry.semantics.op_numerics import dtype_name

    who = "tilefoundry.execution.output_summary"
    name = checked(who, "name", name, NAME)
    array = checked(who, "array", array, _numbers_rule())
    wide = array.astype(np.float64) if array.dtype.kind != "b" else array.astype(np.float64)
    finite = wide[np.isfinite(wide)]
    digest = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]
    return {
        "name": name,
        "shape": list(array.shape),
        "dtype": dtype_name(array.dtype),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "mean": float(finite.mean()) if finite.size else None,
        "nonfinite": int(wide.size - finite.size),
        "checksum": f"sha256:{digest}",
    }


# ---------------------------------------------------------------- check


@dataclass(frozen=True)
class Twin:
    """What a selection is held against: a program selection or a Python function."""

    label: str
    program: Any = None  # (module, function) of a second program
    function: Any = None  # a Python callable over arrays


@dataclass(frozen=True)
class CheckResult:
    """One ``check`` over one binding.

    Attributes:
        dims: the binding checked.
        passed: every verdict passed (and, for ``placed``, the placed run agreed).
        verdicts: per output, against the twin (empty without one).
        placed: the PlacedReport of ``check --placed``, or None.
        seed: the seed the inputs were drawn from: the one given, or a later one
            of its fixed sequence where a failing draw met a top-k/argmax near
            tie (execute/near_ties.py).
        tie: on a failure, the near tie every draw met (the failure may be the
            tie's), or None.
    """

    dims: dict
    passed: bool
    verdicts: tuple = ()
    placed: Any = None
    seed: int | None = None
    tie: str | None = None


def check(selection, *, against=None, placed: bool = False, dims=None, inputs=None,
          weights=None, seed: int = 0, rtol=None, atol=None, target=None) -> list[CheckResult]:
    """Execute ``selection`` and hold it against ``against`` and/or its own
    placed run, once per binding of ``dims`` (a value list sweeps).

    Args:
        against: ``"other.py:Root.fn"`` (a program), ``"impl.py:function"`` (a
            Python function over numpy arrays), a callable, or None.
        placed: also run participant by participant and compare (``--placed``).
        rtol, atol: one float for every output or name -> float; None holds each
            element to the program's forward error bound plus the reference's,
            computed beside the run (``--tolerance dtype``, docs/execution.md "Bounds").

    Each verdict names its sides ``program_value`` (the selection's) and
    ``reference_value`` (the twin's) at ``worst_index``.
    """
    import os

    from tilefoundry.api import checked_dims, checked_flag
    from tilefoundry.errors import UsageError

    who = "tilefoundry.check"
    placed = checked_flag(placed, who, "placed")
    dims = checked_dims(dims, who, lists=True)
    rtol = _checked_tolerance(rtol, who, "rtol")
    atol = _checked_tolerance(atol, who, "atol")
    if isinstance(against, os.PathLike):
        against = os.fspath(against)
    if against is None and not placed:
        raise UsageError("check: name a twin (--against OTHER) or --placed, or both")
    if isinstance(against, str) and against.startswith("hf:"):  # transformers as a twin (models/hf_twin.py)
        from tilefoundry.models.hf_twin import hf_twin

        twin = Twin(against, function=hf_twin(against, selection, weights))
    else:
        twin = resolve_twin(against) if against is not None else None
    results = []
    for binding in _bindings(dims):
        results.append(_check_one(selection, twin, placed, binding, inputs, weights, seed,
                                  rtol, atol, target))
    return results


def _bindings(dims) -> list[dict]:
    if not dims:
        return [{}]
    from tilefoundry.limits import check

    names = list(dims)
    lists = [v if isinstance(v, (tuple, list)) else (v,) for v in dims.values()]
    count = 1
    for values in lists:
        count *= len(values)
    check("SWEEP_POINTS", count, f"check asks for {count:,} bindings "
          f"({' x '.join(str(len(v)) for v in lists)} --dim values)")
    return [dict(zip(names, combo)) for combo in itertools.product(*lists)]


def _check_one(selection, twin, placed, binding, inputs, weights, seed, rtol, atol, target):
    from tilefoundry.execute.near_ties import with_redraws

    # a draw that fails where top-k/argmax scores tie within their bounds proves nothing:
    # the inputs are drawn again from a fixed sequence of seeds (execute/near_ties.py)
    return with_redraws(seed, lambda draw: _check_draw(selection, twin, placed, binding, inputs,
                                                       weights, draw, rtol, atol, target))


def _check_draw(selection, twin, placed, binding, inputs, weights, seed, rtol, atol, target):
    from tilefoundry.execute import check_placed, output_leaves
    from tilefoundry.execute.bounded_run import run_bounded
    from tilefoundry.execute.twins import frozen

    prepared = prepare(selection, dims=binding or None, inputs=inputs, weights=weights, seed=seed,
                       target=target, who="tilefoundry.check")
    report = None
    if placed:
        report = check_placed(prepared.function, dict(prepared.arguments))
        if not report.passed:
            # the placed run's own order of sums may flip a top-k the scores of which
            # tie within their bounds: a failure that met such a tie is drawn again too
            _, _, derivation = run_bounded(prepared.function, frozen(dict(prepared.arguments)))
            return CheckResult(binding, False, (), report, seed), derivation.tie
    verdicts, tie = (), None
    if twin is not None:
        from tilefoundry.execute.twins import hold_against

        # the interpreter's runs share read-only views: neither can change what the
        # other reads (a Python twin gets its own copy, hold_against)
        pristine = frozen(prepared.by_name())
        mine = frozen({p: a for p, a in prepared.arguments.items()})
        program, bounds, derivation = run_bounded(prepared.function, mine)
        program = frozen(program)
        types = {name: t for name, _, t in output_leaves(prepared.function.body.type)}

        def run_program(pair):
            own = _reached_binding(pair, binding)
            other = prepare(pair, dims=own or None,
                            given=_shared_inputs(pair, pristine, own))
            return run_bounded(other.function, other.arguments)

        verdicts = hold_against(program, bounds, derivation, pristine, types, twin, run_program,
                                rtol, atol)
        tie = derivation.tie  # the program's first near tie, else its reference program's
    passed = all(v.passed for v in verdicts) and (report is None or report.passed)
    return CheckResult(binding, passed, tuple(verdicts), report, seed), tie


def _reached_binding(pair, binding) -> dict:
    """The part of ``binding`` a twin program reaches: a placed kernel may
    name a dimension its logical twin has no use for (the attended length
    ``kv_len`` of a placed decode attention), and binding a twin a dimension it
    does not reach is refused."""
    from tilefoundry.analysis.dim_binding import reached_dimvars

    if not binding:
        return {}
    module, function = pair
    reached, _ = reached_dimvars(module, function)
    return {name: extent for name, extent in binding.items() if name in reached}


def _shared_inputs(pair, mine: dict, binding) -> dict:
    """The same arrays, by name, for a second program: each of its parameters
    must be one the first program was given, of the type the twin's own
    parameter states. Keyed by name, as ``prepare`` reads ``given``: the twin's
    own view has Vars of its own."""
    from tilefoundry.errors import EvaluationError
    from tilefoundry.execute.inputs import checked_array, parameter_names

    view = _view(pair[0], pair[1], binding or None)
    given = {}
    for param, name, _ in parameter_names(view.function, view.promoted):
        if name not in mine:
            raise EvaluationError(f"--against: the twin reads '{name}', which the checked program "
                                  f"does not have (it has {sorted(mine)}); both must read the same inputs")
        given[name] = checked_array(mine[name], param.type, name,
                                    "--against (the program's input, read by the twin)")
    return given


def resolve_twin(against) -> Twin:
    """A program selection, or a plain Python function ``file.py:name``."""
    from tilefoundry.ir.module import Module

    if isinstance(against, Module):  # a @module class: its entry, as a selection
        return Twin(against.name, program=(against, against.entry_function()))
    if callable(against):
        return Twin(getattr(against, "__name__", "function"), function=against)
    if not isinstance(against, str):
        from tilefoundry.errors import UsageError

        raise UsageError(f"check: --against takes OTHER.py:SELECTOR or FILE.py:function, got {against!r}")
    from tilefoundry.dsl.loader import split_source
    from tilefoundry.errors import TileFoundryError

    path, name = split_source(against)
    failed = None
    if name and "." not in name:
        try:
            namespace = _plain_namespace(path)
        except TileFoundryError as exc:  # perhaps a program file: the loader says which
            namespace, failed = {}, exc
        found = namespace.get(name)
        if callable(found) and not _is_program(found):
            return Twin(against, function=found)
    from tilefoundry.api import load

    try:
        return Twin(against, program=tuple(load(against)))
    except TileFoundryError:
        if failed is not None and "running the file failed" in str(failed):
            raise failed from None  # a plain file that failed at import: that is the news
        raise


def _is_program(value) -> bool:
    from tilefoundry.ir.function import Function
    from tilefoundry.ir.module import Module

    return isinstance(value, (Module, Function)) or hasattr(value, "__tilefoundry_module__")


def _plain_namespace(path: str) -> dict:
    """The globals of a Python file run as a plain module (a twin's file)."""
    import runpy

    from tilefoundry.errors import SelectionError

    from tilefoundry.execute.twins import quiet_stdout

    try:
        with quiet_stdout():  # its prints go to stderr, never into --json output
            return runpy.run_path(path, run_name="__tilefoundry_twin__")
    except FileNotFoundError:
        raise SelectionError(f"{path}: no such file") from None
    except SyntaxError as exc:
        raise SelectionError(f"{path}:{exc.lineno}:{exc.offset}: {exc.msg}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's file failed at import (sys.exit too): say so, once
        raise SelectionError(f"{path}: running the file failed ({type(exc).__name__}"
                             f"{': ' + str(exc) if str(exc) else ''})") from None
