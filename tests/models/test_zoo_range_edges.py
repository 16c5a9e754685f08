"""Issue 22 item 14: every value a zoo selection's ranges declare valid must
analyse. Each selection is analysed with all four families at both ends of
each declared range (a one-slot KV cache at ctx_len=1 used to be refused:
an empty cache read constrained its position to nothing). A whole-model decode
step reaches the same ranges as its layers, which are selections of their own
(so it is left out), and on the B200 the performance family is left out while
the B200 document states no special-function rate (tests/models/zoo_cache.py)."""
from __future__ import annotations

import pytest

from tilefoundry.models import MODELS



def _ranged():
    for model in MODELS:
        for selection in model.selections:
            if any("=" in a for a in selection.dim_args()) and selection.kind != "decode-step":
                yield model, selection


CASES = list(_ranged())


@pytest.mark.parametrize("model,selection", CASES, ids=[f"{m.name}:{s.selector}" for m, s in CASES])
def test_both_ends_of_every_declared_range_analyse(model, selection):
    import tilefoundry
    from tilefoundry.analysis.dim_binding import reached_dimvars
    from tests.models.zoo_cache import families_for, selected

    module, function = selected(model, selection)  # each model file loaded once
    _, open_dims = reached_dimvars(module, function)
    assert open_dims, "a selection listed with dims states a range"
    for name, var in open_dims.items():
        for extent in (var.lo, var.hi - 1):
            dims = {n: (extent if n == name else v.lo) for n, v in open_dims.items()}
            result = tilefoundry.analyze((module, function), dims=dims, families=list(families_for(selection)))
            assert result.records, f"{name}={extent}: no records"
