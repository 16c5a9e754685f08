"""The error classes every room raises; the CLI turns them into one stderr line.

Kept at the package root (no imports) so that every floor can raise them without
importing a higher one; the one suggestion helper of their messages and the one-line
form of a refusal (``one_line``) sit here too.
"""
from __future__ import annotations


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


def one_line(message: str) -> str:
    """A refusal as one line (the CLI's error line, a sweep row's status): a
    library message's trailing ``  at <file:line:col> variable '<x>'`` line
    (the reference's two-line form) leads the line instead."""
    import re

    lines = [line for line in message.splitlines() if line.strip()]
    if len(lines) == 2:
        located = re.match(r"^\s+at (?P<where>\S+)(?: variable '(?P<name>[^']*)')?$", lines[1])
        if located:
            name = f" (value '{located['name']}')" if located["name"] else ""
            return f"{located['where']}: {lines[0]}{name}"
    return " ".join(line.strip() for line in lines)


class TileFoundryError(Exception):
    """Base of every refusal the product states to its user (CLI exit 1)."""

    exit_code = 1


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


class PackingInputError(TileFoundryError):
    """A buffer file (MiniMalloc CSV) that does not state a packing problem."""
