"""Issue 40 item 5: the zoo by name on every command (`llama3-8b:Llama3_8B_H200.decode_step`
where `file.py:Selector` goes), one resolver shared with `tilefoundry sweep`, where a model
name alone covers the placed root of each swept target (each on its own target), the
logical root on a target with none, and `tilefoundry models` says which."""
from __future__ import annotations

import json

import pytest

from tilefoundry.cli.main import main
from tilefoundry.models import model_named

PHI = model_named("phi3-mini")
SELECTOR = "Phi3Mini_H200.layer0.mlp"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_item5_analyze_takes_a_zoo_name_as_its_file_selection(capsys):
    by_name = _run(capsys, "analyze", "--compute-cost", "--json", f"phi3-mini:{SELECTOR}")
    by_file = _run(capsys, "analyze", "--compute-cost", "--json", f"{PHI.source}:{SELECTOR}")
    assert by_name[0] == 0 and by_name[2] == ""
    assert by_name == by_file
    assert (json.loads(by_name[1])["module"], json.loads(by_name[1])["function"]) == ("layer0", "mlp")


def test_item5_run_and_diff_take_zoo_names(capsys):
    code, out, err = _run(capsys, "run", f"phi3-mini:{SELECTOR}")
    assert (code, err) == (0, "") and out.startswith(f"# run phi3-mini:{SELECTOR}")
    code, out, err = _run(capsys, "diff", "--top", "1", f"phi3-mini:{SELECTOR}",
                          f"phi3-mini:{SELECTOR.replace('H200', 'B200')}")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [f"# A: phi3-mini:{SELECTOR} --target nvidia.h200_sxm",
                                    f"# B: phi3-mini:Phi3Mini_B200.layer0.mlp --target nvidia.b200_sxm"]


def test_item5_a_misspelt_zoo_name_is_one_line_with_the_nearest(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "analyze", "phi3-mni:Phi3Mini.embed")
    assert (code, out) == (1, "")
    from tilefoundry.models import MODELS

    names = ", ".join(model.name for model in MODELS)  # tilefoundry models' order
    assert err == (f"tilefoundry: error: source file not found: {tmp_path / 'phi3-mni'}; a selection "
                   f"is file.py[:Selector] or a zoo model[:Selector] ({names}); did you mean "
                   "'phi3-mini'?\n")


def test_item5_a_zoo_model_name_alone_selects_its_logical_root(capsys):
    code, out, err = _run(capsys, "analyze", "--compute-cost", "--summary", "--dim", "ctx_len=4096",
                          "phi3-mini")
    assert (code, err) == (0, "")
    assert out.splitlines()[0].startswith(f"# analysis target=nvidia.h200_sxm module={PHI.root} ")


def _space(tmp_path, targets: str) -> str:
    path = tmp_path / "space.toml"
    path.write_text(f'selections = ["phi3-mini"]\ntargets = [{targets}]\n', encoding="utf-8")
    return str(path)


def test_item5_sweep_expands_a_name_to_the_placed_root_of_each_swept_target(tmp_path):
    from tilefoundry.sweep.space import load_space

    space = load_space(_space(tmp_path, '"nvidia.h200_sxm", "nvidia.b200_sxm"'))
    placed = {"nvidia.h200_sxm": "Phi3Mini_H200", "nvidia.b200_sxm": "Phi3Mini_B200"}
    expected = [s.selector for s in PHI.selections if s.selector.split(".")[0] in placed.values()]
    assert [s.selector for s in space.selections] == expected
    points = list(space.points())
    # each placed root runs on its own target only: no H200 placement priced on the B200
    assert all(placed[p.target] == p.selection.selector.split(".")[0] for p in points)
    assert len(points) == len(expected) == space.count()


def test_item5_a_target_with_no_placed_root_gets_the_logical_root(tmp_path):
    from tilefoundry.sweep.space import load_space

    space = load_space(_space(tmp_path, '"cpu"'))
    assert {s.selector.split(".")[0] for s in space.selections} == {PHI.root}
    assert {p.target for p in space.points()} == {"cpu"}


def test_item5_models_says_what_a_name_covers_in_a_sweep(capsys):
    code, out, err = _run(capsys, "models")
    placed = ", ".join(f"{p.root} on {p.target}" for p in PHI.placed_roots)
    assert f"  in a sweep, phi3-mini alone: {placed} (another target: {PHI.root})" in out.splitlines()


@pytest.mark.parametrize("text, expected", [
    ("phi3-mini", (str(PHI.source), PHI.root)),
    ("phi3-mini:Phi3Mini.embed", (str(PHI.source), "Phi3Mini.embed")),
    ("phi3-mini.py:X", None),  # a file keeps its meaning
    ("models/phi3-mini", None),
])
def test_item5_the_shared_resolver(text, expected):
    from tilefoundry.dsl.zoo_names import zoo_source

    assert zoo_source(text) == expected
