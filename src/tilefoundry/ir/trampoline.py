"""Deep recursion without Python's stack.

A whole-model step inlines thousands of dependent statements and nests its
Modules as deep as its author likes, so no walk over a body or a module tree
may recurse on Python's stack (its limit is about a thousand frames). A walk is
written as a generator that says ``result = yield walk(child)`` where it would
have called ``walk(child)``; :func:`trampoline` runs it on a heap stack.
"""
from __future__ import annotations

from typing import Generator


def trampoline(start: Generator):
    """Run the generator ``start`` to its return value. Every value it (or a
    generator it started) yields is itself a generator, run to completion
    before its return value is sent back: a recursive call, kept on a list."""
    stack = [start]
    answer = None
    while stack:
        try:
            call = stack[-1].send(answer)
        except StopIteration as finished:
            stack.pop()
            answer = finished.value
            continue
        stack.append(call)
        answer = None
    return answer
