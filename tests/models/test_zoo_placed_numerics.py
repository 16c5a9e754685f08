"""Each placed decode step computes what its logical specification does
(issue 23 item 1): ``check --against`` of the placed root's layer and of its
whole-model decode step against the logical root's, on a reduced-config copy of
the model file (``zoo_reduced.py``: small dimensions and CTA counts, two layers),
once executed logically and once participant by participant (``placed=True``:
every CTA runs its own boxes, every Partial is completed by its reshard).

The bound: the two programs do the same arithmetic in a different order (a GEMV
sums its K tiles in f32; a hand-written RMSNorm / RoPE rounds after each f32 op
where ``tf.rms_norm`` / ``tf.rope`` round once), and every output ends in a bf16
rounding, so an element may differ by a bf16 rounding or two: rtol = atol =
2^-6 (4 ulps of bf16's 2^-8) of a value of order one. A deliberately broken
placement (the attention scale changed) is refused, so the bound can fail.
"""
from __future__ import annotations

import numpy as np
import pytest

from tilefoundry.execution import check
from tests.models.zoo_reduced import SMALL_CTX, reduced_copy

BOUND = 2.0 ** -6
ROOTS = {  # file -> (logical root, placed root, layers to check, whether ctx_len is stated)
    "llama3_8b.py": ("Llama3_8B", "Llama3_8B_H200", ("layer0",), True),
    "phi3_mini.py": ("Phi3Mini", "Phi3Mini_H200", ("layer0",), True),
    "gemma2_9b.py": ("Gemma2_9B", "Gemma2_9B_H200", ("layer0", "layer1"), True),
    "qwen3_moe.py": ("Qwen3Moe", "Qwen3Moe_H200", ("layer0",), True),
    "qwen3_moe_shared.py": ("Qwen3MoeShared", "Qwen3MoeShared_H200", ("layer0",), True),
    "mamba2_2_7b.py": ("Mamba2_2_7B", "Mamba2_2_7B_H200", ("layer0",), False),
    "deepseek_v3_mla.py": ("DeepSeekV3", "DeepSeekV3_H200", ("layer0", "layer1"), True),  # dense, MoE
}
CASES = [(file, child) for file, (_, _, layers, _) in ROOTS.items() for child in (*layers, None)]


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zoo_small")
    return {file: reduced_copy(file, folder) for file in ROOTS}


def _dims(file: str, child: str | None):
    """Gemma's even layers are sliding (a static ring buffer): they state no ctx_len."""
    stated = ROOTS[file][3] and not (file == "gemma2_9b.py" and child == "layer0")
    return {"ctx_len": SMALL_CTX} if stated else None


def _selector(root: str, child: str | None) -> str:
    return f"{root}.{child}" if child else root


@pytest.mark.parametrize("file,child", CASES, ids=[f"{f}:{c or 'decode_step'}" for f, c in CASES])
def test_placed_decode_step_holds_against_its_logical_twin(copies, file, child):
    logical, placed, _, _ = ROOTS[file]
    source = copies[file]
    results = check(f"{source}:{_selector(placed, child)}", placed=True,
                    against=f"{source}:{_selector(logical, child)}", dims=_dims(file, child),
                    rtol=BOUND, atol=BOUND)
    assert len(results) == 1
    result = results[0]
    assert result.placed is not None and result.placed.passed
    assert result.verdicts and all(v.passed for v in result.verdicts), [
        (v.name, v.max_abs, v.max_rel) for v in result.verdicts]


def test_a_wrong_placement_is_refused(tmp_path):
    """The same check on a copy whose placed attention scales its queries by 1.5x
    SCALE: the placed layer's output no longer holds."""
    source = reduced_copy("llama3_8b.py", tmp_path)
    text = source.read_text()
    broken = text.replace("q_s = tf.reshape(q_rot * SCALE,", "q_s = tf.reshape(q_rot * SCALE * 1.5,")
    assert broken != text
    source.write_text(broken)
    # at the cache's last position every row is attended (at a small one the scale
    # hardly matters: a softmax over one row is 1 at any scale)
    results = check(f"{source}:Llama3_8B_H200.layer0", against=f"{source}:Llama3_8B.layer0",
                    dims={"ctx_len": SMALL_CTX}, rtol=BOUND, atol=BOUND,
                    inputs={"pos": np.array([SMALL_CTX - 1], np.int32), "n_new": np.array([1], np.int32)})
    assert not results[0].passed
    assert not results[0].verdicts[0].passed  # the layer's hidden-state output
