"""The error classes every room raises; the CLI prints each as one stderr line.

Kept at the package root (no imports of ours) so that every floor can raise
them without importing a higher one; the one suggestion helper of their
messages sits here too, and the one-line form: ``str(error)`` of every
TileFoundryError is the CLI's error line (without ``tilefoundry: error:``), so
a Python caller reads what the command line prints (docs/api.md).
"""
from __future__ import annotations

import re

#: the reference's two-line form: a message, then ``  at <file:line:col> variable '<x>'``
_AT_LINE = re.compile(r"^\s+at (?P<where>\S+)(?: variable '(?P<name>[^']*)')?$")
#: the one-line form every parser and loader refusal leads with: ``file:line:col: message``
_LEADING = re.compile(r"^(?P<where>[^\s]+?:\d+:\d+): ")


def _located(message: str):
    """(reason, where, value name) of a two-line message, else None."""
    lines = [line for line in message.splitlines() if line.strip()]
    if len(lines) == 2:
        found = _AT_LINE.match(lines[1])
        if found:
            return lines[0], found["where"], found["name"]
    return None


def one_line(message: str) -> str:
    """The error line of ``message``: a trailing ``  at <file:line:col>
    variable '<x>'`` line (the reference's two-line form) leads the line
    instead; any other lines are joined with a blank."""
    located = _located(message)
    if located:
        reason, where, name = located
        return f"{where}: {reason}" + (f" (value '{name}')" if name else "")
    return " ".join(line.strip() for line in message.splitlines() if line.strip())


def reason_of(exc: BaseException) -> str:
    """What ``exc`` says without where: a TileFoundryError's ``reason``, else
    the first line of its text (or its type's name)."""
    if isinstance(exc, TileFoundryError):
        return exc.reason
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def did_you_mean(word: str, candidates, *, aliases=None, close: bool = True, shown=None) -> str:
    """``; did you mean 'x'?`` for the nearest candidate, or ``''``: the one
    suggestion form of every refusal that names something unknown (a flag, a
    command, a selector, an op, a dtype, a storage, a target, a dimension).

    In order, the first rule that names exactly one candidate wins:

    1. ``aliases``, a common other spelling of a candidate (``'bfloat16'`` for
       ``'bf16'``, ``'shared'`` for ``'smem'``), compared without case: the
       candidate is suggested, the alias never accepted in its place; an
       alias mapped to None has no counterpart, and nothing is suggested;
    2. the candidate spelled the same but for case and ``_``/``-``/``.``
       (``'CTXLEN'`` for ``'ctx_len'``);
    3. a unique prefix (``--comp``);
    4. a unique candidate with a part (split at ``.``, ``_``, ``-``) the word
       starts (``'h200'`` for ``'nvidia.h200_sxm'``);
    5. the closest spelling, unless ``close`` is False: where the nearest
       spelling is another real thing rather than a typo fixed (the nearest of
       ``'nvidia.a100'`` is another device), the caller turns it off.

    ``shown`` maps a candidate to how the user writes it (``'add'`` is
    written ``'tf.add'``); the word is matched against the candidate itself, so
    a common prefix of every written form does not make them all look near."""
    import difflib
    import re

    candidates = sorted({str(c) for c in candidates})
    if not isinstance(word, str) or not candidates:
        return ""

    def one(found) -> str:
        found = sorted(set(found))
        if len(found) != 1:
            return ""
        written = shown.get(found[0], found[0]) if isinstance(shown, dict) else \
            shown(found[0]) if shown else found[0]
        return f"; did you mean '{written}'?"

    def bare(text: str) -> str:
        return re.sub(r"[-_.]", "", text.lower())

    wanted = word.lower()
    named = {alias.lower(): target for alias, target in (aliases or {}).items()}
    if wanted in named and named[wanted] is None:
        return ""
    rules = (
        [named[wanted]] if named.get(wanted) in candidates else [],
        [c for c in candidates if bare(c) == bare(word)],
        [c for c in candidates if c.startswith(word)],
        [c for c in candidates if any(part.startswith(wanted) for part in re.split(r"[-_.]", c.lower())[1:])],
    )
    for found in rules:
        if word and found:
            hint = one(found)
            if hint:
                return hint
    if not close:
        return ""
    return one(difflib.get_close_matches(word, candidates, n=1))


#: how a refusal spells a dimension binding: the Python API's ``dims={...}``
#: unless the command line runs (``cli.main`` sets "cli" for the run's length)
_BINDING_FORM = ["python"]


def spell_bindings(form: str) -> str:
    """Set how refusals spell a binding ("cli" or "python"); return the previous form."""
    previous, _BINDING_FORM[0] = _BINDING_FORM[0], form
    return previous


def binding_text(name: str, value: object = "EXTENT") -> str:
    """A binding of dimension ``name`` as the caller writes it: ``--dim cols=EXTENT``
    on the command line, ``dims={"cols": EXTENT}`` in Python (issue 40 item 7)."""
    if _BINDING_FORM[0] == "cli":
        return f"--dim {name}={value}"
    return f'dims={{"{name}": {value}}}'


class TileFoundryError(Exception):
    """Base of every refusal the product states to its user (CLI exit 1).

    ``str(error)`` is the one line the CLI prints. A message raised in the
    two-line form (the statement, then ``  at file:line:col variable 'x'``)
    keeps its parts: ``reason`` (the first line), ``location`` and ``value``
    (None when it names none); ``raw`` is the text as raised."""

    exit_code = 1

    @property
    def raw(self) -> str:
        return super().__str__()

    def __str__(self) -> str:
        return one_line(self.raw)

    @property
    def reason(self) -> str:
        located = _located(self.raw)
        if located:
            return located[0]
        text = self.raw
        return text.splitlines()[0] if text else type(self).__name__

    @property
    def location(self) -> str | None:
        located = _located(self.raw)
        if located:
            return located[1]
        leading = _LEADING.match(str(self))  # ``file:line:col: ...`` (issue 40 item 7)
        return leading["where"] if leading else None

    @property
    def value(self) -> str | None:
        located = _located(self.raw)
        return located[2] if located else None


class VerifyError(TileFoundryError, ValueError):
    """A program breaks a type, shape, layout or authoring rule."""


class AnalysisError(TileFoundryError):
    """An analysis cannot state its facts for this program and target."""


class EvaluationError(TileFoundryError):
    """A program cannot be executed with these inputs (numpy run, issue 20)."""


class SelectionError(TileFoundryError):
    """A CLI/API selector names nothing or the wrong kind of thing."""


class DimBindingError(TileFoundryError):
    """A ``--dim`` value the run cannot bind: malformed, repeated or a list
    (companions §8.3 states exit 1 for every --dim error, like a refused program)."""


class UsageError(TileFoundryError):
    """Bad command-line usage detected after argument parsing (exit 2)."""

    exit_code = 2


class ArgumentError(TileFoundryError, TypeError):
    """A Python API argument of a kind or value the call does not take
    (``tilefoundry.analyze(..., target=5)``): refused at the public boundary."""


class PackingInputError(TileFoundryError):
    """A buffer file (MiniMalloc CSV) that does not state a packing problem."""
