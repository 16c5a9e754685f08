"""One checker for the arguments of every public function (``tilefoundry.api``,
``tilefoundry.execution``, ``tilefoundry.packing``): an argument is checked
at the boundary, before any work, against a ``Rule`` (what it takes, in
words, and the test), and one of another kind or value is an ``ArgumentError``
of one line naming the call, the argument, what it takes and what it got:

    tilefoundry.api.figures: topology takes a topology level name such as 'cta', or None, got int 5

never an AttributeError or TypeError from deep inside. The rules that need a
room above this one (a Target, a selection) are built in that room from the
same ``Rule`` and ``checked``. At the package root beside ``errors`` (it
imports nothing else of ours), so every room, the packer included, can use it.
"""
from __future__ import annotations

import math
import numbers
import os
from typing import Any, Callable

from tilefoundry.errors import ArgumentError

__all__ = ["FLAG", "NAME", "PATH", "Rule", "Wrong", "checked", "instance_of", "kind_of", "number_at_least",
           "optional", "refused", "sequence_of", "when", "whole_at_least"]


class Wrong(Exception):
    """Raised by a rule's test: the value is not taken. ``part`` names the
    part refused (``dims['seq']``, ``buffers[3]``) and ``takes`` what that
    part takes, when they differ from the argument's; ``value`` the part."""

    _NONE = object()

    def __init__(self, part: str | None = None, takes: str | None = None, value: Any = _NONE):
        super().__init__(part or "")
        self.part, self.takes, self.value = part, takes, value


class Rule:
    """What one argument takes: ``takes`` in words, and ``test`` (the value
    -> the value the call uses; it raises Wrong to refuse)."""

    __slots__ = ("takes", "test")

    def __init__(self, takes: str, test: Callable[[Any], Any]):
        self.takes, self.test = takes, test

    def __repr__(self) -> str:
        return f"Rule({self.takes!r})"


def when(takes: str, predicate: Callable[[Any], bool]) -> Rule:
    """The rule taking each value ``predicate`` holds of, unchanged."""
    def test(value):
        if not predicate(value):
            raise Wrong()
        return value

    return Rule(takes, test)


def kind_of(value) -> str:
    """How a refusal names what it got: the type, and the value when short."""
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if value is None:
        return "None"
    plain = isinstance(value, (int, float, str, bytes, list, tuple, dict))
    try:
        shown = repr(value) if plain else ""
    except (RecursionError, ValueError):  # a self-containing list, an int past repr's digits
        shown = ""
    return f"{type(value).__name__} {shown}" if shown and len(shown) <= 40 else type(value).__name__


def refused(who: str, argument: str, takes: str, value) -> ArgumentError:
    """The ArgumentError of one argument: the call, the argument, what it takes, what it got."""
    return ArgumentError(f"{who}: {argument} takes {takes}, got {kind_of(value)}")


def checked(who: str, argument: str, value, rule: Rule):
    """``value`` as ``rule`` takes it, else the one-line ArgumentError."""
    try:
        return rule.test(value)
    except Wrong as wrong:
        part = wrong.part or argument
        shown = value if wrong.value is Wrong._NONE else wrong.value
        raise refused(who, part, wrong.takes or rule.takes, shown) from None


# ---------------------------------------------------------------- rules


def _flag(value):
    if not isinstance(value, bool):  # a truthy string would silently mean yes
        raise Wrong()
    return value


FLAG = Rule("True or False", _flag)


def _name(value):
    if not isinstance(value, str) or not value.strip():
        raise Wrong()
    return value


NAME = Rule("a non-empty str", _name)


def _path(value):
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise Wrong()
    return value


PATH = Rule("a path (a str or a pathlib.Path)", _path)


def whole_at_least(least: int, example: str) -> Rule:
    """A whole number >= ``least`` (a bool is no number here)."""
    def test(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise Wrong()
        return int(value)

    return Rule(f"a whole number >= {least} (e.g. {example})", test)


def number_at_least(least: float, example: str, *, above: bool = False) -> Rule:
    """A finite real number >= ``least`` (> with ``above``)."""
    def test(value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise Wrong()
        if value < least or (above and value == least):
            raise Wrong()
        return value

    return Rule(f"a finite number {'>' if above else '>='} {least:g} (e.g. {example})", test)


def optional(rule: Rule) -> Rule:
    """``rule``, or None."""
    return Rule(f"{rule.takes}, or None", lambda value: None if value is None else rule.test(value))


def instance_of(kinds, takes: str) -> Rule:
    def test(value):
        if not isinstance(value, kinds) or isinstance(value, type):
            raise Wrong()
        return value

    return Rule(takes, test)


def sequence_of(argument: str, item: Rule, takes: str) -> Rule:
    """A list or tuple (any iterable but a str, bytes or mapping, taken as a
    list) whose every item ``item`` takes; a refused item is named by its index."""
    from collections.abc import Iterable, Mapping

    def test(value):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise Wrong()
        items = list(value)
        for index, one in enumerate(items):
            try:
                item.test(one)
            except Wrong as wrong:
                raise Wrong(wrong.part or f"{argument}[{index}]", wrong.takes or item.takes,
                            one if wrong.value is Wrong._NONE else wrong.value) from None
        return items

    return Rule(takes, test)
