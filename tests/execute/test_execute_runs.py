"""Executing programs (issue 20): the logical run against hand-written numpy,
the placed run against the logical one on every golden program, and the
mutations that the placed check must catch."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilefoundry.execute import check_placed, run_logical
from tilefoundry.execution import prepare

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"

#: every golden selection, at the binding its README states
GOLDEN = [
    ("p01_rownorm_mesh.py:RowNormTiles", None), ("p02_dense_bias_gelu.py:DenseBiasGelu", None),
    ("p03_tiled_gemm.py:TiledGemm", None), ("p04_split_k_partial.py:SplitKGemm", None),
    ("p05_gqa_decode_online.py:GqaDecodeStep", {"ctx": 1024}), ("p06_module_tree.py:MiniStack", None),
    ("p07_multi_result.py:RouterProjection", None), ("p08_shape_ops.py:CacheShuffle", None),
    ("p09_predicates_special.py:MaskedLogSoftmax", None), ("p10_lowp_dtypes.py:Fp8Linear", None),
    ("p11_seq_variants.py:SeqPool", {"seq": 96}), ("p11_seq_variants.py:SeqPool", {"seq": 1024}),
    ("p12_smem_overflow.py:StagedProduct", {"width": 256}),
    ("p13_b200_residual_layernorm.py:ResidualLayerNorm", None), ("p14_amx_core_gemm.py:AmxCoreGemm", None),
    ("p15_cpu_host_scale.py:HostScale", None), ("p16_standalone_sliced_mesh.py:two_branch", None),
    ("p17_child_function_siblings.py:Pipeline.both", None), ("p19_unit_factor_split.py:ColumnShift", None),
    ("p20_layout_print_forms.py:PrintForms.row_scale", None),
    ("p20_layout_print_forms.py:PrintForms.head_major", None),
    ("p21_mesh_coordinate_loop.py:StridedDot", {"depth": 1024}),
    ("p22_broadcast_placement.py:Replicated", None), ("p22_broadcast_placement.py:ReplicatedCarry", None),
    ("p23_mma_fragment.py:WarpTile", None), ("p23_mma_fragment.py:CFragment", None),
    ("p24_where_condition_storage.py:CausalMask", None), ("p25_mesh_dims_binding.py:TokenTiles", {"tokens": 512}),
    ("p26_authored_where_constraint.py:DeferredPlacement", None),
]


def _prepared(selection: str, dims=None, seed: int = 0):
    return prepare(str(PROGRAMS / selection), dims=dims, seed=seed)


def test_logical_run_of_split_k_is_the_gemm():
    """p04: out = (a @ b)·0.5 and totals = its row sums; the program splits K
    over 4 CTAs (a Partial completed by reshards), the logical run does not."""
    p = _prepared("p04_split_k_partial.py:SplitKGemm")
    a, b = (p.by_name()[k].astype(np.float64) for k in ("a", "b"))
    out = run_logical(p.function, p.arguments)
    expected = (a @ b) * 0.5
    np.testing.assert_allclose(out["output[0]"], expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out["output[1]"][:, 0], expected.sum(axis=1), rtol=1e-5, atol=1e-3)


def test_logical_run_reads_mesh_coordinates():
    """p21: each worker w starts its K windows at kk + 64·w; summed over both
    workers the program is a @ b (the coordinate is read through local())."""
    p = _prepared("p21_mesh_coordinate_loop.py:StridedDot", {"depth": 512})
    a, b = (p.by_name()[k].astype(np.float64) for k in ("a", "b"))
    out = run_logical(p.function, p.arguments)["output"]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("selection,dims", GOLDEN, ids=[f"{s}{d or ''}" for s, d in GOLDEN])
def test_every_golden_program_passes_check_placed(selection, dims):
    """Issue 20 item 6: every golden program's placed run (each participant on
    its own box) assembles, at every reshard and output, to the logical run."""
    p = _prepared(selection, dims)
    report = check_placed(p.function, p.arguments)
    assert report.passed, report.mismatch.line()
    assert report.compared >= 1


@pytest.mark.parametrize("mutation", ["partial", "neighbour"])
def test_mutations_are_reported_at_the_first_reshard(mutation):
    """A placed run that treats a Partial as complete, or deals each
    participant its neighbour's box, must fail on p04 at the statement that
    completes the Partial (line 36), naming a participant and both values."""
    p = _prepared("p04_split_k_partial.py:SplitKGemm")
    report = check_placed(p.function, p.arguments, mutation=mutation)
    assert not report.passed
    m = report.mismatch
    assert m.location.endswith("p04_split_k_partial.py:36:19")
    assert m.participant is not None and m.element is not None
    assert m.logical != m.placed
    assert "placed value differs" in m.line()


def test_neighbour_mutation_is_caught_where_no_partial_exists():
    """p01 splits rows and hidden lanes without any Partial: a participant
    given its neighbour's box computes the wrong row norm."""
    p = _prepared("p01_rownorm_mesh.py:RowNormTiles")
    report = check_placed(p.function, p.arguments, mutation="neighbour")
    assert not report.passed and report.mismatch.participant is not None


def test_seed_makes_runs_repeatable_and_distinct():
    """The same seed draws the same inputs; another seed other inputs."""
    first = run_logical(*_fa(_prepared("p02_dense_bias_gelu.py:DenseBiasGelu", seed=1)))
    again = run_logical(*_fa(_prepared("p02_dense_bias_gelu.py:DenseBiasGelu", seed=1)))
    other = run_logical(*_fa(_prepared("p02_dense_bias_gelu.py:DenseBiasGelu", seed=2)))
    assert np.array_equal(first["output"], again["output"])
    assert not np.array_equal(first["output"], other["output"])


