"""Name resolution for authored bodies (authoring.md §2.7) and the pending
``@module(...)`` declarations a body's ``with Mesh`` reads its levels from."""
from __future__ import annotations

import builtins
import sys

_MISSING = object()


def capture_frames(frame) -> list[dict]:
    """Locals of the frames enclosing a decorator call, innermost first, up to
    (not including) module level. Snapshots: siblings defined below are not seen."""
    found = []
    while frame is not None:
        if frame.f_locals is frame.f_globals:
            break
        found.append(dict(frame.f_locals))
        frame = frame.f_back
    return found


def closure_of(fn) -> dict:
    cells = {}
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return cells


class Env:
    """closure cells -> module globals -> enclosing frame locals -> builtins."""

    def __init__(self, fn, frames: list[dict]):
        self.closure = closure_of(fn)
        self.globals = fn.__globals__
        self.frames = frames

    def lookup(self, name: str, *, builtins_too: bool = True):
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        for scope in self.frames:
            if name in scope:
                return scope[name]
        if builtins_too and hasattr(builtins, name):
            return getattr(builtins, name)
        return _MISSING


class Names:
    """A mapping for ``eval``: parser locals (compile-time values) then Env."""

    def __init__(self, local_values: dict, env: Env):
        self.local_values = local_values
        self.env = env

    def __getitem__(self, name):
        if name in self.local_values:
            return self.local_values[name]
        value = self.env.lookup(name)
        if value is _MISSING:
            raise KeyError(name)
        return value


# ---------------------------------------------------------------- pending module declarations

# id(frame that called module(...)) -> [declaration, ...] (innermost last)
_PENDING: dict[int, list] = {}
UNDECLARED = object()


class Declaration:
    __slots__ = ("topologies", "target")

    def __init__(self, topologies, target):
        self.topologies = topologies
        self.target = target


def push_declaration(frame, declaration: Declaration) -> None:
    _PENDING.setdefault(id(frame), []).append(declaration)


def pop_declaration(frame, declaration: Declaration) -> None:
    stack = _PENDING.get(id(frame))
    if stack and declaration in stack:
        stack.remove(declaration)
        if not stack:
            del _PENDING[id(frame)]


def enclosing_topologies(frame):
    """Topologies declared by the @module(...) around the class body ``frame``
    (or the nearest outer one that declares any), else None."""
    while frame is not None and frame.f_locals is not frame.f_globals:
        outer = frame.f_back
        stack = _PENDING.get(id(outer)) if outer is not None else None
        if stack:
            for declaration in reversed(stack):
                if declaration.topologies is not UNDECLARED:
                    return declaration.topologies
        frame = outer
    return None


def caller_frame(depth: int):
    return sys._getframe(depth + 1)
