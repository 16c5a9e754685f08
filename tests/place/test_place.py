"""Issue 42: `tilefoundry.place` searches a logical kernel's placements, answers
with a program that loads and analyses unchanged, checks it against the logical
kernel before showing it, and says whether it proved its answer best."""
import re
from pathlib import Path

import pytest

from tilefoundry import api
from tilefoundry.errors import AnalysisError, ArgumentError, TileFoundryError
from tilefoundry.placer import place
from tilefoundry.placer.driver import MAX_BUGS
from tilefoundry.placer.objective import objective_of, price

DATA = Path(__file__).parent / "data"
GEMV = str(DATA / "gemv_small.py")
RMS = f"{DATA / 'rows_small.py'}:SmallRms.rms"


@pytest.fixture(scope="module")
def gemv_all():
    """Every point of the small GEMV's space priced (the limit is far above it), the best 8 checked."""
    return place(GEMV, time_limit=120, top=8, progress=False)


def _written(tmp_path, text: str, name: str = "placed.py") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_item2_answer_is_a_program_that_loads_and_analyses(gemv_all, tmp_path):
    best = gemv_all.best
    path = _written(tmp_path, best.text)
    module, function = api.load(path)
    assert function.name == "gemv"
    objective = objective_of(module.target)
    again = price(path, objective)
    # the figures shown are the figures of the program written
    assert again.objective_ns == best.figures[gemv_all.objective]
    assert again.peak_bytes == best.figures["peak_bytes"]


def test_item1_proven_best_means_every_point_priced_and_ranked(gemv_all):
    assert gemv_all.proven and gemv_all.priced == gemv_all.space_size
    times = [p.figures[gemv_all.objective] for p in gemv_all.placements]
    assert times == sorted(times)
    assert len(gemv_all.placements) == 8 and sum(gemv_all.refused.values()) <= gemv_all.space_size - 8


FEW_SPLITS = """from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="gemv", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class FewSplits:
    @func
    def gemv(h: Tensor[(1, 2560), "bf16"], w: ConstTensor[(2560, 10576), "bf16"]) -> Tensor[(1, 10576), "bf16"]:
        return h @ w
"""


def test_item1_split_k_points_are_in_the_space_and_check(tmp_path):
    """A GEMV whose 16 x 661 output columns split over 16 CTAs at most (661 CTAs
    would pass four waves) fills the units by splitting K: the best point splits
    K, sums the split axis (completed across the CTAs) and is checked."""
    path = tmp_path / "few_splits.py"
    path.write_text(FEW_SPLITS)
    result = place(str(path), time_limit=60, progress=False)
    assert result.best.choice.split_k > 1, "split-K is part of the matmul space and pays here"
    assert "ReduceKind.SUM" in result.best.text and result.best.checked


def test_item1_capacity_is_a_hard_constraint(gemv_all):
    from tilefoundry.placer.spaces import MAX_WAVES, budget_of
    from tilefoundry.target.catalog import resolve_identity

    budget = budget_of(resolve_identity("nvidia.h200_sxm"), "cta")
    for placement in gemv_all.placements:
        assert placement.figures["peak_bytes"].get("smem", 0) <= budget.smem_bytes
        assert placement.choice.ctas <= budget.units * MAX_WAVES


def test_item1_deterministic_for_a_seed():
    first = place(GEMV, time_limit=60, top=3, seed=5, progress=False)
    second = place(GEMV, time_limit=60, top=3, seed=5, progress=False)
    assert [p.text for p in first.placements] == [p.text for p in second.placements]


def test_item1_stops_at_the_time_limit_and_says_so():
    result = place(GEMV, time_limit=0.3, top=1, progress=False)
    assert not result.proven and result.priced < result.space_size


def test_item1_rows_kernel_splits_rows_and_checks(tmp_path):
    result = place(RMS, time_limit=60, top=4, progress=False)
    assert result.kind == "rows" and result.proven
    for placement in result.placements:
        choice = placement.choice
        assert 8 % choice.grid == 0 and 256 % choice.cols == 0 and placement.checked
        module, _ = api.load(_written(tmp_path, placement.text, f"p{placement.rank}.py"))
        assert module.topologies[0].size == choice.grid * choice.cols


def test_item4_a_one_row_norm_writes_its_columns_from_many_ctas(tmp_path):
    """One row cannot be split over rows: each of several CTAs computes the whole
    row and writes its own columns, which shares the write and the launch's
    latency; it must price below the one-CTA placement, and be checked."""
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.placed_program import RowsChoice, program_text

    selection = "src/tilefoundry/models/llama3_8b.py:Llama3_8B.layer0.rms"
    result = place(selection, time_limit=60, progress=False)
    best = result.best
    assert best.choice.grid == 1 and best.choice.cols > 1 and best.checked
    module, function = api.load(selection)
    kernel = read_kernel(module, function)
    one = _written(tmp_path, program_text(kernel, RowsChoice(1, best.choice.staging, 1)))
    assert best.figures[result.objective] < price(one, objective_of(module.target)).objective_ns


