"""DeepSeek-V3 decode (one token, batch 1) at its published depth: 61 layers, the first
3 (DENSE_LAYERS) with a dense SwiGLU MLP, the other 58 with the DeepSeekMoE block.

Every layer's attention is Multi-head Latent Attention: the query goes through a
low-rank compression (`w_dq`, RMSNorm, `w_uq_*`), the key/value through a shared
latent `c_kv` of rank KV_RANK (RMSNorm) plus a decoupled RoPE key `k_pe` shared by all
heads. Decode runs in the weight-absorbed form: the cache holds only the latent and
the RoPE key (DimVar length `ctx_len`), rows past the valid length (the position)
masked; `w_uk` is folded into the query and `w_uv` applied after the attention.

The MoE block: a router of sigmoid scores over EXPERTS routed experts, group-limited
(the experts in N_GROUP groups, each group scored by its two best scores plus the
e_score_correction_bias, the TOPK_GROUP best groups kept), the TOP_K best biased scores
among those chosen and weighted by their unbiased scores normalised to sum 1 times
ROUTED_SCALE; the chosen SwiGLU experts (EXPERT_FFN features) plus one shared expert
(SHARED_FFN) always run.

RoPE layout: the published checkpoint's RoPE columns (q_b_proj's last ROPE_DIM rows of
each head, kv_a_proj_with_mqa's last ROPE_DIM rows) are interleaved pairs (2i, 2i + 1),
the pair rotated by one frequency; our `tf.rope` rotates halves (i, i + ROPE_DIM / 2).
The checkpoint mapping below de-interleaves those rows (``deinterleave``), which turns
one rotation into the other exactly (transformers' DeepseekV3Attention computes the same
halves layout, rope_interleave), so the RoPE key cache holds the halves layout.

The layers are built by deepseek_v3_layers.py from this file's constants. `DeepSeekV3`
is the logical root; `DeepSeekV3_H100`, `_H200`, `_B200` the placed ones (MLA as four
kernels: down-projections, absorbed query, split-K latent attention over head groups x
sequence splits, value and output; the routed experts one after another over all
CTAs). Bind: --dim ctx_len=4096, and --dim kv_len=N to price a step at a position
below N (the latent attention visits only the windows of that attended length;
unbound: MAX_POS, the whole cache; docs/models.md).
"""

import math

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.ir.types.dim import dim_min
from tilefoundry.models.deepseek_v3_layers import layer_modules
from tilefoundry.models.zoo_layers import attach_layers, lazy_roots, published_root
from tilefoundry.target import CudaTarget

# config: deepseek-ai/DeepSeek-V3's config.json (huggingface.co/deepseek-ai/DeepSeek-V3):
# hidden_size 7168, num_hidden_layers 61, first_k_dense_replace 3 (dense intermediate_size
# 18432), n_routed_experts 256, num_experts_per_tok 8, n_group 8, topk_group 4, scoring_func
# sigmoid with e_score_correction_bias (topk_method noaux_tc), norm_topk_prob true,
# routed_scaling_factor 2.5, n_shared_experts 1, moe_intermediate_size 2048; MLA: 128
# heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64,
# v_head_dim 128; rope_theta 10000 with YaRN (factor 40, mscale_all_dim 1),
# max_position_embeddings 163840, rms_norm_eps 1e-6, vocab_size 129280, untied head
VOCAB = 129280
D_MODEL = 7168
N_HEADS = 128
Q_RANK = 1536
KV_RANK = 512
NOPE_DIM = 128
ROPE_DIM = 64
V_DIM = 128
FFN = 18432
LAYERS = 61
DENSE_LAYERS = 3
EXPERTS = 256
TOP_K = 8
N_GROUP = 8
TOPK_GROUP = 4
GROUP_SIZE = EXPERTS // N_GROUP
ROUTED_SCALE = 2.5
N_SHARED = 1
EXPERT_FFN = 2048
SHARED_FFN = N_SHARED * EXPERT_FFN
EPS = 1e-6
MAX_POS = 163840
ROPE_THETA = 10000.0
# softmax scale with the YaRN attention factor of V3's rope_scaling (yarn, factor 40,
# mscale_all_dim 1): mscale = 0.1·mscale_all_dim·ln(factor) + 1, applied squared (HF
# DeepseekV3Attention); a checkpoint is held to the same scaling (HF_CONFIG, HF_FIXED)
ROPE_FACTOR = 40.0
MSCALE_ALL_DIM = 1.0
YARN_MSCALE = 0.1 * MSCALE_ALL_DIM * math.log(ROPE_FACTOR) + 1.0
SCALE = YARN_MSCALE ** 2 / (NOPE_DIM + ROPE_DIM) ** 0.5
INV_D = 1.0 / D_MODEL
CTX_LEN = DimVar("ctx_len", 1, MAX_POS + 1)
CTAS = 8
LEVELS = (Topology("cta", CTAS),)
# the dtype of activations and weights (an f32 copy writes "f32": reduced(..., dtype="f32"))
DTYPE = "bf16"

