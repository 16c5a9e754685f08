"""Reduced-config copies of the zoo's model files, small enough to execute.

The placed decode steps are checked against their logical specifications by
running both (``tilefoundry.execution.check``); at the published sizes that is
gigabytes of weights per layer, so each check runs on a copy of the model file
whose config constants are replaced by small ones (``REDUCED``) and whose
whole-model ``decode_step`` keeps its first two layers (``LAYERS = 2``, the calls
to ``layer2`` ... dropped). Nothing else of the file changes: the kernels, their
placement and their loops are the shipped ones. Each reduced config keeps every
divisibility the placement needs (a split of N over a mesh axis of E needs E | N;
a ``tile(E, step)`` needs step | E): the CTA counts shrink with the dimensions.
"""
from __future__ import annotations

import re
from pathlib import Path

from tilefoundry.models import models_dir

#: file -> constant -> small value
REDUCED = {
    "llama3_8b.py": dict(VOCAB=256, D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, FFN=128, MAX_POS=64,
                         BLOCK=8, CTAS=8, KV_BLOCK=4, QKV_TK=16, O_TK=16, UP_TK=16, DOWN_TK=32,
                         VOCAB_TK=16),
    "phi3_mini.py": dict(VOCAB=192, D_MODEL=64, N_HEADS=4, FFN=128, MAX_POS=64, BLOCK=8, CTAS=8,
                         KV_BLOCK=4, QKV_TK=16, O_TK=16, UP_TK=16, DOWN_TK=32, VOCAB_CTAS=6,
                         VOCAB_TK=16),
    "gemma2_9b.py": dict(VOCAB=256, D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, FFN=128, WINDOW=16,
                         MAX_POS=64, QUERY_PRE_ATTN_SCALAR=16, PLACED_CTAS=8, KV_BLOCK=4, QKV_TK=16,
                         O_TK=16, UP_TK=16, DOWN_TK=32, VOCAB_TK=16),
    "qwen3_moe.py": dict(VOCAB=256, D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, EXPERTS=8, TOP_K=2,
                         EXPERT_FFN=16, MAX_POS=64, PLACED_CTAS=8, KV_BLOCK=4,
                         QKV_TK=16, O_TK=16, EXPERT_TK=16, VOCAB_TK=16),
    "qwen3_moe_shared.py": dict(VOCAB=256, D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, EXPERTS=8, TOP_K=2,
                                EXPERT_FFN=16, SHARED_FFN=32, MAX_POS=64, PLACED_CTAS=8, KV_BLOCK=4,
                                QKV_TK=16, O_TK=16, EXPERT_TK=16, SHARED_TK=16, VOCAB_TK=16),
    "mamba2_2_7b.py": dict(VOCAB=112, D_MODEL=64, D_STATE=16, HEAD_P=8, MAX_PROMPT=64,
                           PLACED_CTAS=16, HEAD_GROUPS=4, IN_TK=16, OUT_TK=32, VOCAB_CTAS=14,
                           VOCAB_TK=16),
    "deepseek_v3_mla.py": dict(VOCAB=256, D_MODEL=64, N_HEADS=8, Q_RANK=32, KV_RANK=16, NOPE_DIM=16,
                               ROPE_DIM=8, V_DIM=16, FFN=128, MAX_POS=64, PLACED_CTAS=8,
                               HEAD_GROUPS=2, KV_BLOCK=4, DOWN_Q_TK=16, ROPE_CTAS=4, UP_Q_TK=16,
                               UK_TK=8, UV_TK=8, O_TK=32, UP_TK=16, DOWN_TK=16, VOCAB_TK=16,
                               # one dense layer, so the two-layer decode step holds an MoE one:
                               # 16 experts in 4 groups of 4, 2 groups kept, top 2
                               DENSE_LAYERS=1, EXPERTS=16, TOP_K=2, N_GROUP=4, TOPK_GROUP=2,
                               EXPERT_FFN=16, EXPERT_TK=16),
}
#: the ctx_len a reduced copy is checked at: two windows of KV_BLOCK * SPLITS rows
SMALL_CTX = 32
REDUCED_LAYERS = 2


def reduced_text(file: str, overrides: dict | None = None) -> str:
    """The model file with its config replaced (each constant must be assigned
    exactly once at the start of a line) and its decode step cut to two layers."""
    text = (models_dir() / file).read_text(encoding="utf-8")
    values = {**REDUCED[file], "LAYERS": REDUCED_LAYERS, **(overrides or {})}
    for name, value in values.items():
        text, count = re.subn(rf"^{name} = .*$", f"{name} = {value}", text, count=1, flags=re.M)
        assert count == 1, f"{file}: no line assigns {name}"
    text, dropped = re.subn(r"^ +h = layer(?:[2-9]|[1-9][0-9])\(.*\n", "", text, flags=re.M)
    # (a file whose decode step holds two layers already drops none)
    return text


def reduced_copy(file: str, folder: Path, overrides: dict | None = None, name: str | None = None) -> Path:
    """Write the reduced copy into ``folder`` (a module name of its own, so that
    it never shadows the shipped file) and return its path."""
    path = folder / (name or f"small_{file}")
    path.write_text(reduced_text(file, overrides), encoding="utf-8")
    return path
