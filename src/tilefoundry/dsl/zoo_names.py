"""Zoo names as selections (issue 40 item 5): ``llama3-8b`` or
``llama3-8b:Llama3_8B_H200.decode_step`` wherever a command takes
``file.py[:Selector]``, and what a model name covers in a sweep. The one
resolver every command and ``tilefoundry sweep`` share.

- ``zoo_source(text)``: ``(model file, selector)`` of a zoo name, for the
  loader's ``split_source``; None when ``text`` names no zoo model (a file
  path, a ``.py`` name), so a file keeps its meaning.
- ``zoo_selections(name, selector, targets)``: the selections one space entry
  covers. ``model:Selector`` is that selection. A model name alone is the
  placed roots of the swept targets (``Llama3_8B_H200.*`` for the H200): a
  placed root is built for one target, and its selections are the kernels as
  they run there; a target with no placed root of the model (the CPU) gets
  the logical root's selections (the specification, unplaced).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from tilefoundry.errors import SelectionError, did_you_mean

__all__ = ["ZooPick", "covered_roots", "zoo_model", "zoo_names", "zoo_selections", "zoo_source"]


@dataclass(frozen=True)
class ZooPick:
    """One selection a zoo name covers.

    Attributes:
        name: ``model:Root[.child][.function]``, the selection's key.
        path: the model's file (inside the installed package).
        selector: ``Root[.child][.function]``.
        dims: the zoo's own bindings (``ctx_len=4096``), ``((name, extent), ...)``.
        zoo: the model's name.
        target: the target its placed root is built for, or None (the logical root).
    """

    name: str
    path: str
    selector: str
    dims: tuple
    zoo: str
    target: str | None


def _looks_like_a_name(text: str) -> bool:
    return bool(text) and not text.endswith(".py") and "/" not in text and os.sep not in text


def zoo_names() -> tuple[str, ...]:
    from tilefoundry.models import MODELS

    return tuple(model.name for model in MODELS)


def zoo_model(name: str):
    """The zoo model called ``name``, or None."""
    if not _looks_like_a_name(name):
        return None
    from tilefoundry.models import MODELS

    return next((model for model in MODELS if model.name == name), None)


def zoo_source(text: str) -> tuple[str, str] | None:
    """``(model file, selector)`` for ``model[:Selector]`` (a model alone selects
    its logical root), or None when ``text`` names no zoo model."""
    name, _, selector = text.partition(":")
    model = zoo_model(name)
    if model is None:
        return None
    return str(model.source), selector or model.root


def covered_roots(model, targets) -> tuple[str, ...]:
    """The roots a model name alone covers for ``targets`` (None: each placed
    root on its own target): the placed root of each target that has one,
    the logical root for a target that has none."""
    placed = {root.target: root.root for root in model.placed_roots}
    wanted = [t for t in targets if t is not None] or list(placed)
    roots = []
    for target in wanted:
        root = placed.get(target, model.root)
        if root not in roots:
            roots.append(root)
    return tuple(roots)


def zoo_selections(name: str, selector: str | None, targets=(None,)) -> tuple[ZooPick, ...]:
    """The selections ``name[:selector]`` covers in a space sweeping ``targets``
    (a refusal names the model's selections, with the nearest)."""
    model = zoo_model(name)
    if model is None:
        raise SelectionError(f"'{name}' is no zoo model (tilefoundry models: {', '.join(zoo_names())})"
                             f"{did_you_mean(name, zoo_names())}")
    options = {s.selector: s for s in model.selections}
    if selector:
        if selector not in options:
            raise SelectionError(f"zoo model {name} has no selection '{selector}'; it has "
                                 f"{', '.join(options)}{did_you_mean(selector, options)}")
        picked = [options[selector]]
    else:
        roots = covered_roots(model, targets)
        picked = [s for s in model.selections if s.selector.split(".")[0] in roots]
    placed = {root.root: root.target for root in model.placed_roots}
    return tuple(ZooPick(f"{name}:{s.selector}", str(model.source), s.selector, s.dims, name,
                         placed.get(s.selector.split(".")[0]))
                 for s in picked)