# the Hugging Face checkpoint (DeepseekV3ForCausalLM, in bf16: the published files are
# FP8 with block scales, read after DeepSeek's fp8-to-bf16 cast; a config that states a
# quantization_config is refused). config.json field -> the constant it must equal
HF_MODEL_TYPE = "deepseek_v3"
HF_CONFIG = {"vocab_size": "VOCAB", "hidden_size": "D_MODEL", "num_attention_heads": "N_HEADS",
             "q_lora_rank": "Q_RANK", "kv_lora_rank": "KV_RANK", "qk_nope_head_dim": "NOPE_DIM",
             "qk_rope_head_dim": "ROPE_DIM", "v_head_dim": "V_DIM", "intermediate_size": "FFN",
             "num_hidden_layers": "LAYERS", "first_k_dense_replace": "DENSE_LAYERS",
             "n_routed_experts": "EXPERTS", "num_experts_per_tok": "TOP_K", "n_group": "N_GROUP",
             "topk_group": "TOPK_GROUP", "routed_scaling_factor": "ROUTED_SCALE",
             "n_shared_experts": "N_SHARED", "moe_intermediate_size": "EXPERT_FFN", "rms_norm_eps": "EPS",
             "max_position_embeddings": "MAX_POS", "rope_theta": "ROPE_THETA",
             "rope_scaling.factor": "ROPE_FACTOR", "rope_scaling.mscale_all_dim": "MSCALE_ALL_DIM"}
HF_FIXED = {"norm_topk_prob": True, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
            "quantization_config": None, "rope_scaling.type": "yarn"}
