"""Issue 42 item 4 ("every kernel of every zoo model's logical layer"): a kernel
of no narrow kind — tuple results, RoPE, KV-cache writes, attention masked past
the position — is placed as a sequence of kernels meeting in gmem
(placer/sequence.py), each answer checked against the logical kernel."""
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.placer import place
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.sequence import piece_text

DATA = Path(__file__).parent / "data"
LAYER = f"{DATA / 'sequence_small.py'}:SmallLayer"


@pytest.fixture(scope="module")
def attention():
    return place(f"{LAYER}.attention", time_limit=120, progress=False)


def test_masked_attention_with_cache_writes_is_flash_decoding_between_gemvs(attention, tmp_path):
    """q/k/v GEMV, RoPE, then the cache writes and the masked attention as split-K
    flash decoding (placer/sequence_attention.py), the heads merged, the output GEMV."""
    module, function = api.load(f"{LAYER}.attention")
    kernel = read_kernel(module, function)
    assert [p.kind for p in kernel.pieces] == ["gemv", "glue", "attention", "glue", "gemv"]
    assert attention.kind == "sequence" and attention.priced == attention.space_size
    assert attention.best.checked
    text = attention.best.text
    # a glue piece run as the next kernel's prologue is no launch of its own
    assert text.count("with Mesh(") == 5 - len(attention.best.choice.fused) and "tf.cache_update(" in text
    (flash,) = [block for block in text.split("with Mesh(") if "tf.cache_update(" in block]
    # the mask is applied to every block of every split, the splits combined after the walk
    assert "for kk in tile(" in flash and "tf.where(valid, " in flash and "ReduceKind.MAX" in flash
    # the three results (output, both caches) are returned, in order
    assert text.rstrip().endswith(", ".join(kernel.results))
    path = tmp_path / "placed.py"
    path.write_text(text, encoding="utf-8")
    assert api.load(str(path))[1].name == "attention"


def test_a_split_the_propagation_cannot_carry_is_counted_out_not_a_bug(attention):
    """The RoPE tables are read at data-dependent rows: splitting them is refused
    by the shard propagation, which leaves the point out of the space."""
    assert not attention.bugs
    assert any("cannot carry" in reason and "data-dependent rows" in reason for reason in attention.refused)


def test_the_pieces_priced_alone_do_not_make_a_proof(attention, tmp_path):
    """Each piece's setting is chosen by pricing it alone; the whole sequence
    reads what the pieces cross through gmem as made values, where a piece alone
    reads them as parameters (their loads' latency and the crossings differ), so
    the sum of the pieces is not the whole's price and the answer claims no proof."""
    module, function = api.load(f"{LAYER}.attention")
    kernel = read_kernel(module, function)
    choice = attention.best.choice
    settings = {"gemv": iter(choice.tiles), "glue": iter(choice.seeds), "attention": iter(choice.cores)}
    total = 0.0
    for index, piece in enumerate(kernel.pieces):
        setting = next(settings[piece.kind])
        if index in choice.fused or index in choice.epilogues:  # priced inside the next / previous piece
            continue
        path = tmp_path / f"piece{index}.py"
        text = piece_text(kernel, index, choice.count_of(index), setting, fused=index - 1 in choice.fused,
                          epilogue=index + 1 in choice.epilogues)
        path.write_text(text, encoding="utf-8")
        total += price(str(path), objective_of(module.target)).objective_ns
    whole = attention.best.figures[attention.objective]
    assert total != whole and not attention.proven


def test_a_glue_piece_runs_as_the_next_kernels_prologue_where_that_prices_lower(attention):
    """RoPE (before the attention) and the merge of the heads (before the output
    GEMV) each save a launch by running inside the next kernel."""
    module, function = api.load(f"{LAYER}.attention")
    kernel = read_kernel(module, function)
    fused = attention.best.choice.fused
    assert fused and all(kernel.pieces[i].kind == "glue" and kernel.pieces[i + 1].kind != "glue" for i in fused)
    rope_block = next(block for block in attention.best.text.split("with Mesh(") if "tf.rope(" in block)
    assert "for kk in tile(" in rope_block  # the loop of the kernel it runs in


def test_a_tuple_result_with_rope_is_placed():
    """RoPE of one position reads one row of each table (``cos_t[p : p + 1, :]`` at
    position 0 within it): the same rotation, checked, without the whole tables."""
    result = place(f"{LAYER}.qkv_rope", time_limit=60, progress=False)
    assert result.kind == "sequence" and result.best.checked
    assert "tf.rope(" in result.best.text and "cos_t[v" in result.best.text
    # two results: RoPE's query and the cast key, in the logical kernel's order
    module, function = api.load(f"{LAYER}.qkv_rope")
    assert len(read_kernel(module, function).results) == 2


def test_a_cache_write_is_placed_no_slower_than_written():
    """A cache write touches the new row only: it is placed, checked, and priced
    no slower than the logical kernel as written (every CTA writing the row)."""
    result = place(f"{LAYER}.cache_write", time_limit=60, progress=False)
    assert result.kind == "sequence" and result.best.checked and not result.bugs
    module, function = api.load(f"{LAYER}.cache_write")
    written = price((module, function), objective_of(module.target)).objective_ns
    assert result.best.figures[result.objective] <= written


