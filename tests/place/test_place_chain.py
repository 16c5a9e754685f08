"""Issue 42 item 1 ("where a value crosses a kernel boundary through global
memory"): a chain of GEMV stages (an MLP) is placed as one kernel per stage,
each over the same CTAs, the stages meeting in gmem."""
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.errors import AnalysisError
from tilefoundry.placer import place
from tilefoundry.placer.chain import stage_kernel_text
from tilefoundry.placer.objective import objective_of, price

DATA = Path(__file__).parent / "data"
MLP = f"{DATA / 'mlp_small.py'}:SmallMlp"


@pytest.fixture(scope="module")
def mlp():
    return place(f"{MLP}.mlp", time_limit=60, top=1, progress=False)


def test_chain_is_one_kernel_per_stage_meeting_in_gmem(mlp, tmp_path):
    assert mlp.kind == "chain" and mlp.best.checked
    text = mlp.best.text
    assert text.count("with Mesh(") == 2
    # gate and up share the first kernel's loop; their product crosses to the second in gmem
    assert "tf.silu(" in text.split("with Mesh(")[1] and '_g = tf.reshard(' in text
    path = tmp_path / "mlp_placed.py"
    path.write_text(text, encoding="utf-8")
    module, function = api.load(str(path))
    assert module.topologies[0].size == mlp.best.choice.ctas


def test_chain_objective_is_the_sum_of_its_kernels(mlp, tmp_path):
    """What proves the stage-by-stage search: each kernel is priced alone."""
    from tilefoundry.placer.kernel import read_kernel

    module, function = api.load(f"{MLP}.mlp")
    kernel = read_kernel(module, function)
    objective = objective_of(module.target)
    choice = mlp.best.choice
    total = 0.0
    for index, tile in enumerate(choice.tiles):
        path = tmp_path / f"stage{index}.py"
        path.write_text(stage_kernel_text(kernel, index, choice.ctas, tile), encoding="utf-8")
        total += price(str(path), objective).objective_ns
    assert total == pytest.approx(mlp.best.figures[mlp.objective], rel=0.02)


def test_a_norm_between_projections_is_the_next_kernels_prologue():
    result = place(f"{MLP}.normed_proj", time_limit=60, progress=False)
    second = result.best.text.split("with Mesh(")[2]
    assert "tf.rms_norm(" in second and result.best.checked


def test_an_epilogue_reading_two_stages_is_no_chain_but_a_sequence():
    """The chain refuses an epilogue of two stages; the sequence kind places it
    (the epilogue a glue kernel of its own) and the answer is checked."""
    from tilefoundry.placer.kernel import _calls, _chain, _operands, read_kernel

    module, function = api.load(f"{MLP}.two_stage_mix")
    view = api.analyze((module, function)).function
    with pytest.raises(AnalysisError, match="combines the results of two stages"):
        _chain(view, _operands(view, "here"), _calls(view, "here"), "here")
    assert read_kernel(module, function).kind == "sequence"
    result = place(f"{MLP}.two_stage_mix", time_limit=60, progress=False)
    assert result.best.checked and "glue" in result.best.description


def test_an_epilogue_reading_a_value_outside_its_stage_is_no_chain_but_a_sequence():
    from tilefoundry.placer.kernel import _calls, _chain, _operands, read_kernel

    module, function = api.load(f"{MLP}.gated_by_norm")
    view = api.analyze((module, function)).function
    with pytest.raises(AnalysisError, match="not the last stage's output"):
        _chain(view, _operands(view, "here"), _calls(view, "here"), "here")
    assert read_kernel(module, function).kind == "sequence"
