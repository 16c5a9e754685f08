"""The whole-model decode steps (issue 23 items 2 and 4): embedding, every layer at
the published count and the head, placed over the whole device, each analysed
once for this module on each target.

- the timeline never beats the roofline, and the memory-bound step is within 3x
  of its ideal (H200; the B200's performance family is refused while its
  document states no special-function rate, zoo_cache);
- every per-CTA footprint fits shared memory and the register file, and the
  weights, caches and states fit the device's memory;
- the whole model's flops equal embed + the layers + lm_head, each derived by
  hand from the config (placed_flops.py states every term);
- `--breakdown` states one row per layer, which add up to the makespan.
"""
from __future__ import annotations

import pytest

from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.memory.records import MemoryMetadata
from tilefoundry.analysis.performance import PerformanceSummaryMetadata
from tilefoundry.analysis.roofline import RooflineMetadata
from tilefoundry.models import MODELS

from tests.models import placed_flops
from tests.models.zoo_cache import families_for, selected

STEPS = [(m, s) for m in MODELS for s in m.selections if s.kind == "decode-step"]
SLACK = 3


@pytest.fixture(scope="module")
def analysed():
    """selector -> the AnalysisResult of each decode step."""
    found = {}
    for model, selection in STEPS:
        module, function = selected(model, selection)
        found[selection.selector] = analyze(module, function, analysis=families_for(selection),
                                            dims=selection.dim_map())
    return found


def _ids(cases):
    return [s.selector for _, s in cases]


def test_every_model_with_a_published_stack_has_a_decode_step_per_target():
    stepped = {m.name for m, _ in STEPS}
    assert stepped == {m.name for m in MODELS} - {"deepseek-v3-mla"}
    for model in MODELS:
        if model.name in stepped:
            assert [s.target for m, s in STEPS if m is model] == [p.target for p in model.placed_roots]


@pytest.mark.parametrize("model,selection", STEPS, ids=_ids(STEPS))
def test_decode_step_predicted_is_at_least_ideal_and_within_3x(analysed, model, selection):
    function = analysed[selection.selector].function
    roofline = function.get_metadata(RooflineMetadata)
    assert roofline.bound_by == "memory"
    performance = function.get_metadata(PerformanceSummaryMetadata)
    if "performance" not in families_for(selection):
        assert performance is None
        return
    assert performance.waves == 1
    assert roofline.ideal_ns <= performance.timeline.end_ns <= SLACK * roofline.ideal_ns


@pytest.mark.parametrize("model,selection", STEPS, ids=_ids(STEPS))
def test_decode_step_footprints_fit(analysed, model, selection):
    footprint = analysed[selection.selector].function.get_metadata(MemoryMetadata).footprint
    levels = {row.level for row in footprint}
    assert {"gmem", "smem"} <= levels
    for row in footprint:
        if row.capacity_bytes is not None:
            assert row.peak_bytes <= row.capacity_bytes, (row.level, row.peak_bytes, row.capacity_bytes)


@pytest.mark.parametrize("model,selection", STEPS, ids=_ids(STEPS))
def test_decode_step_flops_equal_the_hand_derived_figure(analysed, model, selection):
    cost = analysed[selection.selector].function.get_metadata(ComputeCostMetadata)
    assert {**dict(cost.flops), **dict(cost.service)} == placed_flops.whole(model.name)


def test_breakdown_has_one_row_per_layer_adding_up_to_the_makespan(analysed):
    from tilefoundry.render.report import render_analysis
    from tilefoundry.render.views.breakdown import ENTRY, breakdown_document

    result = analysed["Llama3_8B_H200.decode_step"]
    document = breakdown_document(result, render_analysis(result))
    rows = {row["call"]: row for row in document["calls"]}
    layers = [f"layer{i}" for i in range(32)]
    assert [row["call"] for row in document["calls"] if row["call"] != ENTRY] == ["embed", *layers, "lm_head"]
    assert len({(rows[name]["time_ns"], rows[name]["flops"]) for name in layers}) == 1
    assert sum(row["time_ns"] for row in document["calls"]) == document["totals"]["time"]
    ideal = result.function.get_metadata(RooflineMetadata).ideal_ns
    assert sum(rows[name]["ideal_ns"] for name in layers) <= ideal