def _fa(p):
    return p.function, p.arguments


def test_every_op_has_an_evaluator():
    """Issue 20 item 1: no op of the set lacks an evaluator (a walk of the registry)."""
    import tilefoundry.ops  # noqa: F401
    from tilefoundry.semantics.op_registry import EVALUATORS, TYPEINFER

    missing = sorted(c.__name__ for c in TYPEINFER if c not in EVALUATORS)
    assert not missing, missing
    assert len(EVALUATORS) >= 50


def test_live_element_limit_refuses_in_one_line(monkeypatch):
    """TILEFOUNDRY_MAX_EVAL_ELEMENTS bounds the live elements: p04 holds
    128·1024 + 1024·64 input elements, past a limit of 1000, refused before
    any argument is drawn (issue 22: the limit comes before the work)."""
    from tilefoundry.limits import LimitError

    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_ELEMENTS", "1000")
    with pytest.raises(LimitError, match="the arguments of 'split_k_gemm' hold 196,608 elements "
                                         r"\(limit 1,000 live elements"):
        _prepared("p04_split_k_partial.py:SplitKGemm")


def test_live_element_limit_refuses_a_result_before_it_is_computed(monkeypatch):
    """With room for the arguments only, the first statement's result (its
    type's elements) is refused before numpy allocates it."""
    from tilefoundry.limits import LimitError

    p = _prepared("p04_split_k_partial.py:SplitKGemm")
    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_ELEMENTS", str(128 * 1024 + 1024 * 64))
    with pytest.raises(LimitError, match="TILEFOUNDRY_MAX_EVAL_ELEMENTS=196,608"):
        run_logical(p.function, p.arguments)


def test_package_root_run_and_check():
    """Issue 20 item 5: tilefoundry.run gives arrays by output name and
    tilefoundry.check one result per binding, each with its verdicts."""
    import tilefoundry

    source = str(PROGRAMS / "p04_split_k_partial.py")
    outputs = tilefoundry.run(source, seed=3)
    assert sorted(outputs) == ["output[0]", "output[1]"] and outputs["output[0]"].shape == (128, 64)

    def twin(a, b):
        out = (a.astype(np.float64) @ b.astype(np.float64)) * 0.5
        return out, out.sum(axis=1, keepdims=True)

    results = tilefoundry.check(source, against=twin, placed=True, seed=3)
    assert len(results) == 1 and results[0].passed
    assert [v.name for v in results[0].verdicts] == ["output[0]", "output[1]"]
    assert results[0].placed.passed and results[0].placed.compared == 6


BLOCKED_PAIR = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.ir.types.dim import dim_min
from tilefoundry.target import CudaTarget

N, BLOCK = 64, 16
VISIT = DimVar("visit", 1, N + 1)
VISITED = ceildiv(dim_min(VISIT, N), BLOCK) * BLOCK


@module(entry="total", target=CudaTarget("nvidia.h100_sxm"))
class Blocked:
    @func
    def total(x: Tensor[(N, 4), "f32"]) -> Tensor[(1, 4), "f32"]:
        acc = tf.zeros(Tensor[(1, 4), "f32"])
        for blk in tile(VISITED, BLOCK):
            acc = acc + tf.reduce(x[blk, :], (0,), True, ReduceKind.SUM)
        return acc


@module(entry="total", target=CudaTarget("nvidia.h100_sxm"))
class Whole:
    @func
    def total(x: Tensor[(N, 4), "f32"]) -> Tensor[(1, 4), "f32"]:
        return tf.reduce(x, (0,), True, ReduceKind.SUM)
'''


def test_check_binds_each_side_only_the_dimensions_it_reaches(tmp_path):
    """A kernel that visits `visit` rows (a decode attention's attended length)
    checked against a twin that never names it: the twin runs without that
    binding; a dimension neither side reaches is still refused."""
    import tilefoundry
    from tilefoundry.errors import AnalysisError

    path = tmp_path / "blocked_pair.py"
    path.write_text(BLOCKED_PAIR)
    results = tilefoundry.check(f"{path}:Blocked", against=f"{path}:Whole", dims={"visit": 64})
    assert [r.passed for r in results] == [True]
    short = tilefoundry.check(f"{path}:Blocked", against=f"{path}:Whole", dims={"visit": 16})
    assert [r.passed for r in short] == [False]  # 16 of 64 rows summed: the twin catches it
    with pytest.raises(AnalysisError, match="no dimension named"):
        tilefoundry.check(f"{path}:Blocked", against=f"{path}:Whole", dims={"visit": 64, "nope": 2})


def test_check_shares_read_only_views_of_the_inputs_with_the_interpreter():
    """The interpreter's runs share each input as a read-only view (a layer's
    weights are not copied per side); a write through one is refused, and the
    caller's own arrays stay writeable and unchanged."""
    from tilefoundry.execute.twins import frozen, owned_copy

    given = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    views = frozen(given)
    assert np.shares_memory(views["w"], given["w"]) and not views["w"].flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        views["w"][0, 0] = 7.0
    assert given["w"].flags.writeable and given["w"][0, 0] == 0.0
    copied = owned_copy(views)  # what a Python twin, which may write, is given
    assert copied["w"].flags.writeable and not np.shares_memory(copied["w"], given["w"])
