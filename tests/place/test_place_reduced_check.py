"""Issue 42 speed ("the check takes 30-185 s per MLP"): a large chain's answer is
checked at reduced extents that keep every split and tile dividing, each with
two parts or more (placer/reduced_check.py states why that is sound)."""
import pytest

from tilefoundry import api
from tilefoundry.placer import place
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.reduced_check import reduced_pair

MLP = "src/tilefoundry/models/llama3_8b.py:Llama3_8B.layer0.mlp"


@pytest.fixture(scope="module")
def mlp():
    return place(MLP, time_limit=60, progress=False)


def test_a_large_chain_is_checked_at_reduced_extents(mlp):
    assert mlp.best.checked and mlp.checked_at.startswith("reduced extents")
    assert mlp.as_dict()["checked_at"] == mlp.checked_at


def test_the_reduction_keeps_every_split_and_tile_with_two_parts(mlp):
    module, function = api.load(MLP)
    kernel = read_kernel(module, function)
    choice = mlp.best.choice
    logical, placed, extents = reduced_pair(kernel, choice)
    for extent, smaller in extents.items():
        assert extent % smaller == 0 and smaller < extent
    for stage in kernel.stages:
        n = extents.get(stage.n, stage.n)
        assert n % choice.ctas == 0 and n // choice.ctas >= min(2, stage.n // choice.ctas)
    # the reduced placed program keeps the CTA count and loads; the logical one is the chain as written
    assert f'Topology("cta", {choice.ctas})' in placed and "@ w_down" in logical


def test_a_fault_across_k_trips_is_caught_at_reduced_extents(monkeypatch):
    """A placed program that halves its accumulator every trip agrees with the
    logical kernel only where there is one trip: the reduced check keeps two."""
    from tilefoundry.placer import chain

    real = chain.stage_block

    def leaky(stage, index, ctas, tile, level, *, last):
        lines = real(stage, index, ctas, tile, level, last=last)
        return [line.replace(f"acc{index}_0 = acc{index}_0 + ", f"acc{index}_0 = acc{index}_0 * 0.5 + ")
                for line in lines]

    monkeypatch.setattr(chain, "stage_block", leaky)
    result = place(MLP, time_limit=60, progress=False)
    assert result.placements == () and result.bugs
    assert all("differs from the logical kernel" in why for _, why in result.bugs)


GEMM = '''from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="gemm", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 132),))
class Logical:
    @func
    def gemm(a: Tensor[(2048, 2048), "bf16"], b: ConstTensor[(2048, 2048), "bf16"]) -> Tensor[(2048, 2048), "bf16"]:
        return a @ b
'''


@pytest.fixture(scope="module")
def gemm_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("gemm") / "gemm.py"
    path.write_text(GEMM)
    return str(path)


def test_a_large_matmul_is_checked_at_reduced_extents_keeping_its_grid(gemm_path):
    """Speed ("one GEMM within 10 s"): a 2048^3 answer is checked on its own grid
    at extents where every CTA keeps two rows and columns (where it had two)
    and walks two K trips or more, on the tensor cores as placed."""
    result = place(gemm_path, time_limit=60, progress=False)
    choice = result.best.choice
    assert result.best.checked and result.checked_at.startswith("reduced extents")
    module, function = api.load(gemm_path)
    logical, placed, extents = reduced_pair(read_kernel(module, function), choice)
    m, n, k = (extents.get(f"{name} 2048", 2048) for name in "MNK")
    assert m % choice.grid_m == 0 and m // choice.grid_m >= 2
    assert n % choice.grid_n == 0 and n // choice.grid_n >= 2
    assert k % choice.split_k == 0 and k < 2048
    assert f'Topology("cta", {choice.ctas})' in placed and 'out_dtype="f32"' in placed
    assert "return a @ b" in logical


def test_a_matmul_fault_across_k_trips_is_caught_at_reduced_extents(gemm_path, monkeypatch):
    """A placed GEMM that halves its accumulator every trip agrees with the
    logical kernel only at one trip: the reduced check keeps two."""
    from tilefoundry.placer import placed_program

    real = placed_program._matmul_body

    def leaky(kernel, choice, level):
        consts, body, doc = real(kernel, choice, level)
        return consts, [line.replace("acc = acc + ", "acc = acc * 0.5 + ") for line in body], doc

    monkeypatch.setattr(placed_program, "_matmul_body", leaky)
    result = place(gemm_path, time_limit=60, progress=False)
    assert result.placements == () and result.bugs
    assert all("differs from the logical kernel" in why for _, why in result.bugs)
