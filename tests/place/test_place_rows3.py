"""Issue 42 item 1: a rows kernel over (B, S, H) values, as a model file writes a
prompt's hidden states (an RMSNorm over a batch of sequences), is the rows kind:
its rows split over the CTAs (S's share, and B's where S alone is too short),
checked against the logical kernel. It was sequence glue (4 x 512 x 4096 RMSNorm:
13,163 -> 11,911 ns)."""
from tilefoundry.placer import place
from tests.place.conftest import kernel_source

def _placed(tmp_path, b: int, s: int):
    source = tmp_path / f"norm_{b}x{s}.py"
    signature = f'(x: Tensor[({b}, {s}, 64), "bf16"], w: ConstTensor[(64,), "bf16"]) -> Tensor[({b}, {s}, 64), "bf16"]'
    source.write_text(kernel_source(signature, 'tf.cast(x32 * tf.rsqrt(ms + 1e-5), "bf16") * w', entry="norm",
                                    before=('x32 = tf.cast(x, "f32")',
                                            "ms = tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * 0.015625")),
                      encoding="utf-8")
    return place(str(source), time_limit=60, progress=False)


def test_a_batch_of_sequences_is_a_rows_kernel_split_over_its_rows(tmp_path):
    result = _placed(tmp_path, 2, 64)
    assert result.kind == "rows" and result.proven and result.best.checked
    assert "ROWS @ g.r" in result.best.text and result.best.choice.grid > 1


def test_short_sequences_split_the_batch_too(tmp_path):
    """S = 2 rows a sequence: a row split past 2 CTAs takes B's share as well."""
    from tilefoundry.placer.spaces import _rows_space, budget_of

    result = _placed(tmp_path, 64, 2)
    assert result.kind == "rows" and result.best.checked
    assert result.best.choice.outer > 1 and "BATCH @ g.o" in result.best.text
    from tilefoundry import api
    from tilefoundry.placer.kernel import read_kernel

    module, function = api.load(str(tmp_path / "norm_64x2.py"))
    kernel = read_kernel(module, function)
    points = _rows_space(kernel, budget_of(kernel.target, "cta"))
    assert all(p.grid % p.outer == 0 and 64 % p.outer == 0 and 2 % (p.grid // p.outer) == 0 for p in points)
