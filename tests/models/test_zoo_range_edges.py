"""Issue 22 item 14: every value a zoo selection's ranges declare valid must
analyse. Each selection is analysed with all four families at both ends of
each declared range (a one-slot KV cache at ctx_len=1 used to be refused:
an empty cache read constrained its position to nothing). The logical roots
here; the placed roots (issue 23) share their layers' ranges and are analysed
at their stated dims by tests/models/test_models_selections.py, a whole-model
step at two ends being a minute of the suite's ten."""
from __future__ import annotations

import pytest

from tilefoundry.models import MODELS

FAMILIES = ["compute-cost", "memory", "roofline", "performance"]


def _ranged():
    for model in MODELS:
        for selection in model.logical_selections:
            if any("=" in a for a in selection.dim_args()):
                yield model, selection


CASES = list(_ranged())


@pytest.mark.parametrize("model,selection", CASES, ids=[f"{m.name}:{s.selector}" for m, s in CASES])
def test_both_ends_of_every_declared_range_analyse(model, selection):
    import tilefoundry
    from tilefoundry.analysis.dim_binding import reached_dimvars

    module, function = tilefoundry.load(f"{model.source}:{selection.selector}")
    _, open_dims = reached_dimvars(module, function)
    assert open_dims, "a selection listed with dims states a range"
    for name, var in open_dims.items():
        for extent in (var.lo, var.hi - 1):
            dims = {n: (extent if n == name else v.lo) for n, v in open_dims.items()}
            result = tilefoundry.analyze((module, function), dims=dims, families=FAMILIES)
            assert result.records, f"{name}={extent}: no records"
