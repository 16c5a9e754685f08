"""Issue 13 "done when": the collectives family runs on every golden program
(every valid manifest entry, with its --dim bindings) and on every zoo
selection without an internal error. A refusal (a TileFoundryError, one line)
is allowed only where the program is refused before any family runs; an
unformable reshard is a finding, never an exception."""
from __future__ import annotations

import os

import pytest

from tests.conftest import PROGRAMS, golden_manifest
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.collectives import CollectivesMetadata, CollectivesSummaryMetadata
from tilefoundry.dsl.loader import load_selection
from tilefoundry.models import MODELS
from tilefoundry.ops.sharding import Reshard
from tilefoundry.render.report import render_analysis

ENTRIES = golden_manifest()["valid"]
VERDICTS = {"op", "no-op", "not-inter-tile", "unformable", "insufficient-information",
            "not-a-work-division-pair", "selection"}


def _check(result) -> None:
    """Every reached Reshard carries one record, and the summary counts them."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import Call

    body = iter_nodes(result.function.body) if result.function.body is not None else []
    reshards = [n for n in body if isinstance(n, Call) and isinstance(n.op, Reshard)]
    records = [r.get_metadata(CollectivesMetadata) for r in reshards]
    assert all(r is not None and r.verdict in VERDICTS for r in records)
    summary = result.function.get_metadata(CollectivesSummaryMetadata)
    assert summary.reshards == len(reshards)
    assert summary.bytes >= sum(r.bytes for r in records)
    for record in records:
        if record.op is not None:
            assert record.verifies is not None and record.ktir is not None or record.findings
    text = render_analysis(result).text
    assert f"# collectives reshards={len(reshards)} " in text


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["stem"] for e in ENTRIES])
def test_collectives_runs_on_every_golden_program(entry):
    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        module, function = load_selection(f"{entry['source']}:{entry['selector']}")
        dims = {k: int(v) for k, v in entry["dims"].items()} or None
        _check(analyze(module, function, analysis="collectives", dims=dims))
    finally:
        os.chdir(cwd)


# the whole-model decode steps are their layers' kernels over again (each layer
# kernel is a selection of its own): they are left to the zoo's whole-model tests
CASES = [(m, s) for m in MODELS for s in m.selections if s.kind != "decode-step"]


@pytest.mark.parametrize("model,selection", CASES,
                         ids=[f"{m.name}:{s.selector}" for m, s in CASES])
def test_collectives_runs_on_every_zoo_selection(model, selection):
    from tests.models.zoo_cache import selected

    module, function = selected(model, selection)  # each model file loaded once
    _check(analyze(module, function, analysis="collectives", dims=selection.dim_map()))
