"""Issue 42 (small glue kernels fused where a person fuses them): a glue piece
that is elementwise over a GEMV's output columns runs as that GEMV's epilogue
(placer/sequence_ops.py), the way the hand-placed shared expert computes its
one-column sigmoid gate in the down GEMV's kernel: found, checked against the
logical kernel, and priced below the two kernels apart."""
import re
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.placer import place
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.sequence import piece_text
from tilefoundry.placer.sequence_ops import epilogue_fusable
from tilefoundry.placer.sequence_search import sequence_plan
from tilefoundry.placer.spaces import budget_of

DATA = Path(__file__).parent / "data"
SMALL = f"{DATA / 'fusion_small.py'}:SmallFusion"


@pytest.fixture(scope="module")
def shared():
    return place(f"{SMALL}.shared_expert", time_limit=60, progress=False)


def _kernel(name: str):
    module, function = api.load(f"{SMALL}.{name}")
    return module, read_kernel(module, function)


def test_the_gate_after_the_down_gemv_is_found_as_its_epilogue(shared):
    """Both glue pieces (the SwiGLU's silu-times-up after the first GEMV, the
    sigmoid gate after the down GEMV) run at the end of the GEMV before them:
    two kernels, each glue op in the block of its GEMV, and the answer passed
    the check against the logical kernel."""
    _, kernel = _kernel("shared_expert")
    best = shared.best
    assert best is not None and not shared.bugs
    epilogues = best.choice.epilogues
    assert epilogues and all(kernel.pieces[i].kind == "glue" and kernel.pieces[i - 1].kind == "gemv"
                             for i in epilogues)
    blocks = best.text.split("with Mesh(")[1:]
    assert len(blocks) == len(kernel.pieces) - len(epilogues) - len(best.choice.fused)
    gate = next(block for block in blocks if "tf.sigmoid(" in block)
    assert re.search(r"acc\d+_0 = .*tf\.matmul\(", gate)  # the down GEMV's product: the gate is in its kernel
    assert 'w_shared_gate, (128, 1), "smem")' in gate  # the one-column weight staged whole per CTA


def test_an_earlier_kernels_value_added_elementwise_is_read_over_the_columns():
    """A residual (a value an earlier kernel left in gmem) added to a GEMV's output
    is read by the epilogue over the same column CTAs as the GEMV's output (each
    CTA reads its own columns, not the whole row), and the answer is checked."""
    result = place(f"{SMALL}.residual", time_limit=60, progress=False)
    _, kernel = _kernel("residual")
    best = result.best
    assert best is not None and len(kernel.pieces) - 1 in best.choice.epilogues
    residual = next(name for name, _, _, _ in kernel.pieces[-1].inputs if name not in kernel.pieces[-2].outputs)
    last = best.text.split("with Mesh(")[-1]
    assert f"{residual}_e = tf.reshard({residual}, (1, 128 @ g.n), \"smem\")" in last


def _apart_and_fused(name: str, tmp_path):
    """(the GEMV before the last glue piece and that glue priced as two kernels,
    the two as one with the glue as the GEMV's epilogue), at the GEMV's best
    surrogate point; the glue apart at the best of its whole points (on one CTA
    or repeated over replicas: a one-column gate cannot be split, its logit is
    read whole by every column)."""
    module, kernel = _kernel(name)
    objective = objective_of(module.target)
    index = len(kernel.pieces) - 1
    budget = budget_of(module.target, "cta")
    ctas, setting = sequence_plan(kernel, budget)[index - 1][0]

    def cost(text: str, file: str) -> float:
        path = tmp_path / file
        path.write_text(text)
        return price(str(path), objective).objective_ns

    glue = min(cost(piece_text(kernel, index, c, s), f"glue_{n}.py")
               for n, (c, s) in enumerate(sequence_plan(kernel, budget)[index][:8]) if not s)
    apart = cost(piece_text(kernel, index - 1, ctas, setting), "gemv.py") + glue
    fused = cost(piece_text(kernel, index - 1, ctas, setting, epilogue=True), "fused.py")
    return apart, fused


def test_the_epilogue_prices_below_the_two_kernels_apart(tmp_path):
    """One launch fewer, and the GEMV's output read from smem where it was made,
    not written to gmem and read back by a second kernel."""
    apart, fused = _apart_and_fused("shared_expert", tmp_path)
    assert fused < apart


def test_a_glue_that_reduces_over_the_columns_is_no_epilogue():
    """A norm over the GEMV's columns needs every CTA's columns: its reduce is no
    elementwise op, so the glue stays a kernel of its own (an epilogue has no
    step that crosses the CTAs)."""
    _, kernel = _kernel("normed")
    assert [p.kind for p in kernel.pieces] == ["gemv", "glue"]
    assert not epilogue_fusable(kernel, 1)
    _, shared_kernel = _kernel("shared_expert")
    assert epilogue_fusable(shared_kernel, len(shared_kernel.pieces) - 1)


def test_a_wrong_epilogue_is_caught_by_check(monkeypatch):
    """An epilogue that applies the gate's logit without its sigmoid is a bug,
    never an answer: every whole priced carries it, check refuses each, and no
    placement is shown."""
    from tilefoundry.placer import sequence_ops

    real = sequence_ops.epilogue_block

    def ungated(kernel, index, block, ctas, setting):
        return [line.replace("tf.sigmoid(", "(") for line in real(kernel, index, block, ctas, setting)]

    monkeypatch.setattr(sequence_ops, "epilogue_block", ungated)
    result = place(f"{SMALL}.shared_expert", time_limit=60, top=3, progress=False)
    assert result.bugs and all("past the allowed" in why for _, why in result.bugs)
    assert not result.placements
