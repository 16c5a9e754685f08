"""Issue 42 item 1: a matmul followed by elementwise ops over its output -- a
bias row, an activation, a residual -- is the matmul kind with an epilogue: the
f32 total cast to the dtype the logical product has (it rounds there), then the
ops as written over each CTA's own tile, their operands staged over the same
rows and columns. A 128-row GEMM + bias + GELU was refused (sequence GEMV
pieces hold their left operand whole); every answer is checked."""
import pytest

from tilefoundry import api
from tilefoundry.execution import check
from tilefoundry.placer import place
from tests.place.conftest import kernel_source

def _write(tmp_path, name, m=64, k=256, n=128, body="tf.gelu(x @ w + b) + r") -> str:
    path = tmp_path / f"{name}.py"
    signature = (f'(x: Tensor[({m}, {k}), "bf16"], w: ConstTensor[({k}, {n}), "bf16"], b: ConstTensor[({n},), "bf16"], '
                 f'r: Tensor[({m}, {n}), "bf16"]) -> Tensor[({m}, {n}), "bf16"]')
    path.write_text(kernel_source(signature, body), encoding="utf-8")
    return str(path)


def _kernel(path):
    from tilefoundry.placer.kernel import read_kernel

    module, function = api.load(path)
    return read_kernel(module, function)


def test_a_gemm_with_bias_activation_and_residual_is_the_matmul_kind_and_checked(tmp_path):
    source = _write(tmp_path, "linear", m=32, k=128, n=64)
    kernel = _kernel(source)
    assert kernel.kind == "matmul" and kernel.product == "bf16" and len(kernel.lines) == 3
    result = place(source, time_limit=60, progress=False)
    best = result.best
    assert result.kind == "matmul" and best.checked and not result.bugs
    assert 'mm = tf.cast(total, "bf16")' in best.text and "b_s = tf.reshard(b, (N" in best.text


@pytest.mark.parametrize("split_k", [1, 2])
def test_each_split_of_an_epilogue_is_checked_equal_and_a_wrong_one_caught(tmp_path, split_k):
    from tilefoundry.placer.placed_program import MatmulChoice, program_text

    source = _write(tmp_path, "linear")
    text = program_text(_kernel(source), MatmulChoice(2, 4, split_k, 32))
    placed = tmp_path / "placed.py"
    placed.write_text(text, encoding="utf-8")
    assert all(r.passed for r in check(str(placed), against=source))
    wrong = text.replace("e0 = mm + b_s", "e0 = mm - b_s")
    assert wrong != text
    placed.write_text(wrong, encoding="utf-8")
    assert not all(r.passed for r in check(str(placed), against=source))


def test_a_large_gemm_with_an_epilogue_is_checked_at_reduced_extents(tmp_path):
    result = place(_write(tmp_path, "big", m=2048, k=2048, n=2048), time_limit=60, progress=False)
    assert result.kind == "matmul" and result.best.checked and result.checked_at.startswith("reduced extents")


def test_an_op_across_the_rows_after_the_product_is_no_epilogue(tmp_path):
    kernel = _kernel(_write(tmp_path, "softmax", body="tf.softmax(x @ w + b, -1) + r"))
    assert kernel.kind != "matmul"