# weight -> (checkpoint name, reading): T transposes a Linear's (out, in); rows(a, b) keeps
# rows a..b of a fused projection, heads_rows(h, a, b) rows a..b of each of h head blocks;
# deinterleave(n) / heads_deinterleave(h, n) reorder RoPE rows from pairs to halves (the
# docstring); reshape / transpose lay kv_b_proj's per-head blocks out as w_uk and w_uv
HF_LAYER_WEIGHTS = {
    "attn_norm": ("model.layers.{i}.input_layernorm.weight", ""),
    "mlp_norm": ("model.layers.{i}.post_attention_layernorm.weight", ""),
    "w_dq": ("model.layers.{i}.self_attn.q_a_proj.weight", "T"),
    "q_a_norm": ("model.layers.{i}.self_attn.q_a_layernorm.weight", ""),
    "w_uq_nope": ("model.layers.{i}.self_attn.q_b_proj.weight", "heads_rows(N_HEADS, 0, NOPE_DIM); T"),
    "w_uq_rope": ("model.layers.{i}.self_attn.q_b_proj.weight",
                  "heads_rows(N_HEADS, NOPE_DIM, NOPE_DIM + ROPE_DIM); heads_deinterleave(N_HEADS, ROPE_DIM); T"),
    "w_dkv": ("model.layers.{i}.self_attn.kv_a_proj_with_mqa.weight", "rows(0, KV_RANK); T"),
    "kv_a_norm": ("model.layers.{i}.self_attn.kv_a_layernorm.weight", ""),
    "w_kr": ("model.layers.{i}.self_attn.kv_a_proj_with_mqa.weight",
             "rows(KV_RANK, KV_RANK + ROPE_DIM); deinterleave(ROPE_DIM); T"),
    "w_uk": ("model.layers.{i}.self_attn.kv_b_proj.weight",
             "heads_rows(N_HEADS, 0, NOPE_DIM); reshape(N_HEADS, NOPE_DIM, KV_RANK)"),
    "w_uv": ("model.layers.{i}.self_attn.kv_b_proj.weight",
             "heads_rows(N_HEADS, NOPE_DIM, NOPE_DIM + V_DIM); reshape(N_HEADS, V_DIM, KV_RANK); transpose(0, 2, 1)"),
    "w_o": ("model.layers.{i}.self_attn.o_proj.weight", "T"),
    "w_gate": ("model.layers.{i}.mlp.gate_proj.weight", "T"),
    "w_up": ("model.layers.{i}.mlp.up_proj.weight", "T"),
    "w_down": ("model.layers.{i}.mlp.down_proj.weight", "T"),
    "w_router": ("model.layers.{i}.mlp.gate.weight", "T"),
    "bias": ("model.layers.{i}.mlp.gate.e_score_correction_bias", ""),
    "w_gate_e": ("model.layers.{i}.mlp.experts.{e}.gate_proj.weight", "T; stack"),
    "w_up_e": ("model.layers.{i}.mlp.experts.{e}.up_proj.weight", "T; stack"),
    "w_down_e": ("model.layers.{i}.mlp.experts.{e}.down_proj.weight", "T; stack"),
    "w_gate_s": ("model.layers.{i}.mlp.shared_experts.gate_proj.weight", "T"),
    "w_up_s": ("model.layers.{i}.mlp.shared_experts.up_proj.weight", "T"),
    "w_down_s": ("model.layers.{i}.mlp.shared_experts.down_proj.weight", "T"),
}
HF_ROOT_WEIGHTS = {
    "table": ("model.embed_tokens.weight", ""),
    "final_norm": ("model.norm.weight", ""),
    "w_vocab": ("lm_head.weight", "T"),
}
# a reduced config (tilefoundry.models.reduced) keeps each placement constant the
# largest power of two, at most its published value, dividing every figure listed
REDUCE_RULES = {
    "CTAS": ("D_MODEL",),
    "PLACED_CTAS": ("D_MODEL", "VOCAB", "FFN", "Q_RANK", "KV_RANK", "EXPERTS", "EXPERT_FFN", "SHARED_FFN",
                    "N_HEADS", "N_HEADS * NOPE_DIM", "N_HEADS * ROPE_DIM", "N_HEADS * V_DIM"),
    "HEAD_GROUPS": ("N_HEADS", "PLACED_CTAS // 2"),  # at least two sequence splits
    "ROPE_CTAS": ("ROPE_DIM", "PLACED_CTAS"),
    "KV_BLOCK": ("max(1, MAX_POS // (4 * (PLACED_CTAS // HEAD_GROUPS)))",),
    "DOWN_Q_TK": ("D_MODEL",), "UP_Q_TK": ("Q_RANK",), "UK_TK": ("NOPE_DIM",), "UV_TK": ("KV_RANK",),
    "O_TK": ("N_HEADS * V_DIM",), "UP_TK": ("D_MODEL",), "DOWN_TK": ("FFN", "EXPERT_FFN", "SHARED_FFN"),
    "EXPERT_TK": ("D_MODEL",), "VOCAB_TK": ("D_MODEL",),
}
REDUCE_REQUIRES = ("ROPE_DIM % 2 == 0", "EXPERTS % N_GROUP == 0",
                   "GROUP_SIZE >= 2", "TOPK_GROUP <= N_GROUP", "TOP_K <= TOPK_GROUP * GROUP_SIZE",
                   "DENSE_LAYERS <= LAYERS")

