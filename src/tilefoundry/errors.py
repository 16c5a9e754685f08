"""The error classes every room raises; the CLI turns them into one stderr line.

Kept at the package root (no imports) so that every floor can raise them without
importing a higher one; the one suggestion helper of their messages sits here too.
"""
from __future__ import annotations


def did_you_mean(word: str, candidates) -> str:
    """``; did you mean 'x'?`` for the nearest candidate, or ``''``: the one
    suggestion form of every refusal that names something unknown (a flag, a
    command, a selector). A unique prefix wins first (``--comp``), then the
    closest spelling."""
    import difflib

    candidates = sorted(set(candidates))
    prefixed = [c for c in candidates if c.startswith(word)]
    nearest = prefixed[:1] if len(prefixed) == 1 else difflib.get_close_matches(word, candidates, n=1)
    return f"; did you mean '{nearest[0]}'?" if nearest else ""


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
