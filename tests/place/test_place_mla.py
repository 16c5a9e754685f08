"""Issue 42 item 4 (held against people): MLA's absorbed latent attention
(DeepSeek-V3) is the sequence kind's flash-decoding piece, found by structure:
the scores a latent-cache product plus a RoPE-key product, scaled, masked and
softmaxed, the weighted sum over the latent cache. It is placed as the split-K
flash decoding a person writes (query-row groups x cache splits, an online
softmax per split, the splits combined by the global maximum and two sums, bf16
operands into the tensor cores), checked against the logical kernel, and priced
below the glue form it had before; a wrong combine is caught by the check."""
from pathlib import Path

import pytest

from tilefoundry.placer import place

MLA = str(Path(__file__).parent / "data" / "mla_small.py") + ":SmallMla.mla"


@pytest.fixture(scope="module")
def kernel():
    from tilefoundry import api
    from tilefoundry.placer.kernel import read_kernel

    return read_kernel(*api.load(MLA))


@pytest.fixture(scope="module")
def placed():
    return place(MLA, time_limit=60, progress=False)


def test_the_latent_attention_is_recognised_by_structure(kernel):
    """One KV head (the latent) shared by every query row: the first product is
    over the latent cache, which is also the value; the RoPE product is summed."""
    from tilefoundry.placer.sequence_attention import head_extent

    kinds = [p.kind for p in kernel.pieces]
    assert kinds.count("attention") == 1
    core = next(p.core for p in kernel.pieces if p.kind == "attention")
    assert core.latent and core.heads == 1 and head_extent(core) == core.group == 8
    assert core.k == core.v and core.k[1][0] == "ckv_cache" and core.dim == 32
    assert [(cache[1][0], dim) for _, _, cache, dim in core.extra] == [("kpe_cache", 16)]
    assert core.mask and len(core.score_ops) == 2


def test_the_latent_attention_is_placed_as_flash_decoding_and_checked(placed, tmp_path):
    from tilefoundry import api

    assert placed.kind == "sequence" and placed.best.checked and not placed.bugs
    assert "flash decoding" in placed.best.choice.describe()
    text = placed.best.text
    # the flash decoding's two score products and its value product, and each GEMV
    # piece's, over bf16 tiles into the tensor cores, accumulated in f32 (the
    # glue's absorbed-weight products stay as the logical kernel writes them)
    import re

    products = [line for line in text.splitlines()
                if "tf.matmul(" in line and re.search(r"\bacc\d+_\d+ = |scores = |run_acc = ", line)]
    assert len(products) >= 4 and all('out_dtype="f32"' in line for line in products)
    assert "tf.matmul(q_s1, " in text
    assert "k_blk = tf.cast(" not in text and "v_blk" not in text  # one latent block is key and value
    path = tmp_path / "mla_placed.py"
    path.write_text(text, encoding="utf-8")
    assert api.load(str(path))[1].name == "mla"


def test_the_flash_decoding_prices_below_the_glue_form(placed, monkeypatch):
    """With the latent form unrecognised, the attention is data-parallel glue
    (f32 matmuls over the whole cache): the best answer then is dearer."""
    from tilefoundry.placer import sequence_attention

    monkeypatch.setattr(sequence_attention, "_latent_core", lambda products, second, names: None)
    glue = place(MLA, time_limit=60, progress=False)
    assert "flash decoding" not in glue.best.choice.describe() and glue.best.checked
    assert placed.best.figures[placed.objective] < glue.best.figures[glue.objective]


def test_a_wrong_combine_of_the_latent_splits_is_caught_by_check(unweighted_split_combine):
    """The splits' sums combined without their weights (each split's own
    maximum) is a bug, never an answer; held to points of two splits or more,
    where the fault changes the result."""
    split = unweighted_split_combine
    result = place(MLA, time_limit=60, top=3, progress=False, seed=0)
    # the fault shows only where two splits hold valid rows: the check's drawn
    # position (seed 0) is past the first block of every point
    assert _drawn_position(0) >= max(block for _, (_, block) in split(*_attention_piece()))
    # refused by check's bound, or, where that bound is unbounded, by place's normwise one
    assert result.bugs and all("past the allowed" in why or "of its largest magnitude" in why
                               for _, why in result.bugs)
    assert not result.placements


def _drawn_position(seed: int) -> int:
    from tilefoundry import api
    from tilefoundry.execute.inputs import random_arguments

    function = api.load(MLA)[1]
    drawn = random_arguments(function, {}, seed, {})
    return int(next(value for param, value in drawn.items() if param.name == "pos")[0])


def _attention_piece():
    from tilefoundry import api
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.spaces import budget_of

    kernel = read_kernel(*api.load(MLA))
    return next(p for p in kernel.pieces if p.kind == "attention"), budget_of(kernel.target, "cta")
