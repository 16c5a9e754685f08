"""Issue 42: a masked decode attention whose mask is the causal sliding window
(`rows <= pos and rows > pos - W`, Phi-3's) is found by structure in the mask's
ops, and its flash-decoding kernel visits only the windows of cache rows the
window can touch, from a run-time first one, as the zoo's placed Phi-3 walks them;
the position the mask reads is staged in smem with it. Checked against the
logical kernel at a reduced Phi-3 config."""
from __future__ import annotations

import pytest

from tilefoundry import api
from tilefoundry.models import reduced
from tilefoundry.placer.kernel import read_kernel
from tilefoundry.placer.sequence import piece_text

CONFIG = dict(D_MODEL=64, N_HEADS=4, FFN=128, VOCAB=256, MAX_POS=64, WINDOW=20)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return str(reduced("phi3-mini", folder=tmp_path_factory.mktemp("phi3"), **CONFIG))


def _core(path, window=None):
    text = open(path, encoding="utf-8").read()
    if window is not None:
        text = text.replace("WINDOW = 20", f"WINDOW = {window}")
    return text


def test_the_sliding_window_mask_is_read_off_its_ops(small):
    module, function = api.load(f"{small}:Phi3Mini.layer0.attention")
    kernel = read_kernel(module, function, {"ctx_len": 64})
    [core] = [p.core for p in kernel.pieces if p.kind == "attention"]
    assert core.window == ("pos", 20, "i32")


def test_the_kernel_visits_only_the_windows_it_touches(small):
    """64 cache rows in windows of 16 (8 splits x 2 heads... of block 16 x 1 split
    per head): a 20-row window touches ceil(19 / 16) + 1 = 3 of the 4 windows."""
    module, function = api.load(f"{small}:Phi3Mini.layer0.attention")
    kernel = read_kernel(module, function, {"ctx_len": 64})
    index = next(i for i, p in enumerate(kernel.pieces) if p.kind == "attention")
    text = piece_text(kernel, index, 4, (4, 16))
    assert "for i in range(3):" in text and "at : at + 16" in text and "tile(64" not in text
    assert 'pos_s = tf.reshard(pos, (1,), "smem")' in text


def _agrees(program, reference, pos: int, seed: int) -> bool:
    """Within check's bound, and, where that bound is unbounded (a masked softmax),
    within place's own tolerance (placer/driver.py)."""
    import numpy as np

    from tilefoundry import execution
    from tilefoundry.placer.driver import _unbounded

    results = execution.check(str(program), against=str(reference), seed=seed,
                              inputs={"pos": np.array([pos], np.int32)})
    return bool(results) and all(r.passed for r in results) and _unbounded(results) is None


def test_the_windowed_kernel_agrees_with_the_kernel_that_visits_every_window(small, tmp_path, monkeypatch):
    """The same piece written to visit every window (the tile loop) is the
    reference: the windowed one agrees with it at positions in the last, a
    middle and the third window (the rows it skips are all masked), and one that
    visits a window fewer does not."""
    from tilefoundry.placer import sequence_attention

    module, function = api.load(f"{small}:Phi3Mini.layer0.attention")
    kernel = read_kernel(module, function, {"ctx_len": 64})
    index = next(i for i, p in enumerate(kernel.pieces) if p.kind == "attention")
    text = piece_text(kernel, index, 4, (4, 16))
    windowed, short = tmp_path / "windowed.py", tmp_path / "short.py"
    windowed.write_text(text, encoding="utf-8")
    short.write_text(text.replace("for i in range(3):", "for i in range(2):"), encoding="utf-8")
    monkeypatch.setattr(sequence_attention, "_visited", lambda core, step: core.ctx // step)
    every = tmp_path / "every.py"
    every.write_text(piece_text(kernel, index, 4, (4, 16)), encoding="utf-8")
    assert "tile(64, 16)" in every.read_text(encoding="utf-8")
    for seed, pos in enumerate((63, 37, 50)):
        assert _agrees(windowed, every, pos, seed)
        assert not _agrees(short, every, pos, seed)