# placement on the whole device: 128 CTAs divide every feature dimension (the
# q up-projection then gives one head per CTA); the absorbed attention runs on a
# HEAD_GROUPS x SPLITS grid (heads x sequence splits), every latent row read by
# the HEAD_GROUPS CTAs of its split; the RoPE key GEMV (64 columns) on 64 CTAs;
# the routed experts' and the shared expert's GEMVs walk D_MODEL in EXPERT_TK rows
# and their down-projections DOWN_TK rows at a time
PLACED_CTAS = 128
HEAD_GROUPS = 8
SPLITS = PLACED_CTAS // HEAD_GROUPS
KV_BLOCK = 16
HALF = ROPE_DIM // 2
NEG_BIG = -1.0e30
# a cache row past the valid length (the position) scores MASKED: below NEG_BIG, the
# online softmax's starting maximum, so a block with no valid row adds exp(-1e30) = 0
# (and a group the router drops: below every sigmoid score plus its bias)
MASKED = 2.0 * NEG_BIG
DOWN_Q_TK = 256
ROPE_CTAS = 64
UP_Q_TK = 128
UK_TK = 32
UV_TK = 128
O_TK = 256
UP_TK = 32
DOWN_TK = 256
EXPERT_TK = 512
VOCAB_TK = 16
PLACED_CTX = DimVar("ctx_len", KV_BLOCK * SPLITS, MAX_POS + 1)
# the attended length: the step at a position below kv_len reads the cache rows
# [0, kv_len) rounded up to the split-K window, no further (min'd with the cache);
# unbound it is MAX_POS, the whole cache (docs/models.md "The attended length")
KV_LEN = DimVar("kv_len", 1, MAX_POS + 1, default=MAX_POS)
PLACED_VISITED = ceildiv(dim_min(KV_LEN, PLACED_CTX), KV_BLOCK * SPLITS) * (KV_BLOCK * SPLITS)
PLACED_LEVELS = (Topology("cta", PLACED_CTAS),)

# the layers (deepseek_v3_layers.py), built at this file's constants
MlaLayer, MlaMoeLayer, MlaLayerPlaced, MlaMoeLayerPlaced = layer_modules(globals())


