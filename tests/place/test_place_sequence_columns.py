"""Issue 42 item 4 (docs/place.md, "The search space", sequence: a GEMV's column
part): the ops of a level's glue that work per output column of the GEMV
before it (a depthwise conv step over the in-projection's channels: its taps
concatenated and summed along another axis) are cut off as a glue piece of
their own, which runs as that GEMV's epilogue where that prices lower, as the
zoo's placed Mamba-2 in-projection runs its conv step (placer/sequence_glue.py).
Held on a small Mamba-2-style mixer (tests/place/data/glue_small.py)."""
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.errors import TileFoundryError
from tilefoundry.placer import place
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.sequence import piece_text
from tilefoundry.placer.sequence_ops import epilogue_fusable
from tilefoundry.placer.sequence_search import _priced_piece, sequence_plan
from tilefoundry.placer.spaces import budget_of

DATA = Path(__file__).parent / "data"
MIXER = f"{DATA / 'glue_small.py'}:SmallMixer.mixer"


@pytest.fixture(scope="module")
def kernel():
    module, function = api.load(MIXER)
    return module, read_kernel(module, function)


@pytest.fixture(scope="module")
def placed():
    return place(MIXER, time_limit=60, progress=False)


def test_the_conv_step_is_cut_off_as_the_in_projections_column_part(kernel):
    """The level's glue is two pieces: the conv step (and z's silu, elementwise
    on the other GEMV output) first, each parameter it reads on the axis the
    GEMV's columns carry to (the conv state's and weights' channels), then the
    state update and norm, which read what it made."""
    _, k = kernel
    assert [p.kind for p in k.pieces] == ["gemv", "glue", "glue", "gemv"]
    part, rest = k.pieces[1], k.pieces[2]
    axes = dict(part.columns)
    assert axes["conv_state"] == 2 and axes["conv_w"] == 1 and axes["conv_b"] == 0
    ops = " ".join(text for _, text in part.lines)
    assert "tf.concat(" in ops and "tf.reduce(" in ops
    assert "tf.matmul(" not in ops and "rms_norm" not in ops and not rest.columns
    assert set(part.outputs) & {name for name, _, _, _ in rest.inputs}
    assert epilogue_fusable(k, 1)


def test_a_glue_of_elementwise_ops_is_not_cut():
    """A glue of elementwise ops alone after a GEMV (a shared expert's SwiGLU
    product and gate) stays one piece: the whole glue may be the epilogue."""
    module, function = api.load(f"{DATA / 'fusion_small.py'}:SmallFusion.shared_expert")
    assert all(not p.columns for p in read_kernel(module, function).pieces)


def test_the_column_part_as_epilogue_prices_below_the_two_kernels_apart(kernel, tmp_path):
    """At the GEMV's best surrogate point, the GEMV with the conv step as its
    epilogue (its outputs kept in smem, the conv's parameters staged over the
    same columns) prices below the GEMV and the conv's best point of the first
    eight apart: one launch fewer, no round trip of xBC through gmem."""
    module, k = kernel
    objective = objective_of(module.target)
    plan = sequence_plan(k, budget_of(module.target, "cta"))
    ctas, setting = plan[0][0]

    def write(name):
        def to(text, n):
            path = tmp_path / f"{name}_{n}.py"
            path.write_text(text)
            return str(path)
        return to

    gemv = price(write("gemv")(piece_text(k, 0, ctas, setting), 0), objective).objective_ns
    apart = []
    for n, (count, point) in enumerate(plan[1][:8]):
        try:
            apart.append(_priced_piece(k, 1, count, point, "cta", objective, write(f"part{n}"), price)[0])
        except TileFoundryError:  # a split the propagation refuses: not a point
            continue
    fused_text = piece_text(k, 0, ctas, setting, epilogue=True)
    assert 'conv_state_e = tf.reshard(conv_state, (1, 4, 192 @ g.n), "smem")' in fused_text
    fused = price(write("fused")(fused_text, 0), objective).objective_ns
    assert apart and fused < gemv + min(apart)


def test_place_runs_the_conv_step_as_the_in_projections_epilogue(placed, kernel):
    """The answer is three kernels, as the hand places Mamba-2's mixer: the
    in-projection with the conv step at its end, the state update, the output
    projection; checked against the logical kernel."""
    best = placed.best
    assert best is not None and best.checked and not placed.bugs
    assert 1 in best.choice.epilogues
    blocks = best.text.split("with Mesh(")[1:]
    assert len(blocks) == 3
    assert "tf.matmul(" in blocks[0] and "tf.concat(" in blocks[0]


def test_a_wrong_column_epilogue_is_caught_by_check(monkeypatch):
    """A column epilogue that takes the conv's silu for a sigmoid is a bug, never
    an answer: the check refuses each whole that carries it."""
    from tilefoundry.placer import sequence_glue

    real = sequence_glue.column_epilogue_block

    def wrong(kernel, index, block, ctas, setting):
        return [line.replace("tf.silu(", "tf.sigmoid(") for line in real(kernel, index, block, ctas, setting)]

    monkeypatch.setattr(sequence_glue, "column_epilogue_block", wrong)
    result = place(MIXER, time_limit=60, top=2, progress=False)
    assert result.bugs and all("epilogue" in what for what, _ in result.bugs)
    assert all(1 not in p.choice.epilogues for p in result.placements)
