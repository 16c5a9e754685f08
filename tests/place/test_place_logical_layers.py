"""Issue 42: a zoo model's logical layer is logical. Llama-3's and Phi-3's logical
`decoder_layer` call the logical `attention` (no reshard, no loop), so place's
kernel reader takes them: a sequence of kernels whose masked decode attention is
found by structure and placed as flash decoding. (They called the zoo's
already-placed `attention_placed` before, and place refused them.) Read at a
reduced config: the reader sees the same program at small extents."""
from __future__ import annotations

import pytest

from tilefoundry import api
from tilefoundry.models import reduced
from tilefoundry.placer.kernel import read_kernel

SMALL = {"llama3-8b": ("Llama3_8B", dict(D_MODEL=64, N_Q=4, N_KV=2, HEAD_DIM=16, FFN=128, VOCAB=256, MAX_POS=64)),
         "phi3-mini": ("Phi3Mini", dict(D_MODEL=64, N_HEADS=4, FFN=128, VOCAB=256, MAX_POS=64))}


@pytest.mark.parametrize("model", sorted(SMALL))
def test_the_logical_decoder_layer_is_read_as_a_sequence_with_flash_decoding(model, tmp_path):
    root, config = SMALL[model]
    path = reduced(model, folder=tmp_path, **config)
    module, function = api.load(f"{path}:{root}.layer0.decoder_layer")
    kernel = read_kernel(module, function, {"ctx_len": 32})
    assert kernel.kind == "sequence"
    kinds = [piece.kind for piece in kernel.pieces]
    # the layer's attention core is one flash-decoding piece; its projections and MLP GEMVs
    assert kinds.count("attention") == 1 and kinds.count("gemv") >= 3
    assert kernel.pieces[kinds.index("attention")].core.ctx == 32