def decode_model(name, target, placed):
    """A root: the DENSE_LAYERS dense layers then the MoE layers, logical (`placed=False`)
    or placed, `embed`, `lm_head` and `decode_step` over all LAYERS of them (the
    published depth; 671B parameters, so no selection runs the whole step on one GPU:
    docs/models.md states how many it needs)."""
    dense, moe, levels, ctx = ((MlaLayerPlaced, MlaMoeLayerPlaced, PLACED_LEVELS, PLACED_CTX) if placed
                               else (MlaLayer, MlaMoeLayer, LEVELS, CTX_LEN))

    @module(entry="decode_step", target=target, topologies=levels)
    class DeepSeekV3Decode:
        attach_layers(locals(), lambda i: dense if i < DENSE_LAYERS else moe, LAYERS)

        if placed:
            @func
            def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
                # the token's row, read at a run-time start and split over the CTAs
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    t = tf.reshape(token, ())
                    row = tf.reshard(table[t : t + 1, :], (1, D_MODEL @ g.n), "smem")
                    return tf.reshard(row, (1, D_MODEL @ g.n), "gmem")

            @func
            def lm_head(
                h: Tensor[(1, D_MODEL), "bf16"],
                final_norm: ConstTensor[(D_MODEL,), "bf16"],
                w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
            ) -> Tensor[(1, VOCAB), "f32"]:
                # RMSNorm prologue, then a GEMV split over the vocabulary
                with Mesh(("cta",), (PLACED_CTAS,), ("n",)) as g:
                    hn = tf.rms_norm(tf.reshard(h, (1, D_MODEL), "smem"), tf.reshard(final_norm, (D_MODEL,), "smem"), EPS)
                    h32 = tf.cast(hn, "f32")
                    acc = tf.zeros(Tensor[(1, VOCAB @ g.n), "f32", "rmem"])
                    for kk in tile(D_MODEL, VOCAB_TK):
                        w_t = tf.cast(tf.reshard(w_vocab[kk, :], (VOCAB_TK, VOCAB @ g.n), "smem"), "f32")
                        acc = acc + tf.reshard(tf.matmul(h32[:, kk], w_t), (1, VOCAB @ g.n), "rmem")
                    return tf.reshard(tf.cast(tf.cast(acc, "bf16"), "f32"), (1, VOCAB @ g.n), "gmem")
        else:
            @func
            def embed(table: ConstTensor[(VOCAB, D_MODEL), "bf16"], token: Tensor[(1,), "i64"]) -> Tensor[(1, D_MODEL), "bf16"]:
                with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                    return tf.index_select(table, token, 0)

            @func
            def lm_head(
                h: Tensor[(1, D_MODEL), "bf16"],
                final_norm: ConstTensor[(D_MODEL,), "bf16"],
                w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
            ) -> Tensor[(1, VOCAB), "f32"]:
                with Mesh(("cta",), (CTAS,), ("c",)) as _all:
                    return tf.cast(tf.rms_norm(h, final_norm, EPS) @ w_vocab, "f32")

        @func
        def decode_step(
            token: Tensor[(1,), "i64"],
            cos_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
            sin_t: Tensor[(MAX_POS, ROPE_DIM), "f32"],
            pos: Tensor[(1,), "i32"],
            n_new: Tensor[(1,), "i32"],
            ckv_caches: Tensor[(LAYERS, 1, ctx, 1, KV_RANK), "bf16"],
            kpe_caches: Tensor[(LAYERS, 1, ctx, 1, ROPE_DIM), "bf16"],
            table: ConstTensor[(VOCAB, D_MODEL), "bf16"],
            final_norm: ConstTensor[(D_MODEL,), "bf16"],
            w_vocab: ConstTensor[(D_MODEL, VOCAB), "bf16"],
        ) -> Tensor[(1, VOCAB), "f32"]:
            h = embed(table, token)
            h = layer0(h, cos_t, sin_t, pos, n_new, ckv_caches[0, :, :, :, :], kpe_caches[0, :, :, :, :])[0]
            h = layer1(h, cos_t, sin_t, pos, n_new, ckv_caches[1, :, :, :, :], kpe_caches[1, :, :, :, :])[0]
            h = layer2(h, cos_t, sin_t, pos, n_new, ckv_caches[2, :, :, :, :], kpe_caches[2, :, :, :, :])[0]
            h = layer3(h, cos_t, sin_t, pos, n_new, ckv_caches[3, :, :, :, :], kpe_caches[3, :, :, :, :])[0]
            h = layer4(h, cos_t, sin_t, pos, n_new, ckv_caches[4, :, :, :, :], kpe_caches[4, :, :, :, :])[0]
            h = layer5(h, cos_t, sin_t, pos, n_new, ckv_caches[5, :, :, :, :], kpe_caches[5, :, :, :, :])[0]
            h = layer6(h, cos_t, sin_t, pos, n_new, ckv_caches[6, :, :, :, :], kpe_caches[6, :, :, :, :])[0]
            h = layer7(h, cos_t, sin_t, pos, n_new, ckv_caches[7, :, :, :, :], kpe_caches[7, :, :, :, :])[0]
            h = layer8(h, cos_t, sin_t, pos, n_new, ckv_caches[8, :, :, :, :], kpe_caches[8, :, :, :, :])[0]
            h = layer9(h, cos_t, sin_t, pos, n_new, ckv_caches[9, :, :, :, :], kpe_caches[9, :, :, :, :])[0]
            h = layer10(h, cos_t, sin_t, pos, n_new, ckv_caches[10, :, :, :, :], kpe_caches[10, :, :, :, :])[0]
            h = layer11(h, cos_t, sin_t, pos, n_new, ckv_caches[11, :, :, :, :], kpe_caches[11, :, :, :, :])[0]
            h = layer12(h, cos_t, sin_t, pos, n_new, ckv_caches[12, :, :, :, :], kpe_caches[12, :, :, :, :])[0]
            h = layer13(h, cos_t, sin_t, pos, n_new, ckv_caches[13, :, :, :, :], kpe_caches[13, :, :, :, :])[0]
            h = layer14(h, cos_t, sin_t, pos, n_new, ckv_caches[14, :, :, :, :], kpe_caches[14, :, :, :, :])[0]
            h = layer15(h, cos_t, sin_t, pos, n_new, ckv_caches[15, :, :, :, :], kpe_caches[15, :, :, :, :])[0]
            h = layer16(h, cos_t, sin_t, pos, n_new, ckv_caches[16, :, :, :, :], kpe_caches[16, :, :, :, :])[0]
            h = layer17(h, cos_t, sin_t, pos, n_new, ckv_caches[17, :, :, :, :], kpe_caches[17, :, :, :, :])[0]
            h = layer18(h, cos_t, sin_t, pos, n_new, ckv_caches[18, :, :, :, :], kpe_caches[18, :, :, :, :])[0]
            h = layer19(h, cos_t, sin_t, pos, n_new, ckv_caches[19, :, :, :, :], kpe_caches[19, :, :, :, :])[0]
            h = layer20(h, cos_t, sin_t, pos, n_new, ckv_caches[20, :, :, :, :], kpe_caches[20, :, :, :, :])[0]
            h = layer21(h, cos_t, sin_t, pos, n_new, ckv_caches[21, :, :, :, :], kpe_caches[21, :, :, :, :])[0]
            h = layer22(h, cos_t, sin_t, pos, n_new, ckv_caches[22, :, :, :, :], kpe_caches[22, :, :, :, :])[0]
            h = layer23(h, cos_t, sin_t, pos, n_new, ckv_caches[23, :, :, :, :], kpe_caches[23, :, :, :, :])[0]
            h = layer24(h, cos_t, sin_t, pos, n_new, ckv_caches[24, :, :, :, :], kpe_caches[24, :, :, :, :])[0]
            h = layer25(h, cos_t, sin_t, pos, n_new, ckv_caches[25, :, :, :, :], kpe_caches[25, :, :, :, :])[0]
            h = layer26(h, cos_t, sin_t, pos, n_new, ckv_caches[26, :, :, :, :], kpe_caches[26, :, :, :, :])[0]
            h = layer27(h, cos_t, sin_t, pos, n_new, ckv_caches[27, :, :, :, :], kpe_caches[27, :, :, :, :])[0]
            h = layer28(h, cos_t, sin_t, pos, n_new, ckv_caches[28, :, :, :, :], kpe_caches[28, :, :, :, :])[0]
            h = layer29(h, cos_t, sin_t, pos, n_new, ckv_caches[29, :, :, :, :], kpe_caches[29, :, :, :, :])[0]
            h = layer30(h, cos_t, sin_t, pos, n_new, ckv_caches[30, :, :, :, :], kpe_caches[30, :, :, :, :])[0]
            h = layer31(h, cos_t, sin_t, pos, n_new, ckv_caches[31, :, :, :, :], kpe_caches[31, :, :, :, :])[0]
            h = layer32(h, cos_t, sin_t, pos, n_new, ckv_caches[32, :, :, :, :], kpe_caches[32, :, :, :, :])[0]
            h = layer33(h, cos_t, sin_t, pos, n_new, ckv_caches[33, :, :, :, :], kpe_caches[33, :, :, :, :])[0]
            h = layer34(h, cos_t, sin_t, pos, n_new, ckv_caches[34, :, :, :, :], kpe_caches[34, :, :, :, :])[0]
            h = layer35(h, cos_t, sin_t, pos, n_new, ckv_caches[35, :, :, :, :], kpe_caches[35, :, :, :, :])[0]
            h = layer36(h, cos_t, sin_t, pos, n_new, ckv_caches[36, :, :, :, :], kpe_caches[36, :, :, :, :])[0]
            h = layer37(h, cos_t, sin_t, pos, n_new, ckv_caches[37, :, :, :, :], kpe_caches[37, :, :, :, :])[0]
            h = layer38(h, cos_t, sin_t, pos, n_new, ckv_caches[38, :, :, :, :], kpe_caches[38, :, :, :, :])[0]
            h = layer39(h, cos_t, sin_t, pos, n_new, ckv_caches[39, :, :, :, :], kpe_caches[39, :, :, :, :])[0]
            h = layer40(h, cos_t, sin_t, pos, n_new, ckv_caches[40, :, :, :, :], kpe_caches[40, :, :, :, :])[0]
            h = layer41(h, cos_t, sin_t, pos, n_new, ckv_caches[41, :, :, :, :], kpe_caches[41, :, :, :, :])[0]
            h = layer42(h, cos_t, sin_t, pos, n_new, ckv_caches[42, :, :, :, :], kpe_caches[42, :, :, :, :])[0]
            h = layer43(h, cos_t, sin_t, pos, n_new, ckv_caches[43, :, :, :, :], kpe_caches[43, :, :, :, :])[0]
            h = layer44(h, cos_t, sin_t, pos, n_new, ckv_caches[44, :, :, :, :], kpe_caches[44, :, :, :, :])[0]
            h = layer45(h, cos_t, sin_t, pos, n_new, ckv_caches[45, :, :, :, :], kpe_caches[45, :, :, :, :])[0]
            h = layer46(h, cos_t, sin_t, pos, n_new, ckv_caches[46, :, :, :, :], kpe_caches[46, :, :, :, :])[0]
            h = layer47(h, cos_t, sin_t, pos, n_new, ckv_caches[47, :, :, :, :], kpe_caches[47, :, :, :, :])[0]
            h = layer48(h, cos_t, sin_t, pos, n_new, ckv_caches[48, :, :, :, :], kpe_caches[48, :, :, :, :])[0]
            h = layer49(h, cos_t, sin_t, pos, n_new, ckv_caches[49, :, :, :, :], kpe_caches[49, :, :, :, :])[0]
            h = layer50(h, cos_t, sin_t, pos, n_new, ckv_caches[50, :, :, :, :], kpe_caches[50, :, :, :, :])[0]
            h = layer51(h, cos_t, sin_t, pos, n_new, ckv_caches[51, :, :, :, :], kpe_caches[51, :, :, :, :])[0]
            h = layer52(h, cos_t, sin_t, pos, n_new, ckv_caches[52, :, :, :, :], kpe_caches[52, :, :, :, :])[0]
            h = layer53(h, cos_t, sin_t, pos, n_new, ckv_caches[53, :, :, :, :], kpe_caches[53, :, :, :, :])[0]
            h = layer54(h, cos_t, sin_t, pos, n_new, ckv_caches[54, :, :, :, :], kpe_caches[54, :, :, :, :])[0]
            h = layer55(h, cos_t, sin_t, pos, n_new, ckv_caches[55, :, :, :, :], kpe_caches[55, :, :, :, :])[0]
            h = layer56(h, cos_t, sin_t, pos, n_new, ckv_caches[56, :, :, :, :], kpe_caches[56, :, :, :, :])[0]
            h = layer57(h, cos_t, sin_t, pos, n_new, ckv_caches[57, :, :, :, :], kpe_caches[57, :, :, :, :])[0]
            h = layer58(h, cos_t, sin_t, pos, n_new, ckv_caches[58, :, :, :, :], kpe_caches[58, :, :, :, :])[0]
            h = layer59(h, cos_t, sin_t, pos, n_new, ckv_caches[59, :, :, :, :], kpe_caches[59, :, :, :, :])[0]
            h = layer60(h, cos_t, sin_t, pos, n_new, ckv_caches[60, :, :, :, :], kpe_caches[60, :, :, :, :])[0]
            return lm_head(h, final_norm, w_vocab)

    return published_root(DeepSeekV3Decode, name)


# each root is built when first asked for (PEP 562): a selection uses one of the four
__getattr__, __dir__ = lazy_roots(globals(), {
    "DeepSeekV3": lambda: decode_model("DeepSeekV3", CudaTarget("nvidia.h200_sxm"), placed=False),
    "DeepSeekV3_H100": lambda: decode_model("DeepSeekV3_H100", CudaTarget("nvidia.h100_sxm"), placed=True),
    "DeepSeekV3_H200": lambda: decode_model("DeepSeekV3_H200", CudaTarget("nvidia.h200_sxm"), placed=True),
    "DeepSeekV3_B200": lambda: decode_model("DeepSeekV3_B200", CudaTarget("nvidia.b200_sxm"), placed=True),
})
