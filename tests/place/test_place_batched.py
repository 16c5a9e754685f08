"""Issue 42 item 1: a batched ``tf.matmul`` (one batch extent on both operands,
the right one perhaps read through ``tf.transpose(b, (0, 2, 1))``) is the matmul
kind: the batch split over CTAs beside the row and column grid (it was glue on
32 CTAs at 4.9x its ideal), every answer checked against the logical kernel."""
import pytest

from tilefoundry import api
from tilefoundry.execution import check
from tilefoundry.placer import place
from tests.place.conftest import kernel_source

def _write(tmp_path, transposed: bool) -> str:
    path = tmp_path / ("bnt.py" if transposed else "bnn.py")
    right = "tf.transpose(b, (0, 2, 1))" if transposed else "b"
    path.write_text(kernel_source(f'(a: Tensor[(4, 32, 64), "bf16"], b: Tensor[{"(4, 48, 64)" if transposed else "(4, 64, 48)"}, '
                                  '"bf16"]) -> Tensor[(4, 32, 48), "bf16"]', f"tf.matmul(a, {right})"), encoding="utf-8")
    return str(path)


def test_a_batched_matmul_splits_its_batch_and_is_checked(tmp_path):
    result = place(_write(tmp_path, False), time_limit=60, progress=False)
    best = result.best
    assert result.kind == "matmul" and result.proven and best.checked
    assert best.choice.grid_b > 1 and "B @ g.bt" in best.text
    assert best.choice.split_k == 1  # the batch is the parallelism a split-K would add


@pytest.mark.parametrize("transposed", [False, True])
def test_each_batch_split_is_checked_equal(tmp_path, transposed):
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.placed_program import MatmulChoice, program_text

    logical = _write(tmp_path, transposed)
    module, function = api.load(logical)
    kernel = read_kernel(module, function)
    assert kernel.dims == {"B": 4, "M": 32, "K": 64, "N": 48} and kernel.b_transposed == transposed
    for choice in (MatmulChoice(2, 3, 1, 16, grid_b=4), MatmulChoice(1, 1, 1, 64, grid_b=2)):
        placed = tmp_path / f"placed_{choice.grid_b}.py"
        placed.write_text(program_text(kernel, choice), encoding="utf-8")
        assert all(r.passed for r in check(str(placed), against=logical))


def test_a_batched_k_window_read_wrong_is_caught(tmp_path):
    """The check has teeth on the batched writer: B's first K tile read on every
    trip (its own window dropped) differs from the logical kernel."""
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.placed_program import MatmulChoice, program_text

    logical = _write(tmp_path, False)
    module, function = api.load(logical)
    text = program_text(read_kernel(module, function), MatmulChoice(1, 1, 1, 16, grid_b=4))
    wrong = text.replace("b_t = tf.reshard(b[:, kk, :]", "b_t = tf.reshard(b[:, 0:16, :]")
    assert wrong != text
    placed = tmp_path / "wrong.py"
    placed.write_text(wrong, encoding="utf-8")
    assert not all(r.passed for r in check(str(placed), against=logical))
