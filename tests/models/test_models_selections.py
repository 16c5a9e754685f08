"""Every selection of the zoo registry analyses with all four families, in-process
(issue 9 item 11, issue 23): the logical kernels and layers, and the placed ones
on both targets. The whole-model decode steps are analysed once, in
test_models_whole.py. A selection blocked by a fix still in progress elsewhere is
listed in BLOCKED with the reason, as a strict xfail (none today).

On the B200 the performance family refuses a program doing special-function work
while the B200 document states no rate for it (zoo_cache.B200_SPECIAL_UNSTATED):
such a selection is analysed with the other three families, and all four must
then either succeed or refuse with exactly that reason."""
from __future__ import annotations

import ast

import pytest

from tilefoundry.analysis.analyze import analyze
from tilefoundry.errors import AnalysisError
from tilefoundry.models import KINDS, MODELS, TARGETS, models_dir

from tests.models.zoo_cache import FAMILIES, SPECIAL_REFUSAL, families_for, selected

# selector -> reason; each entry becomes a strict xfail (it must still fail)
BLOCKED: dict[str, str] = {}

CASES = [(m, s) for m in MODELS for s in m.selections if s.kind != "decode-step"]


def _param(model, selection):
    marks = ()
    if selection.selector in BLOCKED:
        marks = (pytest.mark.xfail(strict=True, reason=BLOCKED[selection.selector]),)
    return pytest.param(model, selection, id=f"{model.name}:{selection.selector}", marks=marks)


@pytest.mark.parametrize("model,selection", [_param(m, s) for m, s in CASES])
def test_selection_analyses_with_all_four_families(model, selection):
    module, function = selected(model, selection)
    families = families_for(selection)
    result = analyze(module, function, analysis=families, dims=selection.dim_map())
    assert set(families) <= set(result.executed)
    if families != FAMILIES:
        try:
            analyze(module, function, analysis=FAMILIES, dims=selection.dim_map())
        except AnalysisError as refusal:
            assert str(refusal).endswith(SPECIAL_REFUSAL), refusal


def _assigned(tree) -> set[str]:
    return {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}


def _class_functions(tree) -> list[tuple[str, ...]]:
    return [tuple(n.name for n in c.body if isinstance(n, ast.FunctionDef) and n.name != "_")
            for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]


def test_registry_matches_the_model_files():
    """Each registered file exists in the package, holds LAYERS = the registered
    count, binds its logical root and one placed root per target at module level,
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
        kernels = _class_functions(tree)
        assert model.layer_functions in kernels and model.placed_functions in kernels, model.name
        selectors = [s.selector for s in model.selections]
        assert f"{model.root}.layer0" in selectors
        assert all(f"{model.root}.layer0.{fn}" in selectors for fn in model.layer_functions)
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
