"""Every selection of the zoo registry analyses with all four families, in-process
(issue 9 item 11, issue 23): the logical kernels and layers, and the placed ones
on both targets, each analysed once for this module (``_analysed``). The
whole-model decode steps are analysed once, in test_models_whole.py. A selection
blocked by a fix still in progress elsewhere is listed in BLOCKED with the
reason, as a strict xfail (none today).

On the B200 the performance family refuses a program doing special-function work
while the B200 document states no rate for it (zoo_cache.B200_SPECIAL_UNSTATED):
such a selection is analysed with the other three families, and all four must
then either succeed or refuse with exactly that reason.

The placed layers and kernels are held to their bounds (issue 23 item 4):

- the timeline never beats the roofline: predicted-ns >= ideal-ns (the ideal is
  the whole-device bound of the summed work; the timeline runs each occurrence
  at one CTA's share of the device, so it can only be slower);
- a placed decode layer is memory-bound and within 3x of its ideal: it reads
  each weight once, spread over (nearly) every CTA; a placement off by 100x (a
  matmul on one CTA, the whole cache on every CTA) fails this;
- every per-CTA footprint fits: the peak of shared memory and of the register
  file is at most the target's capacity;
- each placed layer's and head's flops equal the figure derived by hand from the
  config (placed_flops.py holds the derivations)."""
from __future__ import annotations

import ast
from functools import lru_cache

import pytest

from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.memory.records import MemoryMetadata
from tilefoundry.analysis.performance import PerformanceSummaryMetadata
from tilefoundry.analysis.roofline import RooflineMetadata
from tilefoundry.errors import AnalysisError
from tilefoundry.models import KINDS, MODELS, TARGETS, models_dir

from tests.models import placed_flops
from tests.models.zoo_cache import FAMILIES, SPECIAL_REFUSAL, families_for, selected

# selector -> reason; each entry becomes a strict xfail (it must still fail)
BLOCKED: dict[str, str] = {}

CASES = [(m, s) for m in MODELS for s in m.selections if s.kind != "decode-step"]
PLACED = [(m, s) for m, s in CASES if any(s.selector.startswith(p.root + ".") for p in m.placed_roots)]
# the selections with a timeline (all of them once the B200 states its special rate)
TIMED = [(m, s) for m, s in PLACED if "performance" in families_for(s)]
LAYERS = [(m, s) for m, s in PLACED if s.kind == "layer"]
TIMED_LAYERS = [(m, s) for m, s in TIMED if s.kind == "layer"]
SLACK = 3


def _param(model, selection):
    marks = ()
    if selection.selector in BLOCKED:
        marks = (pytest.mark.xfail(strict=True, reason=BLOCKED[selection.selector]),)
    return pytest.param(model, selection, id=f"{model.name}:{selection.selector}", marks=marks)


@lru_cache(maxsize=None)
def _analysed(model_name: str, selector: str) -> dict:
    """What the tests read of one selection's analysis (made once for this module)."""
    model = next(m for m in MODELS if m.name == model_name)
    selection = next(s for s in model.selections if s.selector == selector)
    module, function = selected(model, selection)
    families = families_for(selection)
    result = analyze(module, function, analysis=families, dims=selection.dim_map())
    record = result.function
    roofline = record.get_metadata(RooflineMetadata)
    performance = record.get_metadata(PerformanceSummaryMetadata)
    cost = record.get_metadata(ComputeCostMetadata)
    refusal = None
    if families != FAMILIES:
        try:
            analyze(module, function, analysis=FAMILIES, dims=selection.dim_map())
        except AnalysisError as error:
            refusal = str(error)
    return {"executed": result.executed, "families": families, "refusal": refusal,
            "ideal": roofline.ideal_ns, "bound_by": roofline.bound_by,
            "predicted": performance.timeline.end_ns if performance else None,
            "footprint": record.get_metadata(MemoryMetadata).footprint,
            "flops": {**dict(cost.flops), **dict(cost.service)}}


def _figures(model, selection) -> dict:
    return _analysed(model.name, selection.selector)


@pytest.mark.parametrize("model,selection", [_param(m, s) for m, s in CASES])
def test_selection_analyses_with_all_four_families(model, selection):
    row = _figures(model, selection)
    assert set(row["families"]) <= set(row["executed"])
    if row["refusal"] is not None:
        assert row["refusal"].endswith(SPECIAL_REFUSAL), row["refusal"]


def _ids(cases):
    return [s.selector for _, s in cases]


@pytest.mark.parametrize("model,selection", TIMED, ids=_ids(TIMED))
def test_placed_predicted_ns_is_never_below_the_roofline_ideal(model, selection):
    row = _figures(model, selection)
    assert row["predicted"] >= row["ideal"] > 0


@pytest.mark.parametrize("model,selection", LAYERS, ids=_ids(LAYERS))
def test_placed_decode_layers_are_memory_bound(model, selection):
    """Batch 1, one token: every weight is read once for two flops per element."""
    assert _figures(model, selection)["bound_by"] == "memory"


