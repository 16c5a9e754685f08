"""Where a program file declared a named value: the ``file:line:col`` of the
``DimVar(...)`` or ``Topology(...)`` expression a refusal about it points at
(issue 40 item 7: a `--dim` out of range, a level the target cannot run).

A value records the site of the user code that built it: the nearest caller
frame outside this package (a value the package builds for itself records
nothing), one site per file. A refusal names the site in the program's own
file where it knows it (``files_of`` its functions: a sweep worker loads many
files that each declare a ``ctx_len``), else the latest declaration.
"""
from __future__ import annotations

import linecache
import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SITES: dict[tuple, dict] = {}  # key -> file -> site, the latest file last
_CONSTRUCTORS = ("__new__", "__init__", "__post_init__")
_FRAMES_UP = 4  # DimVar.__new__ or a frozen record's __init__/__post_init__ sit below the user's line


def remember(key: tuple) -> None:
    """Record the user code's ``file:line:col`` building the value ``key`` names."""
    frame = sys._getframe(2)
    for _ in range(_FRAMES_UP):
        if frame is None:
            return
        if frame.f_code.co_name in _CONSTRUCTORS:
            frame = frame.f_back  # a constructor (generated or ours): its caller built the value
            continue
        if frame.f_code.co_filename.startswith(_PACKAGE):
            return  # the package built the value for itself
        break
    else:
        return
    site = _site(frame)
    if site is not None:
        sites = _SITES.setdefault(key, {})
        sites.pop(frame.f_code.co_filename, None)  # re-declared: it is the latest again
        sites[frame.f_code.co_filename] = site


def _site(frame) -> str | None:
    """``file:line:col`` (1-based character column) of the expression the frame runs."""
    from tilefoundry.text_input import char_column

    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if not 0 <= index < len(positions):
        return None
    line, _, offset, _ = positions[index]
    if line is None or offset is None:
        return None
    text = linecache.getline(frame.f_code.co_filename, line)
    return f"{frame.f_code.co_filename}:{line}:{char_column(text, offset) if text else offset + 1}"


def files_of(functions) -> tuple:
    """The files the authored functions were read from (a Function's ``source``
    is the decorated Python function), to prefer their declarations."""
    files = []
    for function in functions:
        code = getattr(getattr(function, "source", None), "__code__", None)
        if code is not None and code.co_filename not in files:
            files.append(code.co_filename)
    return tuple(files)


def site_of(key: tuple, files: tuple = ()) -> str | None:
    """The recorded ``file:line:col`` of ``key``: in one of ``files`` when one
    declares it, else the latest declaration; None when none is known."""
    sites = _SITES.get(key)
    if not sites:
        return None
    for name in files:
        if name in sites:
            return sites[name]
    return next(reversed(sites.values()))


def located(key: tuple, message: str, files: tuple = ()) -> str:
    """``message`` led by the declaration site of ``key`` when one is known."""
    site = site_of(key, files)
    return f"{site}: {message}" if site else message
