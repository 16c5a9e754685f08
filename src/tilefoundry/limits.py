"""Stated limits on what an input's size may make the product do.

Where the size of an input drives work or memory (nesting depth, cores, groups,
executed elements, packing-search tables), the product refuses past a stated
limit instead of running out of stack, memory or time. Each limit has a default and an environment
variable that raises it (README "Limits"); the refusal names both.

``toml_nesting`` states the nesting limit of a TOML file (a sweep space)
before ``tomllib``, which recurses once per level, parses it.

Kept at the package root beside errors.py (no imports of other rooms) so that
every floor can state a limit.
"""
from __future__ import annotations

import os
import re

from tilefoundry.errors import TileFoundryError
from tilefoundry.text_input import IntegerTextError, line_col, read_integer, shown_text

# name -> (default, what it counts); the variable is TILEFOUNDRY_MAX_<NAME>
LIMITS = {
    "NESTING": (200, "levels of nesting"),
    "CORES": (65_536, "cores"),
    "GROUPS": (65_536, "groups"),
    "POINTS": (4_194_304, "points of one integer set"),
    "ELEMENTS": (16_777_216, "executed elements"),
    # points of one --dim sweep (the product of its value lists, times --target),
    # and of one `tilefoundry sweep` space (sweep/space.py)
    "SWEEP_POINTS": (10_000, "points of one sweep"),
    # child modules one Module's class body attaches (each attachment is a
    # copy of the child's tree: a hostile layer count must not copy forever)
    "CHILDREN": (4_096, "child modules of one Module"),
    # buffers `pack --plot` draws
    "PLOT_BUFFERS": (200_000, "buffers in one plot"),
    # numpy execution (tilefoundry run/check): elements of the values alive at once
    "EVAL_ELEMENTS": (1 << 30, "live elements of one execution"),
    # numpy execution: statements evaluated, each loop trip evaluating its body
    # again (about a minute at the interpreter's ~15 us a statement)
    "EVAL_STATEMENTS": (1 << 22, "statements evaluated by one execution"),
    # the packing search's tables for one piece of the timeline: buffers x
    # sections, plus a neighbour entry per pair live at once (about 25 bytes
    # each with the temporaries of a node, so the default is about 100 MB)
    "PACKING_CELLS": (4_194_304, "cells of one piece's packing-search tables"),
}


class LimitError(TileFoundryError):
    """An input is larger than a stated limit (exit 1, like any refused input)."""


def variable(name: str) -> str:
    return f"TILEFOUNDRY_MAX_{name}"


def limit(name: str) -> int:
    """The limit in force: the environment variable when it holds a positive
    integer (the one integer rule of every input, text_input.read_integer),
    else the default (a malformed value is refused, never ignored)."""
    default, _ = LIMITS[name]
    text = os.environ.get(variable(name))
    if text is None or text == "":
        return default
    remedy = f"set it to a count such as {default}"
    try:
        value = read_integer(text, signed=False)
    except IntegerTextError as exc:
        if exc.too_long:
            raise LimitError(f"{variable(name)} {exc}; {remedy}") from None
        value = 0
    if value <= 0:
        raise LimitError(f"{variable(name)}={shown_text(text)} is not a positive integer; {remedy}")
    return value


def over(name: str, what: str) -> LimitError:
    """The refusal of ``what`` (the input's own size, said in its words)."""
    bound = limit(name)
    _, unit = LIMITS[name]
    return LimitError(f"{what} (limit {bound:,} {unit}); "
                      f"raise the limit with {variable(name)}=N if this input is meant")


def check(name: str, value: int, what: str) -> None:
    """Refuse ``value`` past the limit ``name``."""
    if value > limit(name):
        raise over(name, what)


# ---------------------------------------------------------------- TOML nesting

#: what can hold a bracket without opening anything: comments and the four string forms
_TOML_TOKEN = re.compile(r'''#[^\r\n]*|"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\r\n]|\\.)*"|'[^'\r\n]*'|[\[\]{}]''',
                         re.DOTALL)


def toml_nesting(text: str, where: str, error: type[Exception]) -> None:
    """Refuse a TOML ``text`` whose arrays and inline tables nest past the
    stated limit (``TILEFOUNDRY_MAX_NESTING``), at the bracket that passes it:
    ``where:LINE:COL: the TOML nests deeper than N levels (limit ...)``."""
    bound = limit("NESTING")
    depth = 0
    for token in _TOML_TOKEN.finditer(text):
        mark = token.group()
        if mark in ("[", "{"):
            depth += 1
            if depth > bound:
                line, col = line_col(text, token.start())
                raise error(str(over("NESTING", f"{where}:{line}:{col}: arrays and inline tables "
                                                       f"nest {depth:,} deep here")))
        elif mark in ("]", "}"):
            depth = max(0, depth - 1)
