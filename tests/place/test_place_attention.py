"""Issue 42 item 1: decode attention is placed as flash decoding — KV heads (and a
prefill's query rows) x KV-sequence splits over the CTAs, each split's online softmax, the splits'
partials completed by a reshard — and checked against the logical kernel."""
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.placer import place
from tests.place.conftest import kernel_source

DATA = Path(__file__).parent / "data"
ATTENTION = str(DATA / "attention_small.py")


@pytest.fixture(scope="module")
def attention():
    return place(ATTENTION, time_limit=120, top=2, progress=False)


def test_attention_is_placed_as_flash_decoding_and_checked(attention, tmp_path):
    assert attention.kind == "attention" and attention.proven
    best = attention.best
    assert best.checked and best.choice.ctas == best.choice.heads * best.choice.splits
    assert 2 % best.choice.heads == 0 and 64 % (best.choice.block * best.choice.splits) == 0
    # the split axis is summed and completed by a reshard, the softmax is online
    assert "ReduceKind.SUM), (HEADS" in best.text and "run_max = new_max" in best.text
    path = tmp_path / "attention_placed.py"
    path.write_text(best.text, encoding="utf-8")
    module, _ = api.load(str(path))
    assert module.topologies[0].size == best.choice.ctas


def test_attention_splits_the_sequence_where_it_pays():
    """Two KV heads alone would use 2 CTAs; over a 1024-row cache the best found
    splits the cache too (the splits' combine crosses the CTAs after a grid
    barrier, which a 64-row cache does not repay)."""
    result = place(str(DATA / "attention_ctx.py"), dims={"ctx": 1024}, time_limit=60, progress=False)
    assert result.best.choice.splits > 1 and result.best.checked


def test_the_scale_on_the_scores_is_carried_into_every_block(attention):
    assert "scores = scores * 0.125" in attention.best.text


CTX = str(DATA / "attention_ctx.py")


def test_a_dimvar_kernel_is_placed_at_its_binding_and_checked_there():
    result = place(CTX, dims={"ctx": 32}, time_limit=60, progress=False)
    assert result.best.checked and "CTX = 32" in result.best.text


def test_a_wrong_placement_at_a_binding_is_a_bug(monkeypatch):
    from tilefoundry.placer import attention as writer

    real = writer.attention_text

    def unscaled(kernel, choice, level="cta"):  # the scale dropped: a wrong program
        return real(kernel, choice, level).replace("scores = scores * 0.125", "scores = scores * 1.0")

    monkeypatch.setattr(writer, "attention_text", unscaled)
    result = place(CTX, dims={"ctx": 32}, time_limit=60, progress=False)
    assert result.placements == () and "differs from the logical kernel" in result.bugs[0][1]


def test_a_cache_no_power_of_two_block_divides_is_read_in_its_own_divisors():
    """A 100-row cache (no block of 16..256 rows divides it) is read in blocks of
    its own divisors, whole trips, and the answer is checked; it was an empty space."""
    from tilefoundry.placer.attention import cache_blocks

    assert cache_blocks(100) == (10, 20, 25, 50, 100) and cache_blocks(1024) == (16, 32, 64, 128, 256)
    result = place(CTX, dims={"ctx": 100}, time_limit=60, progress=False)
    assert result.best.checked and 100 % (result.best.choice.block * result.best.choice.splits) == 0


def test_a_cache_of_prime_length_is_refused_with_the_reason_and_the_remedy():
    from tilefoundry.errors import AnalysisError

    with pytest.raises(AnalysisError, match=r"attention_ctx\.py:\d+.*the cache's 1009 rows have no divisor "
                                            r"between 2 and 256.*pad the cache"):
        place(CTX, dims={"ctx": 1009}, time_limit=60, progress=False)


_PREFILL = kernel_source('(q: Tensor[(2, 128, 32), "bf16"], k: Tensor[(2, 128, 32), "bf16"], '
                         'v: Tensor[(2, 128, 32), "bf16"]) -> Tensor[(2, 128, 32), "bf16"]',
                         "tf.matmul(tf.softmax(scores, -1), v)",
                         before=("scores = tf.matmul(q, tf.transpose(k, (0, 2, 1))) * 0.125",))


def test_a_prefill_splits_each_heads_query_rows_over_ctas(tmp_path):
    """128 query rows a head: the space splits them over CTAs (each keeping 16 rows
    or more), and the best found does, checked; one CTA a head held them all."""
    from tilefoundry.placer.attention import _row_splits

    assert _row_splits(128) == [1, 2, 4, 8] and _row_splits(4) == [1]  # a decode step's rows stay whole
    source = tmp_path / "prefill.py"
    source.write_text(_PREFILL, encoding="utf-8")
    result = place(str(source), time_limit=60, progress=False)
    best = result.best
    assert result.proven and best.checked and best.choice.rows > 1
    assert "GROUP @ a.q" in best.text and best.choice.ctas == best.choice.heads * best.choice.rows * best.choice.splits
    # the same heads, splits and block with each head's rows on one CTA is slower
    from dataclasses import replace

    from tilefoundry.placer.attention import attention_text
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.objective import objective_of, price

    module, function = api.load(str(source))
    kernel = read_kernel(module, function)
    whole = tmp_path / "whole_rows.py"
    whole.write_text(attention_text(kernel, replace(best.choice, rows=1)), encoding="utf-8")
    assert price(str(whole), objective_of(kernel.target)).objective_ns > best.figures["estimate_ns"]
