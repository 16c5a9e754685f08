"""Every selection of the zoo registry analyses with all four families, in-process
(issue 9 item 11). A selection blocked by a fix still in progress elsewhere is
listed in BLOCKED with the reason, as a strict xfail (none today)."""
from __future__ import annotations

import ast

import pytest

from tilefoundry.analysis.analyze import analyze
from tilefoundry.dsl.loader import load_selection
from tilefoundry.models import MODELS, models_dir

FAMILIES = ("compute-cost", "memory", "roofline", "performance")

# selector -> reason; each entry becomes a strict xfail (it must still fail)
BLOCKED: dict[str, str] = {}

CASES = [(m, s) for m in MODELS for s in m.selections]


def _param(model, selection):
    marks = ()
    if selection.selector in BLOCKED:
        marks = (pytest.mark.xfail(strict=True, reason=BLOCKED[selection.selector]),)
    return pytest.param(model, selection, id=f"{model.name}:{selection.selector}", marks=marks)


@pytest.mark.parametrize("model,selection", [_param(m, s) for m, s in CASES])
def test_selection_analyses_with_all_four_families(model, selection):
    module, function = load_selection(model.source_arg(selection))
    result = analyze(module, function, analysis=FAMILIES, dims=selection.dim_map())
    assert set(FAMILIES) <= set(result.executed)


def test_registry_matches_the_model_files():
    """Each registered file exists in the package, declares its root and the layer
    kernels in the registered order, and holds LAYERS = the registered count."""
    assert len(MODELS) >= 6
    assert len({m.name for m in MODELS}) == len(MODELS)
    for model in MODELS:
        assert model.source.parent == models_dir() and model.source.is_file()
        tree = ast.parse(model.source.read_text())
        constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        assert constants.get("LAYERS") == model.layers, model.name
        classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        assert model.root in classes, model.name
        # '_' is a converter's name (reserved for them), not a kernel
        root_fns = [n.name for n in classes[model.root].body
                    if isinstance(n, ast.FunctionDef) and n.name != "_"]
        assert tuple(root_fns) == model.root_functions
        layer_fns = [n.name for c in classes.values() if c.name != model.root for n in c.body
                     if isinstance(n, ast.FunctionDef) and n.name != "_"]
        assert tuple(layer_fns) == model.layer_functions, model.name
        selectors = [s.selector for s in model.selections]
        assert f"{model.root}.layer0" in selectors
        assert all(f"{model.root}.layer0.{fn}" in selectors for fn in model.layer_functions)


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
