"""Every number of a JSON document, for tests that hold a report to "no
negative figure" (empty loops, zero extents)."""
from __future__ import annotations


def numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value
