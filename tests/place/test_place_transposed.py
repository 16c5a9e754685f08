"""Issue 42 item 1: a matmul by a weight stored (N, K) -- ``x @ tf.transpose(w,
(1, 0))``, as a PyTorch Linear keeps its weight -- is the matmul kind, read
through the transpose tile by tile (it was glue that wrote a transposed copy of
the whole weight), and every split it writes is checked against the logical."""
import pytest

from tilefoundry import api
from tilefoundry.execution import check
from tilefoundry.placer import place
from tests.place.conftest import kernel_source

def _source(transposed: bool, n: int = 512) -> str:
    weight = f"({n}, 256)" if transposed else f"(256, {n})"
    return kernel_source(f'(x: Tensor[(2, 256), "bf16"], w: ConstTensor[{weight}, "bf16"]) -> Tensor[(2, {n}), "bf16"]',
                         "x @ tf.transpose(w, (1, 0))" if transposed else "x @ w")


def _write(tmp_path, name, transposed: bool) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(_source(transposed), encoding="utf-8")
    return str(path)


def test_a_transposed_weight_is_the_matmul_kind_read_through_its_transpose(tmp_path):
    result = place(_write(tmp_path, "nt", True), time_limit=30, progress=False)
    assert result.kind == "matmul" and result.best.checked
    assert "tf.transpose(tf.reshard(w[:, kk]" in result.best.text  # tile by tile, never the whole weight
    # the same bytes as the untransposed weight: priced alike (within 10%)
    plain = place(_write(tmp_path, "nn", False), time_limit=30, progress=False)
    assert result.best.figures["estimate_ns"] <= 1.1 * plain.best.figures["estimate_ns"]


@pytest.mark.parametrize("split_k", [1, 2])
def test_every_split_of_a_transposed_weight_is_checked_equal(tmp_path, split_k):
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.placed_program import MatmulChoice, program_text

    logical = _write(tmp_path, "nt", True)
    module, function = api.load(logical)
    kernel = read_kernel(module, function)
    assert kernel.b_transposed and kernel.dims == {"M": 2, "K": 256, "N": 512}
    placed = tmp_path / "placed.py"
    placed.write_text(program_text(kernel, MatmulChoice(1, 4, split_k, 64)), encoding="utf-8")
    results = check(str(placed), against=logical)
    assert all(r.passed for r in results)


def test_a_wrong_transpose_is_caught(tmp_path):
    """The check has teeth here: the weight's tile read untransposed (its (K, N)
    window of a square weight) differs from the logical kernel."""
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.placed_program import MatmulChoice, program_text

    logical = tmp_path / "square.py"
    logical.write_text(_source(True, n=256), encoding="utf-8")
    module, function = api.load(str(logical))
    text = program_text(read_kernel(module, function), MatmulChoice(1, 4, 1, 64))
    wrong = text.replace('tf.transpose(tf.reshard(w[:, kk], (N @ g.nt, TILE_K), "smem"), (1, 0))',
                         'tf.reshard(w[kk, :], (TILE_K, N @ g.nt), "smem")')
    assert wrong != text
    placed = tmp_path / "wrong.py"
    placed.write_text(wrong, encoding="utf-8")
    assert not all(r.passed for r in check(str(placed), against=str(logical)))
