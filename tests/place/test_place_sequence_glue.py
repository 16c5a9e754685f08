"""Issue 42 item 4 (docs/place.md, "The search space", sequence: a glue piece
staged in smem): a glue piece runs over its seed's split with every value in
smem, read once and written to gmem once, as the zoo's placed Mamba-2 state
update runs (placer/sequence_glue.py). Held on a small Mamba-2-style state
update (tests/place/data/glue_small.py): the staged point is in the space,
writes what it claims, prices below the same split with its values in gmem,
is the answer, and passes the check against the logical kernel; a staged
block that computes a wrong value is caught by the check."""
import dataclasses
import math
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.placer import place
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.objective import objective_of, price
from tilefoundry.placer.sequence_glue import STAGED, is_staged, staged_seeds
from tilefoundry.placer.sequence_search import _priced_piece
from tilefoundry.placer.spaces import budget_of

DATA = Path(__file__).parent / "data"
SMALL = f"{DATA / 'glue_small.py'}:SmallStateUpdate.update"
# the data file's extents
HEADS, HEAD_P, D_STATE = 8, 16, 32
INNER = HEADS * HEAD_P


@pytest.fixture(scope="module")
def kernel():
    module, function = api.load(SMALL)
    return module, read_kernel(module, function)


@pytest.fixture(scope="module")
def placed():
    return place(SMALL, time_limit=60, top=3, progress=False)


def _heads_seed(staged: bool):
    """The state split over its heads (axis 1), one head per CTA."""
    return (("state",), (1,), HEADS, STAGED if staged else "replicas", ())


def test_the_state_update_is_one_glue_piece(kernel):
    _, k = kernel
    assert k.kind == "sequence" and [p.kind for p in k.pieces] == ["glue"]


def test_a_staged_twin_is_in_the_space_where_its_inputs_fit_smem(kernel):
    """A seed's staged twin is left out exactly where the inputs alone (each
    CTA's share of the split ones, the rest whole) are past a CTA's smem: the
    memory family would refuse it, every input being read before the first op."""
    module, k = kernel
    piece = k.pieces[0]
    # f32 inputs: x and z (INNER each), dt (HEADS), bc (2 x D_STATE), a_log
    # (HEADS), gate_norm (INNER), and one head of the state (HEAD_P x D_STATE)
    held = 4 * (3 * INNER + 2 * HEADS + 2 * D_STATE + HEAD_P * D_STATE)
    budget = budget_of(module.target, "cta")
    seed = _heads_seed(staged=False)
    fits = staged_seeds(piece, [seed], dataclasses.replace(budget, smem_bytes=held))
    assert fits == [_heads_seed(staged=True)]
    assert staged_seeds(piece, [seed], dataclasses.replace(budget, smem_bytes=held - 1)) == []


def _piece_cost(k, objective, setting, tmp_path, name):
    def write(text, n):
        path = tmp_path / f"{name}_{n}.py"
        path.write_text(text)
        return str(path)

    return _priced_piece(k, 0, HEADS, setting, "cta", objective, write, price)


def test_staged_in_smem_prices_below_the_same_split_in_gmem(kernel, tmp_path):
    """The same split over the heads, its values in smem, is priced below its
    values in gmem (no DRAM round trip per dependent statement, no intermediate
    read back through L2); both load, the norm over the whole row reading its
    operand gathered whole first."""
    module, k = kernel
    objective = objective_of(module.target)
    in_gmem, gmem_setting = _piece_cost(k, objective, _heads_seed(staged=False), tmp_path, "gmem")
    in_smem, smem_setting = _piece_cost(k, objective, _heads_seed(staged=True), tmp_path, "smem")
    assert gmem_setting[4] and smem_setting[4] == gmem_setting[4]  # the norm's operand gathered in both
    assert in_smem < in_gmem


def test_place_answers_with_every_value_staged_in_smem(placed, kernel):
    """The answer is a staged glue kernel: every input read into smem once (the
    split one over the mesh), every value it leaves written to gmem, and it
    passed the check against the logical kernel (no place bug)."""
    _, k = kernel
    best = placed.best
    assert best is not None and not placed.bugs
    assert "every value staged in smem" in best.description
    seed = best.choice.seeds[0]
    assert is_staged(seed)
    text = best.text
    for name, shape, _, _ in k.pieces[0].inputs:
        assert f"{name}_in = tf.reshard({name}, (" in text
    assert text.count('"smem")') >= len(k.pieces[0].inputs)
    for name in k.results:
        assert f"{name} = tf.reshard({name}_e" in text and text.count('"gmem")') >= len(k.results)


