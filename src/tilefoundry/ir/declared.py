"""Where a program file declared a named value: the ``file:line:col`` of the
``DimVar(...)`` or ``Topology(...)`` expression a refusal about it points at
(issue 40 item 7: a `--dim` out of range, a level the target cannot run).

A value records the site of the user code that built it: the nearest caller
frame outside this package (a value the package builds for itself records
nothing). The latest declaration of one key wins, so the file loaded last (the
one a command analyses) names the site.
"""
from __future__ import annotations

import linecache
import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SITES: dict[tuple, str] = {}
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
        _SITES[key] = site


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


def site_of(key: tuple) -> str | None:
    """The recorded ``file:line:col`` of ``key``, or None."""
    return _SITES.get(key)


def located(key: tuple, message: str) -> str:
    """``message`` led by the declaration site of ``key`` when one is known."""
    site = _SITES.get(key)
    return f"{site}: {message}" if site else message
