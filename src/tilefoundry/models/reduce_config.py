"""Reduced-config copies of a zoo model file (``tilefoundry.models.reduced``, built here).

A model file states its published config as module-level constants. A reduced
copy is the same file with some of those constants replaced (a tiny checkpoint's
``config.json``, a test's small shapes): nothing else changes, the kernels,
their placement and their loops are the shipped ones. Three rules keep every
divisibility the placed kernels need:

- a config constant is what the caller gives (``D_MODEL=64``); the placement
  constants a file lists in ``REDUCE_RULES`` (CTA counts, K tiles, KV blocks)
  each become the largest power of two, at most the published value, that
  divides every figure the rule lists (a split of N over E CTAs needs E | N,
  ``tile(E, step)`` needs step | E), unless the caller gives them too;
- every condition of the file's ``REDUCE_REQUIRES`` (``N_Q % N_KV == 0``: a
  query group per KV head) must hold, else the copy is refused naming it;
- ``LAYERS`` smaller than published keeps the whole-model decode step's first
  LAYERS layer calls.

``dtype="f32"`` writes every ``"bf16"`` of the file as ``"f32"``: an f32 copy of
the same program, which a reference in f32 can be held against to 1e-4.
"""
from __future__ import annotations

import ast
import hashlib
import math
import re
import tempfile
from pathlib import Path

from tilefoundry.errors import UsageError

__all__ = ["constants", "reduced", "reduced_text"]


def constants(text: str) -> dict:
    """The module-level constants of a model file's text: each plain ``NAME =
    expression`` whose expression evaluates from the constants above it (and
    ``math``); assignments that do not (a DimVar, a Topology) are left out."""
    env: dict = {"math": math, "max": max, "min": min}
    found: dict = {}
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        try:
            value = eval(compile(ast.Expression(node.value), "<constant>", "eval"), dict(env))
        except Exception:  # a DSL value (DimVar, Topology): not a config constant
            continue
        if isinstance(value, (int, float, str, dict, tuple)) and not isinstance(value, bool):
            env[node.targets[0].id] = found[node.targets[0].id] = value
    return found


def _figure(expression: str, env: dict, file: str, name: str) -> int:
    try:
        value = eval(expression, {"max": max, "min": min}, dict(env))
    except Exception as exc:
        raise UsageError(f"{file}: REDUCE_RULES['{name}'] figure {expression!r} does not evaluate "
                         f"({type(exc).__name__}: {exc})") from None
    return int(value)


def _placement(published: int, figures: list[int]) -> int:
    """The largest power of two <= ``published`` dividing every figure (at least 1)."""
    value = 1
    while value * 2 <= published and all(f % (value * 2) == 0 for f in figures):
        value *= 2
    return value


def _values(file: str, text: str, dims: dict) -> dict:
    published = constants(text)
    unknown = sorted(set(dims) - set(published))
    if unknown:
        raise UsageError(f"reduced: {file} has no config constant {unknown[0]!r} "
                         f"(it states {', '.join(k for k in published if k.isupper())})")
    rules = published.get("REDUCE_RULES", {})
    # the constants derived from others (D_INNER = EXPAND * D_MODEL) follow the given ones
    env = {**constants(_substituted(text, dims)), **dims}
    for name, figures in rules.items():
        if name not in dims:
            env[name] = _placement(int(published[name]),
                                   [_figure(f, env, file, name) for f in figures])
    env = {**constants(_substituted(text, {**dims, **{n: env[n] for n in rules}})), **dims}
    for condition in published.get("REDUCE_REQUIRES", ()):
        if not eval(condition, {}, dict(env)):
            shown = {k: env[k] for k in re.findall(r"[A-Z_][A-Z0-9_]*", condition) if k in env}
            raise UsageError(f"reduced: {file}: the config breaks {condition!r} ({shown}); "
                             "give dimensions that keep it")
    return {name: env[name] for name in [*dims, *rules] if env[name] != published.get(name)}


def _substituted(text: str, values: dict) -> str:
    """``text`` with each ``NAME = ...`` line of ``values`` assigning the value."""
    for name, value in values.items():
        text = re.sub(rf"^{name} = .*$", f"{name} = {value!r}", text, count=1, flags=re.M)
    return text


def reduced_text(file: str, text: str, dims: dict, *, dtype: str | None = None) -> str:
    """``text`` (a model file) with ``dims`` applied by the rules above."""
    values = _values(file, text, dims)
    for name, value in values.items():
        text, count = re.subn(rf"^{name} = .*$", f"{name} = {value!r}", text, count=1, flags=re.M)
        if count != 1:
            raise UsageError(f"reduced: {file}: no line assigns {name} at the start of a line")
    if "LAYERS" in values:
        keep = int(values["LAYERS"])
        text = re.sub(r"^ +h = layer([0-9]+)\(.*\n",
                      lambda m: m.group(0) if int(m.group(1)) < keep else "", text, flags=re.M)
    if dtype is not None:
        if dtype != "f32":
            raise UsageError(f"reduced: dtype={dtype!r}; a copy is the file's own dtypes or 'f32'")
        text = text.replace('"bf16"', '"f32"')
    return text


def reduced(model, *, dtype: str | None = None, folder=None, **dims) -> Path:
    """A copy of zoo ``model`` (a ``ZooModel``) with config constants ``dims``
    (e.g. ``D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, FFN=128, VOCAB=256,
    MAX_POS=64, LAYERS=2``), written once per distinct text into ``folder``
    (default: a folder of the system's temporary directory) under a module name
    of its own; returns its path."""
    text = reduced_text(model.file, model.source.read_text(encoding="utf-8"), dims, dtype=dtype)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    where = Path(folder) if folder is not None else Path(tempfile.gettempdir()) / "tilefoundry-reduced"
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"reduced_{model.file.removesuffix('.py')}_{digest}.py"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return path