def test_the_staged_answer_prices_below_every_gmem_answer(placed, kernel, tmp_path):
    """The old space (every glue value in gmem) holds no point as cheap: the
    answer's own split with its values in gmem prices higher."""
    module, k = kernel
    seed = placed.best.choice.seeds[0]
    ctas = placed.best.choice.count_of(0)
    objective = objective_of(module.target)

    def write(text, n):
        path = tmp_path / f"twin_{n}.py"
        path.write_text(text)
        return str(path)

    twin, _ = _priced_piece(k, 0, ctas, seed[:3] + ("replicas", ()), "cta", objective, write, price)
    assert placed.best.figures["estimate_ns"] < twin
    assert math.isfinite(twin)


def test_a_wrong_staged_block_is_caught_by_check(monkeypatch):
    """A staged block that takes softplus's place with silu computes a wrong dt:
    every staged answer is refused by the check as a place bug, never shown."""
    from tilefoundry.placer import sequence_glue

    real = sequence_glue.staged_seed_block

    def wrong(piece, ctas, seed, level):
        return [line.replace("tf.softplus(", "tf.silu(") for line in real(piece, ctas, seed, level)]

    monkeypatch.setattr(sequence_glue, "staged_seed_block", wrong)
    result = place(SMALL, time_limit=60, top=3, progress=False)
    assert result.bugs and all("staged in smem" in what for what, _ in result.bugs)
    assert all("staged in smem" not in p.description for p in result.placements)


def test_no_staged_twin_where_an_input_is_read_at_run_time_rows():
    """The routed experts' glue reads each chosen expert's weights as rows at its
    id (``w_gate_e[at : at + 1, :, :]``): staged, every expert's weights would be
    read whole into smem, so its seeds get no staged twin, however large smem is."""
    from tilefoundry.placer.sequence_search import _seeds

    module, function = api.load(f"{DATA / 'moe_small.py'}:SmallMoe.routed_experts")
    piece = next(p for p in read_kernel(module, function).pieces if p.kind == "glue")
    budget = dataclasses.replace(budget_of(module.target, "cta"), smem_bytes=1 << 40)
    seeds = [seed for ctas in (2, 4, 8, 16, 32) for seed in _seeds(piece, ctas)]
    assert seeds and staged_seeds(piece, seeds, budget) == []
    update = read_kernel(*api.load(SMALL)).pieces[0]
    assert staged_seeds(update, [_heads_seed(staged=False)], budget) == [_heads_seed(staged=True)]


def test_a_refused_whole_leaves_every_variant_priced_until_one_loads(monkeypatch):
    """A whole can be refused where its pieces alone are not (the memory family
    holds a value one block writes out live across the blocks after it: Mamba-2's
    layer, its staged state update beside the output GEMV's tiles). While no
    whole has loaded, the variants past ``WHOLE_VARIANTS`` are priced in turn:
    with the first ``WHOLE_VARIANTS + 1`` wholes of a small MLA layer (six
    variants) refused, an answer still comes."""
    from tilefoundry.errors import AnalysisError
    from tilefoundry.placer import sequence_search

    real = sequence_search.price_sequence
    refused = []

    def refusing(*args, **kwargs):
        price_of = kwargs["price"]

        def price_or_refuse(path, objective):
            if Path(path).name.startswith("program_") and len(refused) <= sequence_search.WHOLE_VARIANTS:
                refused.append(path)
                raise AnalysisError("'smem' holds too much at one point of this program (planted)")
            return price_of(path, objective)

        return real(*args, **{**kwargs, "price": price_or_refuse})

    monkeypatch.setattr(sequence_search, "price_sequence", refusing)
    result = place(f"{DATA / 'mla_small.py'}:SmallMla.mla", time_limit=60, progress=False)
    assert len(refused) == sequence_search.WHOLE_VARIANTS + 1
    assert result.best is not None and result.best.checked and not result.bugs
