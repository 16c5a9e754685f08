"""Issue 20 item 6: every logical zoo selection passes ``check --placed`` (each
participant on its own box, assembled against the logical run). Selections
whose arguments pass 240 M elements (the 128k-vocabulary heads, the MoE expert
banks) take seconds and gigabytes each: the suite skips them by that rule and
``bench/zoo_placed.py`` runs every selection. The placed roots' selections
(issue 23: 128 CTAs, ctx_len >= 1024 at the published sizes) are checked placed
on reduced-config copies, in tests/models/test_zoo_placed_numerics.py."""
from __future__ import annotations

from math import prod

import pytest

from tilefoundry.models import MODELS

SUITE_ELEMENTS = 240 * 2**20


def _small_dims(module, function, selection) -> dict | None:
    """Each dim the selection needs at 128, or at the smallest extent its
    declared range admits where that is larger."""
    from tilefoundry.analysis.dim_binding import reached_dimvars

    _, required = reached_dimvars(module, function)
    names = [a.split("=")[0] for a in selection.dim_args() if "=" in a]
    return {name: max(128, required[name].lo) for name in names} or None


CASES = [(m, s) for m in MODELS for s in m.logical_selections]


@pytest.mark.parametrize("model,selection", CASES, ids=[f"{m.name}:{s.selector}" for m, s in CASES])
def test_zoo_selection_passes_check_placed(model, selection):
    from tilefoundry.api import _typed_view
    from tilefoundry.api import load
    from tilefoundry.execute import check_placed
    from tilefoundry.execution import prepare

    source = f"{model.source}:{selection.selector}"
    module, function = load(source)
    dims = _small_dims(module, function, selection)
    view = _typed_view(module, function, dims)
    elements = sum(prod(int(e) for e in p.type.shape) for p in view.function.params)
    if elements > SUITE_ELEMENTS:
        pytest.skip(f"{elements:,} argument elements: bench/zoo_placed.py runs it")
    p = prepare((module, function), dims=dims)
    report = check_placed(p.function, p.arguments)
    assert report.passed, report.mismatch.line()
