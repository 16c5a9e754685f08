"""Issue 42 item 3: over a bf16 cache, flash decoding's products may take bf16
operands with f32 accumulation (the blocks go to the tensor cores as read, the
query and the probabilities rounded to bf16), as a person writes the kernel; the
point is in the attention kind's space, checked against the logical kernel (whose
bound then carries those roundings) and priced below the f32 point of the same
split, whose blocks are cast to f32 in smem every trip."""
from pathlib import Path

import pytest

from tilefoundry.placer import place
from tilefoundry.placer.attention import AttentionChoice, attention_points, attention_text
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.spaces import budget_of

DATA = Path(__file__).parent / "data"
ATTENTION = str(DATA / "attention_small.py")


@pytest.fixture(scope="module")
def kernel():
    from tilefoundry import api
    from tilefoundry.placer.kernel import read_kernel

    module, function = api.load(f"{ATTENTION}:SmallAttention.decode_attention")
    return read_kernel(module, function)


def test_every_split_has_a_bf16_operand_point_over_a_bf16_cache(kernel):
    points = attention_points(kernel.attention, budget_of(kernel.target, "cta"))
    f32 = {(c.heads, c.splits, c.block) for c in points if c.mma == "f32"}
    assert f32 and f32 == {(c.heads, c.splits, c.block) for c in points if c.mma == "bf16"}


def test_the_bf16_operand_point_reads_the_blocks_as_they_are(kernel, tmp_path):
    """No f32 copy of a block; the products accumulate in f32; it prices below
    the same split written with f32 operands."""
    figures = {}
    for mma in ("f32", "bf16"):
        text = attention_text(kernel, AttentionChoice(2, 4, 16, mma))
        path = tmp_path / f"attention_{mma}.py"
        path.write_text(text, encoding="utf-8")
        figures[mma] = price(str(path), objective_of(kernel.target)).objective_ns
        blocks = [line for line in text.splitlines() if "_blk = " in line]
        assert all(line.strip().startswith(("k_blk = tf.cast(", "v_blk = tf.cast(")) == (mma == "f32")
                   for line in blocks)
        assert ('out_dtype="f32"' in text) == (mma == "bf16")
    assert figures["bf16"] < figures["f32"]


def test_the_best_answer_takes_bf16_operands_and_is_checked():
    result = place(ATTENTION, time_limit=120, progress=False)
    assert result.proven and result.best.checked and not result.bugs
    assert result.best.choice.mma == "bf16"
