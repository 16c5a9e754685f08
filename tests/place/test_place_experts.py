"""Issue 42 item 4 (every kernel within 1.05x of the hand-placed one): a MoE
block's routed experts — weight stacks read with ``index_select`` by the top-k
ids, batched matmuls, a sum over the experts weighted by the router — are found
by structure inside a glue piece and placed as the kernel a person writes
(placer/sequence_experts.py): the chosen experts one after another, each GEMV
split over its output columns with K tiles staged through smem, the weighted
sum its epilogue. Each answer is checked against the logical kernel; the glue
form stays in the space and prices above it."""
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.placer import place, sequence_experts
from tilefoundry.placer.kernel import read_kernel

DATA = Path(__file__).parent / "data"
MOE = f"{DATA / 'moe_small.py'}:SmallMoe"


def _kernel(name: str):
    module, function = api.load(f"{MOE}.{name}")
    return read_kernel(module, function)


@pytest.fixture(scope="module")
def routed():
    return place(f"{MOE}.routed_experts", time_limit=60, progress=False)


def _expert_setting(result):
    return [seed for seed in result.best.choice.seeds if seed and seed[0] == "experts"]


def test_the_expert_core_is_recognised_by_structure():
    """Two products of one row by stacks selected by the same ids (gate, up), an
    elementwise op between, a product by a third selected stack (down), a
    per-expert scale and a sum over the experts: the core, whatever its names."""
    (piece,) = _kernel("routed_experts").pieces
    core = piece.experts
    assert piece.kind == "glue" and core is not None
    assert core.count == 2 and core.ids == "ids"
    assert [stack for _, stack, _, _ in core.first] == ["w_gate_e", "w_up_e"] and core.second[1] == "w_down_e"
    assert (core.m, core.k, core.f, core.n) == (1, 64, 32, 64)
    # the router's weights, one per expert, scale each expert's output before the sum
    assert [shape for _, shape in core.scales] == [(2, 1, 1)]


def test_products_by_selected_stacks_with_no_sum_over_the_experts_stay_glue():
    """Each expert's output returned apart is no expert block: the kernel would
    hold those outputs one expert at a time only."""
    pieces = _kernel("per_expert").pieces
    assert [p.kind for p in pieces] == ["glue"] and pieces[0].experts is None


def test_the_routed_experts_are_one_expert_kernel_checked(routed, tmp_path):
    """The answer reads each chosen expert's weights as a run-time window of its
    stack (never the gathered batch) in one launch, and agrees with the logical kernel."""
    assert routed.best.checked and not routed.bugs and _expert_setting(routed)
    text = routed.best.text
    assert text.count("with Mesh(") == 1 and "for j in range(2):" in text
    assert "w_down_e[e : e + 1, :, :]" in text and "tf.index_select" not in text and "tf.concat" not in text
    path = tmp_path / "placed.py"
    path.write_text(text, encoding="utf-8")
    assert api.load(str(path))[1].name == "routed_experts"


def test_the_expert_kernel_prices_below_the_glue_form(routed, monkeypatch):
    """The same search without the expert setting answers with glue (the
    gathered batch in gmem), checked too, and slower."""
    monkeypatch.setattr(sequence_experts, "experts_settings", lambda piece, ctas, budget: [])
    glue = place(f"{MOE}.routed_experts", time_limit=60, progress=False)
    assert glue.best.checked and not _expert_setting(glue)
    figure = routed.objective
    assert routed.best.figures[figure] < glue.best.figures[figure]


def test_a_wrong_expert_kernel_is_refused_by_the_check(routed, monkeypatch, tmp_path):
    """Every expert scaled by the first expert's weight disagrees with the logical
    kernel (the two chosen experts' weights differ): the check place runs on
    every answer refuses it, where it passes the kernel as written."""
    from tilefoundry.placer.driver import _checked
    from tilefoundry.placer.sequence import SequenceChoice, sequence_text

    module, function = api.load(f"{MOE}.routed_experts")
    kernel = read_kernel(module, function)
    choice = SequenceChoice(routed.best.choice.ctas, (), tuple(_expert_setting(routed)))
    real = sequence_experts.experts_block

    def first_weight_only(piece, ctas, setting, level):
        return [line.replace("_e[j, :, :]", "_e[0, :, :]") for line in real(piece, ctas, setting, level)]

    verdicts = []
    for block in (real, first_weight_only):
        monkeypatch.setattr(sequence_experts, "experts_block", block)
        path = tmp_path / f"{block.__name__}.py"
        path.write_text(sequence_text(kernel, choice), encoding="utf-8")
        verdicts.append(_checked((module, function), kernel, str(path), seed=0))
    assert verdicts[0] is None and "differs from the logical kernel" in verdicts[1]


def test_the_router_runs_inside_the_expert_kernel():
    """Router GEMV, then softmax, top-k and the experts in one kernel: every CTA
    repeats the routing on the logits (as the zoo's placed router does) and
    reads the chosen ids from it."""
    kernel = _kernel("moe")
    assert [p.kind for p in kernel.pieces] == ["gemv", "glue"] and kernel.pieces[1].experts is not None
    result = place(f"{MOE}.moe", time_limit=60, progress=False)
    assert result.best.checked and not result.bugs and _expert_setting(result)
    text = result.best.text
    assert text.count("with Mesh(") == 2
    experts_kernel = text.split("with Mesh(")[2]
    assert "tf.topk(" in experts_kernel and "for j in range(2):" in experts_kernel


def test_a_router_reads_its_logits_into_smem_once(monkeypatch):
    """The softmax, top-k and normalisation over the logits the GEMV left in gmem
    run whole with the logits staged in smem (no gmem round trip per op), as the
    zoo's placed router does: checked, and priced below the same glue in gmem."""
    staged = place(f"{MOE}.router", time_limit=60, progress=False)
    assert staged.best.checked and not staged.bugs and ("staged",) in staged.best.choice.seeds
    glue = staged.best.text.split("with Mesh(")[-1]
    assert '_s = tf.reshard(v' in glue and '"smem")' in glue and "tf.topk(" in glue
    monkeypatch.setattr(sequence_experts, "own_settings", sequence_experts.experts_settings)
    in_gmem = place(f"{MOE}.router", time_limit=60, progress=False)
    assert in_gmem.best.checked and ("staged",) not in in_gmem.best.choice.seeds
    assert staged.best.figures[staged.objective] < in_gmem.best.figures[in_gmem.objective]
