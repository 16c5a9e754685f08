"""Issue 39, the attended length: a placed decode kernel visits only the KV blocks
of the valid length, so the static families price what a real kernel reads.

``kv_len`` (a DimVar of every model file with a KV cache, default MAX_POS) is the
attended length: a step at a position below it reads the cache rows
[0, min(kv_len, cache)) rounded up to its split-K window of W = KV_BLOCK·SPLITS
rows; Gemma-2's sliding layers read at most their ring of WINDOW rows and Phi-3
only the windows its sliding window of WINDOW positions can touch,
ceil((WINDOW − 1)/W) + 1 of them. Unbound, a step attends the whole cache (the
last position), which is what every figure stated before it was.

Expected bytes are derived from each file's constants: a window's K and V reads
are W rows of the cached tensors (K and V: 2·N_KV·HEAD_DIM elements a row; MLA:
its latent and RoPE key, KV_RANK + ROPE_DIM), bf16; beside them a window adds its
rows' indices for the mask (one i32 a row, Phi-3 twice: both edges of its window)
and to the table the position is read from (one i32 a row; Phi-3 reads it by a
slice, so its reads stay bounded by its window), the position and each CTA's flags, so each visited window adds the KV bytes plus
less than 16 bytes a row (a KV row is at least 1,152 bytes), and nothing else moves.
"""
from __future__ import annotations

import math

import pytest

from tests.models.zoo_cache import namespace
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.memory import TrafficMetadata
from tilefoundry.dsl.loader import resolve_selector

CTX = 4096  # the cache capacity every case is analysed at
BF16 = 2


def _row_elements(c) -> int:
    """Elements of one cache row the attention reads (all cached tensors)."""
    if "KV_RANK" in c:  # MLA: the normalised latent and the rotated RoPE key
        return c["KV_RANK"] + c["ROPE_DIM"]
    heads = c.get("N_KV", c.get("N_HEADS"))
    return 2 * heads * c["HEAD_DIM"]


#: (file, selection, binds ctx_len, the most windows a step reads whatever its position)
CASES = [
    ("llama3_8b.py", "Llama3_8B_H200.layer0", True, None),
    ("qwen3_moe.py", "Qwen3Moe_H200.layer0", True, None),
    ("qwen3_moe_shared.py", "Qwen3MoeShared_H200.layer0", True, None),
    ("deepseek_v3_mla.py", "DeepSeekV3_H200.layer0", True, None),
    ("gemma2_9b.py", "Gemma2_9B_H200.layer1", True, None),  # global
    ("gemma2_9b.py", "Gemma2_9B_H200.layer0", False, "ring"),  # sliding: a ring of WINDOW slots
    ("phi3_mini.py", "Phi3Mini_H200.layer0", True, "window"),  # sliding window over the cache
]


def _gmem_read(file: str, selector: str, dims: dict) -> int:
    module = resolve_selector(namespace(file), selector)
    result = analyze(module, module.entry_function(), analysis="memory", dims=dims or None)
    return dict(result.function.get_metadata(TrafficMetadata).whole)["gmem"].read


def _windows(c, kv_len: int, sliding) -> int:
    """Windows of W rows a step attending `kv_len` rows visits, by the file's constants."""
    w = c["KV_BLOCK"] * c["SPLITS"]
    if sliding == "ring":
        return math.ceil(min(kv_len, c["WINDOW"]) / w)
    windows = math.ceil(min(kv_len, CTX) / w)
    if sliding == "window":
        return min(windows, math.ceil((c["WINDOW"] - 1) / w) + 1)
    return windows


@pytest.mark.parametrize("file,selector,binds_ctx,sliding", CASES, ids=[c[1] for c in CASES])
def test_issue39_a_step_reads_the_kv_windows_of_its_attended_length(file, selector, binds_ctx, sliding):
    """At kv_len = 1 (position 0), 1 + W and 1 + 2W the kernel reads 1, 2, 3 windows
    (fewer where a window bounds it); the gmem bytes differ by the windows' KV bytes
    (and their masks' row indices, under 16 bytes a row), and unbound it reads what
    kv_len = ctx_len reads: the whole cache, the last position."""
    c = namespace(file)
    w = c["KV_BLOCK"] * c["SPLITS"]
    kv_bytes = w * _row_elements(c) * BF16
    base = {"ctx_len": CTX} if binds_ctx else {}
    points = (1, 1 + w, 1 + 2 * w, CTX)
    reads = [_gmem_read(file, selector, {**base, "kv_len": kv}) for kv in points]
    windows = [_windows(c, kv, sliding) for kv in points]
    assert windows[0] == 1 and windows[-1] > windows[0]
    per_window = (reads[-1] - reads[0]) / (windows[-1] - windows[0])
    assert kv_bytes <= per_window < kv_bytes + 16 * w
    for read, count in zip(reads, windows):  # linear in the windows visited, nothing else
        assert read - reads[0] == (count - windows[0]) * per_window
    assert _gmem_read(file, selector, base) == reads[-1]  # unbound: the last position


def test_issue39_the_kv_reads_scale_with_the_visited_windows():
    """Llama-3-8B's placed layer at position 0 (kv_len = 1) against the last position
    of a 4096-row cache: the KV bytes read are in the ratio of the windows visited
    (1 of 4096 / W), and the position 0 step reads exactly (4096/W − 1) windows of KV
    bytes and masks fewer."""
    file, selector = "llama3_8b.py", "Llama3_8B_H200.layer0"
    c = namespace(file)
    w = c["KV_BLOCK"] * c["SPLITS"]
    row = _row_elements(c) * BF16
    first = _gmem_read(file, selector, {"ctx_len": CTX, "kv_len": 1})
    last = _gmem_read(file, selector, {"ctx_len": CTX})
    saved_windows = CTX // w - 1
    # a window's row indices twice (the mask's and the whole table the position is read
    # from: an index_select is priced at its table), the position, each CTA's valid flags
    mask = 2 * w * 4 + 4 + c["CTAS"]
    assert last - first == saved_windows * (w * row + mask)


@pytest.mark.parametrize("file,selector,binds_ctx,sliding",
                         [case for case in CASES if case[3] is not None], ids=["gemma2-sliding", "phi3"])
def test_issue39_a_sliding_layer_reads_at_most_its_window(file, selector, binds_ctx, sliding):
    """A sliding-window layer's reads stop growing at its window: attending the whole
    cache, or twice the window, reads what attending the window's windows reads."""
    c = namespace(file)
    w = c["KV_BLOCK"] * c["SPLITS"]
    base = {"ctx_len": CTX} if binds_ctx else {}
    bound = _windows(c, c["MAX_POS"], sliding) * w  # the rows of the most windows it visits
    assert bound < (CTX if binds_ctx else c["MAX_POS"])
    at_bound = _gmem_read(file, selector, {**base, "kv_len": bound})
    assert _gmem_read(file, selector, {**base, "kv_len": 2 * c["WINDOW"]}) == at_bound
    assert _gmem_read(file, selector, base) == at_bound
    assert _gmem_read(file, selector, {**base, "kv_len": bound - w}) < at_bound
