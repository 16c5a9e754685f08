"""The whole-model decode steps (issue 23 items 2-4): embedding, every layer at
the published count and the head, placed over the whole device, analysed once
for this module on each target (with every other row of docs/models.md, which
tools/gen_models_doc.py builds from the same summaries):

- the timeline never beats the roofline, and the memory-bound step is within 3x
  of its ideal (H200; the B200's performance family is refused while its
  document states no special-function rate, zoo_cache);
- every per-CTA footprint fits shared memory and the register file, and the
  weights, caches and states fit the device's memory;
- the whole model's flops equal embed + the layers + lm_head, each derived by
  hand from the config (placed_flops.py states every term);
- `--breakdown` states one row per layer, and they add up to the makespan;
- docs/models.md is the page these analyses make.
"""
from __future__ import annotations

import pytest

from tilefoundry.models import MODELS

from tests.conftest import REPO, load_tool
from tests.models import placed_flops
from tests.models.zoo_cache import namespace

STEPS = [(m, s) for m in MODELS for s in m.selections if s.kind == "decode-step"]
SLACK = 3


@pytest.fixture(scope="module")
def gen():
    return load_tool("gen_models_doc")


@pytest.fixture(scope="module")
def found(gen):
    """selector -> summary (gen_models_doc.summary) of every row of the page."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import resolve_selector

    summaries = {}
    for model in MODELS:
        for selection in gen.doc_selections(model):
            module = resolve_selector(namespace(model.file), selection.selector)
            result = analyze(module, module.entry_function(), analysis=gen.families_for(selection),
                             dims=selection.dim_map())
            summaries[selection.selector] = gen.summary(result, whole_model=selection.kind == "decode-step")
        gen.analyse_attended(model, namespace(model.file), summaries)  # the attended-length table
    return summaries


def _ids(cases):
    return [s.selector for _, s in cases]


def test_every_model_with_a_published_stack_has_a_decode_step_per_target():
    stepped = {m.name for m, _ in STEPS}
    assert stepped == {m.name for m in MODELS} - {"deepseek-v3-mla"}
    for model in MODELS:
        if model.name in stepped:
            assert [s.target for m, s in STEPS if m is model] == [p.target for p in model.placed_roots]


@pytest.mark.parametrize("model,selection", STEPS, ids=_ids(STEPS))
def test_decode_step_predicted_is_at_least_ideal_and_within_3x(gen, found, model, selection):
    row = found[selection.selector]
    assert row["bound_by"] == "memory"
    if "performance" not in gen.families_for(selection):
        assert row["predicted_ns"] is None
        return
    assert row["waves"] == 1
    assert row["ideal_ns"] <= row["predicted_ns"] <= SLACK * row["ideal_ns"]


@pytest.mark.parametrize("model,selection", STEPS, ids=_ids(STEPS))
def test_decode_step_footprints_fit(found, model, selection):
    footprint = found[selection.selector]["footprint"]
    assert {"gmem", "smem", "rmem"} <= set(footprint)
    for level, (peak, capacity) in footprint.items():
        if capacity is not None:
            assert peak <= capacity, (level, peak, capacity)


@pytest.mark.parametrize("model,selection", STEPS, ids=_ids(STEPS))
def test_decode_step_flops_equal_the_hand_derived_figure(found, model, selection):
    assert found[selection.selector]["flops"] == placed_flops.whole(model.name)


@pytest.mark.parametrize("model,selection", [c for c in STEPS if c[1].target == "nvidia.h200_sxm"],
                         ids=_ids([c for c in STEPS if c[1].target == "nvidia.h200_sxm"]))
def test_breakdown_has_one_row_per_layer_adding_up_to_the_makespan(found, model, selection):
    row = found[selection.selector]
    calls = [call for call, _, _ in row["breakdown"] if call != "(entry)"]
    assert calls == ["embed", *(f"layer{i}" for i in range(model.layers)), "lm_head"]
    assert sum(time_ns for _, time_ns, _ in row["breakdown"]) == row["predicted_ns"]


def test_models_doc_is_current(gen, found):
    text = gen.page(found)
    assert (REPO / "docs" / "models.md").read_text(encoding="utf-8") == text, (
        "docs/models.md is stale: run python tools/gen_models_doc.py")