def test_item2_a_placement_that_disagrees_is_a_bug_never_an_answer(monkeypatch):
    from tilefoundry.placer import placed_program

    real = placed_program._matmul_body

    def wrong(kernel, choice, level):  # every product doubled: a wrong program
        consts, body, doc = real(kernel, choice, level)
        return consts, [re.sub(r"(tf\.matmul\(a_t, b_t[^)]*\))", r"\1 * 2.0", line)
                        for line in body], doc

    monkeypatch.setattr(placed_program, "_matmul_body", wrong)
    result = place(GEMV, time_limit=60, top=1, progress=False)
    assert result.placements == () and len(result.bugs) == MAX_BUGS
    assert "differs from the logical kernel" in result.bugs[0][1]


def test_a_reduction_across_rows_falls_to_the_sequence_kind():
    """Outside the rows kind (a reduction over the rows), the kernel is placed as a
    sequence of kernels (placer/sequence.py), checked like every answer."""
    result = place(f"{DATA / 'rows_small.py'}:SmallRms.cross_rows", time_limit=60, progress=False)
    assert result.kind == "sequence" and result.best.checked and not result.bugs


def test_refuses_kernels_outside_the_space():
    with pytest.raises(AnalysisError, match="already reshards"):
        place("tests/data/programs/p01_rownorm_mesh.py", time_limit=1, progress=False)


@pytest.mark.parametrize("keyword, value", [("top", 0), ("time_limit", -1), ("time_limit", "5"),
                                            ("seed", -2), ("level", 3)])
def test_api_refuses_bad_arguments(keyword, value):
    with pytest.raises(ArgumentError, match=keyword):
        place(GEMV, **{keyword: value})


def test_api_is_a_lazy_name_of_the_package():
    import tilefoundry

    assert tilefoundry.place is place and callable(tilefoundry.place)
    assert issubclass(AnalysisError, TileFoundryError)


def test_objective_is_estimate_where_served_else_performance():
    """Issue 42 item 1: the estimate family's time, the performance family's where
    the target states no estimate analyzer."""
    from tilefoundry.target.catalog import resolve_identity

    class NoEstimate:
        def analyzer_selectors(self):
            return ("compute-cost", "memory", "roofline", "performance")

    assert objective_of(resolve_identity("nvidia.h200_sxm")).figure == "estimate_ns"
    fallback = objective_of(NoEstimate())
    assert (fallback.family, fallback.figure) == ("performance", "predicted_ns")


def test_target_replaces_the_modules_own(tmp_path):
    result = place(RMS, target="nvidia.h100_sxm", time_limit=60, progress=False)
    assert 'CudaTarget("nvidia.h100_sxm")' in result.best.text
    module, _ = api.load(_written(tmp_path, result.best.text))
    assert module.target.identity == "nvidia.h100_sxm"


def test_item2_a_point_whose_program_does_not_load_is_a_bug(monkeypatch):
    from tilefoundry.placer import placed_program

    real = placed_program._matmul_body

    def unloadable(kernel, choice, level):  # a name the program never binds
        consts, body, doc = real(kernel, choice, level)
        return consts, [line.replace("acc = acc + ", "acc = acc_missing + ") for line in body], doc

    monkeypatch.setattr(placed_program, "_matmul_body", unloadable)
    result = place(GEMV, time_limit=60, progress=False)
    assert result.placements == () and result.bugs
    assert all("does not load" in why for _, why in result.bugs)


def test_item2_a_failure_every_draw_of_which_met_a_near_tie_names_the_tie(monkeypatch):
    """check draws again where a failing draw met a top-k near tie; where every draw
    failed so, place's bug report names the tie (the failure may be the tie's)."""
    from tilefoundry import execution
    from tilefoundry.execute.compare import Verdict
    from tilefoundry.placer.driver import _checked

    verdict = Verdict("out", False, None, 1.0, 1.0, 0.0, (0, 3), 2.0, 1.0, 0.5)
    failed = execution.CheckResult({}, False, (verdict,), None, 7, tie="router: at row 0 the scores tie")
    monkeypatch.setattr(execution, "check", lambda *args, **kwargs: [failed])
    why = _checked("logical.py:f", None, "placed.py", seed=0)
    assert why.startswith("output 'out' differs from the logical kernel: at (0, 3)")
    assert why.endswith("(every draw met a near tie: router: at row 0 the scores tie)")