@pytest.mark.parametrize("model,selection", TIMED_LAYERS, ids=_ids(TIMED_LAYERS))
def test_placed_layers_are_within_3x_of_their_ideal(model, selection):
    row = _figures(model, selection)
    assert row["predicted"] <= SLACK * row["ideal"], (row["predicted"], row["ideal"])


@pytest.mark.parametrize("model,selection", PLACED, ids=_ids(PLACED))
def test_every_placed_per_cta_footprint_fits_its_level(model, selection):
    footprint = {row.level: row for row in _figures(model, selection)["footprint"]}
    assert "smem" in footprint
    for row in footprint.values():
        if row.level in ("smem", "rmem"):
            assert row.capacity_bytes is not None
            assert row.peak_bytes <= row.capacity_bytes, (row.level, row.peak_bytes, row.capacity_bytes)


@pytest.mark.parametrize("model,selection", LAYERS, ids=_ids(LAYERS))
def test_placed_layer_flops_equal_the_hand_derived_figure(model, selection):
    child = selection.selector.split(".")[1]
    layers, _, _ = placed_flops.formulas(model.name)
    assert _figures(model, selection)["flops"] == layers[child]


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_placed_heads_flops_equal_the_hand_derived_figure(model):
    _, embed, head = placed_flops.formulas(model.name)
    for placed in model.placed_roots:
        by_selector = {s.selector: s for s in model.selections}
        assert _figures(model, by_selector[f"{placed.root}.lm_head"])["flops"] == head
        assert _figures(model, by_selector[f"{placed.root}.embed"])["flops"] == embed


def _assigned(tree) -> set[str]:
    """The names a file binds at module level, and the roots its
    ``lazy_roots(globals(), {...})`` builds on demand (PEP 562)."""
    names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) \
                and getattr(n.value.func, "id", None) == "lazy_roots":
            names |= {k.value for k in n.value.args[1].keys}
    return names


def _class_functions(tree) -> list[tuple[str, ...]]:
    """Each class body's kernels in order; a class body that defines some of them
    under ``if``/``else`` (one factory, two layer kinds) gives one tuple per branch."""
    found = []
    for c in ast.walk(tree):
        if not isinstance(c, ast.ClassDef):
            continue
        shared = tuple(n.name for n in c.body if isinstance(n, ast.FunctionDef) and n.name != "_")
        branches = [n for n in c.body if isinstance(n, ast.If)]
        found.append(shared)
        for branch in branches:
            for body in (branch.body, branch.orelse):
                found.append(shared + tuple(n.name for n in body if isinstance(n, ast.FunctionDef)))
    return found


def _layer_trees(source, tree) -> list:
    """The model file's tree and those of the sibling modules it builds its layers in
    (``from tilefoundry.models.X import ...`` other than the shared zoo_layers)."""
    trees = [tree]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tilefoundry.models.") \
                and node.module != "tilefoundry.models.zoo_layers":
            sibling = source.parent / (node.module.rsplit(".", 1)[1] + ".py")
            trees.append(ast.parse(sibling.read_text()))
    return trees


def test_registry_matches_the_model_files():
    """Each registered file exists in the package, holds LAYERS = the registered
    count, binds its logical root and one placed root per target at module level
(each built on demand through ``lazy_roots``),
    and declares the logical and the placed layer kernels in the registered order."""
    assert len(MODELS) >= 6
    assert len({m.name for m in MODELS}) == len(MODELS)
    for model in MODELS:
        assert model.source.parent == models_dir() and model.source.is_file()
        tree = ast.parse(model.source.read_text())
        constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        assert constants.get("LAYERS") == model.layers, model.name
        assert {model.root, *(p.root for p in model.placed_roots)} <= _assigned(tree), model.name
        assert [p.target for p in model.placed_roots] == list(TARGETS)
        kernels = [k for found in _layer_trees(model.source, tree) for k in _class_functions(found)]
        assert model.layer_functions in kernels and model.placed_functions in kernels, model.name
        selectors = [s.selector for s in model.selections]
        assert f"{model.root}.layer0" in selectors
        assert all(f"{model.root}.layer0.{fn}" in selectors for fn in model.layer_functions)
        for child, functions, placed_functions in model.child_functions:
            assert functions in kernels and placed_functions in kernels, (model.name, child)
            assert all(f"{model.root}.{child}.{fn}" in selectors for fn in functions)
        for placed in model.placed_roots:
            assert f"{placed.root}.layer0" in selectors
            assert {s.kind for s in model.selections} <= set(KINDS)


def test_every_model_states_the_ctx_len_dimvar():
    for model in MODELS:
        assert any(s.dims == (("ctx_len", 4096),) for s in model.selections), model.name


def test_importing_the_registry_imports_no_model():
    """`tilefoundry models` reads the registry only: no model file runs."""
    import subprocess
    import sys

    code = ("import sys, tilefoundry.models; "
            "print([n for n in sys.modules if n.startswith('tilefoundry.models.')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