def test_a_placed_kernel_is_refused_naming_where():
    """Llama-3's attention_placed reshards and loops: it is placed already, and
    the refusal names the reshard's line."""
    from tilefoundry.errors import AnalysisError
    from tilefoundry.models import model_named

    source = model_named("llama3-8b").source
    lines = source.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "def attention_placed(" in line)
    first = next(i for i in range(start, len(lines)) if "tf.reshard(" in lines[i]) + 1
    with pytest.raises(AnalysisError, match=rf"already reshards a value \(at \S*llama3_8b.py:{first}:"):
        place(f"{source}:Llama3_8B.layer0.attention_placed", dims={"ctx_len": 256}, time_limit=5, progress=False)


def test_a_slice_with_a_tuple_of_starts_is_written_and_checked():
    """Mamba-2's conv step slices its state (`conv_state[:, 1:D_CONV, :]`: a slice
    op whose starts are a tuple operand) and returns two values."""
    result = place("src/tilefoundry/models/mamba2_2_7b.py:Mamba2_2_7B.layer0.conv_step",
                   time_limit=2, progress=False)  # any answer will do: its text and its check
    assert result.kind == "sequence" and result.best.checked and not result.bugs
    assert "tf.slice(conv_state" in result.best.text


def test_a_split_contraction_read_by_an_add_is_completed_first(tmp_path):
    """Splitting an expert's gate/up stacks on their columns and its down stack on
    its rows leaves the down product a Partial, which the residual add cannot
    read: the seed is retried with that operand resharded whole first, and the
    completed program agrees with the logical kernel."""
    from tilefoundry.placer.driver import _checked
    from tilefoundry.placer.objective import objective_of, price
    from tilefoundry.placer.sequence import SequenceChoice, sequence_text
    from tilefoundry.placer.sequence_search import _priced_piece

    selection = f"{DATA / 'sequence_small.py'}:SmallExperts.experts"
    module, function = api.load(selection)
    kernel = read_kernel(module, function)
    (index,) = [i for i, p in enumerate(kernel.pieces) if p.kind == "glue"]
    seed = (("w_gate_e", "w_up_e", "w_down_e"), (2, 2, 1), 2, "replicas", ())
    paths = iter(tmp_path / f"try{n}.py" for n in range(10))

    def write(text, _):
        path = next(paths)
        path.write_text(text, encoding="utf-8")
        return str(path)

    _, completed = _priced_piece(kernel, index, 2, seed, "cta", objective_of(module.target), write, price)
    assert completed[4] and completed[:4] == seed[:4]
    text = sequence_text(kernel, SequenceChoice(2, (), (completed,)))
    assert "_w = tf.reshard(" in text
    path = tmp_path / "completed.py"
    path.write_text(text, encoding="utf-8")
    assert _checked((module, function), kernel, str(path), seed=0) is None


def test_a_weight_converter_is_kept_and_not_applied_twice_in_the_check(tmp_path):
    """The placed program states the logical kernel's converters (a checkpoint
    loads into both alike), and the check at a --dim binding hands the logical
    twin the placed program's arrays as they are: converting them again made
    Gemma-2's decoder layer disagree with itself."""
    from tilefoundry import execution

    selection = f"{DATA / 'sequence_small.py'}:SmallConverted.scaled"
    result = place(selection, dims={"rows": 4}, time_limit=60, progress=False)
    assert result.best.checked and not result.bugs
    assert '@scaled.converter("w")' in result.best.text
    path = tmp_path / "placed.py"
    path.write_text(result.best.text, encoding="utf-8")
    import numpy as np

    stored = {"w": np.full((64,), 0.5, dtype=np.float32)}
    x = {"x": np.ones((4, 64), dtype=np.float32)}
    out = execution.run(str(path), inputs=x, weights=stored)
    assert np.allclose(next(iter(out.values())), 1.5)  # w = 0.5 + 1 from its stored form


def test_a_wrong_flash_decoding_is_caught_by_check(unweighted_split_combine):
    """A flash decoding that combines its splits' sums without their weights
    (each split's own maximum) is a bug, never an answer: check's bound on a
    masked softmax's output is finite (a score -1e30 below its row's top
    neither moves a max nor weighs in a sum), so check itself refuses it. The
    attention piece is held to points of two splits or more (with one, the fault
    changes nothing), so every answer carries the fault and none is shown."""
    result = place(f"{LAYER}.attention", time_limit=120, top=3, progress=False)
    assert result.bugs and all("past the allowed" in why for _, why in result.bugs)
    assert not result.placements


def test_where_checks_bound_is_unbounded_place_holds_the_output_normwise():
    """Where check's derived bound is infinite (a flash decoding of one block per
    split), place holds the output to its tolerance of the output's largest
    magnitude: an element 1/800 of the largest that is 2% off (the roundings of
    the sum it carries) passes; an error of a tenth of the largest (a wrong
    combine) is refused."""
    from types import SimpleNamespace

    from tilefoundry.execute.compare import REL_FLOOR
    from tilefoundry.placer.driver import UNBOUNDED_TOLERANCE, _unbounded

    def verdicts(max_abs: float, max_rel: float):
        verdict = SimpleNamespace(name="out", allowed_value=float("inf"), max_abs=max_abs, max_rel=max_rel,
                                  rel_floor=REL_FLOOR * 8.0)  # the output's largest magnitude: 8
        return [SimpleNamespace(verdicts=[verdict])]

    assert _unbounded(verdicts(8.0 / 800 * 0.02, 0.02)) is None
    assert 0.8 > UNBOUNDED_TOLERANCE * 8.0
    assert "of its largest magnitude" in _unbounded(verdicts(0.8, 0.1))
