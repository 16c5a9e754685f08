"""`tilefoundry models` and `tilefoundry models --json` (issue 9 item 11)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tilefoundry.models import MODELS


def tf(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tilefoundry", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_models_table_lists_every_model_with_layers_functions_and_selections():
    result = tf("models")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("MODEL"))
    assert header.split() == ["MODEL", "LAYERS", "FUNCTIONS", "SELECTIONS"]
    for model in MODELS:
        row = next(line for line in lines if line.startswith(model.name + " "))
        assert row.split()[1] == str(model.layers)
        assert row.split()[-1] == str(len(model.selections))
        assert ", ".join(model.functions) in row
        for selection in model.selections:
            assert any(line.split()[:3] == [selection.selector, selection.kind, selection.target]
                       and line.split()[3:] == selection.dim_args() for line in lines), selection


def test_models_json_is_a_runnable_list():
    result = tf("models", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [m["name"] for m in data] == [m.name for m in MODELS]
    for entry, model in zip(data, MODELS):
        assert {"name", "source", "layers", "selections"} <= set(entry)
        assert Path(entry["source"]).is_file() and entry["source"].endswith(model.file)
        assert entry["layers"] == model.layers
        assert [s["selector"] for s in entry["selections"]] == [s.selector for s in model.selections]
        assert [(p["root"], p["target"]) for p in entry["placed_roots"]] == [
            (p.root, p.target) for p in model.placed_roots]
        for s, selection in zip(entry["selections"], model.selections):
            assert set(s) == {"selector", "dims", "kind", "target"}
            assert (s["kind"], s["target"]) == (selection.kind, selection.target)
            assert s["dims"] == [] or (s["dims"][0::2] == ["--dim"] * (len(s["dims"]) // 2))


def test_models_json_selection_runs_through_analyze():
    """A script's view: take one selection from --json and run it as written."""
    data = json.loads(tf("models", "--json").stdout)
    llama = next(m for m in data if m["name"] == "llama3-8b")
    selection = next(s for s in llama["selections"] if s["selector"].endswith(".layer0.attention"))
    result = tf("analyze", "--compute-cost", "--memory", "--roofline", "--performance",
                *selection["dims"], f"{llama['source']}:{selection['selector']}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# analysis target=nvidia.h200_sxm")


def test_models_in_help():
    result = tf("--help")
    assert result.returncode == 0
    assert "models" in result.stdout
