"""Issue 41 item 2: every public function checks every argument at the
boundary, by one shared checker (tilefoundry.arguments).

The functions are found, not listed: each public function of the facades
(``tilefoundry.api``, ``tilefoundry.execution``, ``tilefoundry.packing``,
``tilefoundry.models``, what ``__all__`` names) is called once per parameter per wrong kind, the
other arguments at a working baseline (chosen by the parameter's name, so a
function added later is covered by the same table). Each call either works
(the kind is one the parameter takes) or raises a TileFoundryError of one
line; an ArgumentError names the call and the argument. Never a TypeError,
AttributeError or KeyError from inside.
"""
from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest

from tilefoundry.errors import ArgumentError, TileFoundryError

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
P04 = str(PROGRAMS / "p04_split_k_partial.py")

#: the modules whose public functions are the boundary
FACADES = ("tilefoundry.api", "tilefoundry.execution", "tilefoundry.packing", "tilefoundry.models")
#: the caller's own name for its messages (a str the facades pass each other), not user input
INTERNAL = {"who"}


class _Opaque:
    """An object of no kind any call takes."""

    def __repr__(self) -> str:
        return "Opaque()"


#: the wrong kinds, each given to every parameter
WRONG = {"None": None, "int": 5, "negative": -3, "float": 1.5, "nan": math.nan, "bool": True, "empty str": "",
         "bytes": b"x", "object": _Opaque(), "list of objects": [_Opaque()], "dict of objects": {_Opaque(): 1},
         "class": int}


def _pair():
    import tilefoundry

    return tilefoundry.load(P04)


def _baseline(name: str):
    """A value each parameter of that name takes (the call then works)."""
    from tilefoundry.packing import Buffer

    table = {
        "selection": lambda: P04, "source": lambda: P04, "path": lambda: P04, "module": lambda: _pair().module, "function": lambda: _pair().function,
        "dims": lambda: None, "families": lambda: "compute-cost", "target": lambda: None,
        "topology": lambda: None, "operands": lambda: False, "estimate": lambda: None,
        "inputs": lambda: None, "weights": lambda: None, "seed": lambda: 0, "given": lambda: None,
        "against": lambda: None, "placed": lambda: True, "rtol": lambda: None, "atol": lambda: None,
        "buffers": lambda: [Buffer(0, 2, 4), Buffer(1, 3, 4)], "offsets": lambda: [0, 4],
        "capacity": lambda: 8, "time_limit_s": lambda: 1.0, "progress": lambda: None,
        "name": lambda: "llama3-8b", "dtype": lambda: None, "folder": lambda: None, "array": lambda: __import__("numpy").zeros(3, "float32"),
    }
    if name not in table:
        pytest.fail(f"no baseline for a parameter named '{name}': add one to _baseline so that the "
                    "new function's every argument is called with every wrong kind")
    return table[name]()


#: the package root's loading functions (the rest of its names are the authoring surface)
ROOT_FUNCTIONS = ("load_selection", "load_module_file")


def _public_functions():
    import importlib

    import tilefoundry

    found = [("tilefoundry", name, getattr(tilefoundry, name)) for name in ROOT_FUNCTIONS]
    for module_name in FACADES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if inspect.isfunction(value):
                found.append((module_name, name, value))
    return found


def _cases():
    cases = []
    for module_name, name, function in _public_functions():
        for parameter in inspect.signature(function).parameters.values():
            if parameter.name in INTERNAL or parameter.kind in (parameter.VAR_POSITIONAL,
                                                                  parameter.VAR_KEYWORD):
                continue
            for label in WRONG:
                cases.append(pytest.param(module_name, name, parameter.name, label,
                                          id=f"{module_name.rpartition('.')[2]}.{name}-{parameter.name}-{label}"))
    return cases


def _call(function, parameter: str, value):
    positional, keywords = [], {}
    for p in inspect.signature(function).parameters.values():
        if p.name in INTERNAL or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        given = value if p.name == parameter else _baseline(p.name)
        if p.kind == p.POSITIONAL_ONLY:
            positional.append(given)
        else:
            keywords[p.name] = given
    return function(*positional, **keywords)


@pytest.mark.parametrize("module_name, name, parameter, label", _cases())
def test_every_public_function_checks_every_argument(module_name, name, parameter, label):
    import importlib

    function = getattr(importlib.import_module(module_name), name)
    value = WRONG[label]
    try:
        _call(function, parameter, value)
    except TileFoundryError as error:
        text = str(error)
        assert text and "\n" not in text, text
        if isinstance(error, ArgumentError) and parameter in text.split(":")[1]:
            assert text.startswith("tilefoundry."), text  # which call refused
    except Exception as error:  # noqa: BLE001 -- the failure this test is for
        pytest.fail(f"{module_name}.{name}({parameter}={value!r}) raised {type(error).__name__}: {error}")


def test_the_functions_are_found():
    """The enumeration finds the boundary (a test over nothing would pass)."""
    names = {f"{m}.{n}" for m, n, _ in _public_functions()}
    assert {"tilefoundry.api.analyze", "tilefoundry.api.figures", "tilefoundry.execution.run",
            "tilefoundry.execution.check", "tilefoundry.packing.pack"} <= names


@pytest.mark.parametrize("call, line", [
    (lambda: __import__("tilefoundry.api").api.figures(P04, dims="seq=96"),
     "tilefoundry.api.figures: dims takes a mapping of dimension name to extent, e.g. dims={'seq': 96}, "
     "got str 'seq=96'"),
    (lambda: __import__("tilefoundry.api").api.figures(P04, families="compute-cost", topology=5),
     "tilefoundry.api.figures: topology takes a topology level name such as 'cta', or None, got int 5"),
    (lambda: __import__("tilefoundry.packing").packing.pack([(0, 1, 4)], 8),
     "tilefoundry.packing.pack: buffers[0] takes a Buffer(start, end, size) of whole numbers, got tuple "
     "(0, 1, 4)"),
])
def test_the_issue_s_examples_are_the_one_line(call, line):
    with pytest.raises(ArgumentError) as info:
        call()
    assert str(info.value) == line
