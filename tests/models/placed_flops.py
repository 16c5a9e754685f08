"""The compute-cost of the zoo's placed decode steps, derived by hand from each
model's config constants and the cost rules (companions §5: MatMul = 2·M·K·N
under the lhs dtype; a Cast, a Binary, Silu, Gelu, Tanh, Sigmoid, Softplus,
SoftMax, TopK = numel of the result (a cast's under its result dtype; TopK under
its operand's); Reduce = numel of the source; RMSNorm = 8·numel in f32;
rsqrt / exp are `special` service; reshard, reshape, transpose, slice, concat,
zeros, full_like and cache_update do no work). A statement in a loop that
depends on the loop counts once per trip.

Building blocks, each the formula of one kernel shape the placed files share:

- ``gemv(K, N, TK)``: the f32 GEMV loop over K in TK-row tiles: per trip the
  weight tile cast to f32 (TK·N), the f32 product (2·TK·N) and the accumulator
  add (N), so 3·K·N + (K/TK)·N in f32. Its input row's cast to f32 (K) and its
  epilogue (a cast to bf16 of N) are the kernel's own and added where it has them.
- ``rms_hand(D)``: the hand-written RMSNorm (cast, x·x, reduce, ·1/D, +eps,
  ·rsqrt in f32 = 4·D + 2; the cast back and ·w in bf16 = 2·D; one rsqrt).
- ``rope(n)``: RoPE written out on n elements: ·cos (n), the negated half
  (n/2), ·sin (n), + (n) in f32.
- ``flash(n_q, n_kv, hd, W, S, T)``: split-K flash decoding, n_q query heads
  over n_kv KV heads of hd, S splits, T trips of a W-row window (each split
  W/S rows); rows = S·n_q running statistics. Prologue: the query and new key
  cast to f32 (n_q·hd, n_kv·hd), roped, the query scaled (n_q·hd), the key
  row cast to bf16 (n_kv·hd). Per trip: the K and V blocks cast (2·W·n_kv·hd),
  scores and probs·V (2 · 2·n_q·hd·W), block max, scores − max and block sum
  (3·n_q·W), the statistics' max, difference, rescale and sum (4·rows), the
  accumulator's rescale and add (2·rows·hd); special: exp of rows and of the
  n_q·W scores. Combine: the split maxima reduced (rows), the difference
  (rows) and its exp (rows, special), the two matmuls over the split axis
  (2·n_q·S·hd and 2·n_q·S), the division (n_q·hd) and the cast to bf16 (n_q·hd).
  Gemma adds four ops per score and trip (·SCALE, ·1/cap, tanh, ·cap) and
  does not scale its query. The valid-length mask (issue 39): per trip the
  window's rows compared with the position (W predicates; Phi-3's sliding
  window three: row > pos − WINDOW, row <= pos, and, with one integer
  subtraction outside the loop) and every score selected (n_q·W selects).
  Trips (issue 39, the attended length): kv_len unbound attends the whole cache,
  L/W windows; Phi-3 walks only the windows its sliding window can touch,
  min(L/W, ceil((WINDOW − 1)/W) + 1), from a first window computed from pos (four
  integer ops), each trip's start an integer add of a precomputed offset (T
  offsets, one integer product each); Gemma-2 reads the newest row as max(the
  slot's row, pos) (one integer op).

Every function returns {dtype or "special": count}; ``whole`` = embed + the
layers + lm_head (the decode step's own statements are slices and reshapes).
"""
from __future__ import annotations

from tilefoundry.models import CTX_LEN

L = CTX_LEN  # the ctx_len every selection is analysed at


def total(*parts) -> dict:
    out: dict = {}
    for part in parts:
        for key, value in part.items():
            if value:
                out[key] = out.get(key, 0) + value
    return out


def times(part: dict, n: int) -> dict:
    return {key: value * n for key, value in part.items()}


def f32(n):
    return {"f32": n}


def bf16(n):
    return {"bf16": n}


def gemv(k, n, tk):
    return f32(3 * k * n + (k // tk) * n)


def rms_hand(d):
    return {"f32": 4 * d + 2, "bf16": 2 * d, "special": 1}


def rms_op(n):
    return f32(8 * n)


def rope(n):
    return f32(3 * n + n // 2)


def mask(n_q, window, compares=1):
    """One trip's valid-length mask: `compares` predicates per window row, a select
    per score."""
    return {"predicate": compares * window, "select": n_q * window}


def flash(n_q, n_kv, hd, window, splits, trips, *, scale_q=True, cap=False, compares=1):
    q, kv = n_q * hd, n_kv * hd
    rows = splits * n_q
    prologue = total(f32(q + rope(q)["f32"] + (q if scale_q else 0) + kv + rope(kv)["f32"]), bf16(kv))
    trip = total({"f32": 2 * window * kv + 2 * 2 * n_q * hd * window + 3 * n_q * window + 4 * rows
                  + 2 * rows * hd + (4 * n_q * window if cap else 0),
                  "special": rows + n_q * window}, mask(n_q, window, compares))
    combine = {"f32": 2 * rows + 2 * n_q * splits * hd + 2 * n_q * splits + q, "bf16": q, "special": rows}
    return total(prologue, times(trip, trips), combine)


def config(file_stem: str):
    """The model file's module-level constants (its one load of the session)."""
    from types import SimpleNamespace

    from tests.models.zoo_cache import namespace

    return SimpleNamespace(**namespace(f"{file_stem}.py"))


def lm_head(d, vocab, tk, cap=False):
    """tf.rms_norm (8·D), the row cast (D), the vocabulary GEMV, its logits to bf16
    and back (V each); Gemma-2 soft-caps them (·1/cap, tanh, ·cap: 3·V)."""
    return total(rms_op(d), f32(d), gemv(d, vocab, tk), bf16(vocab), f32(vocab), f32(3 * vocab if cap else 0))


# ---------------------------------------------------------------- one layer per model


def llama_layer(c):
    """two hand RMSNorms; the QKV GEMV (row cast D; Q_DIM, 2·KV_DIM columns; their
    bf16 casts); flash decoding; out_proj (row cast, GEMV, cast); residual (D);
    gate/up (row cast D, two GEMVs over FFN, SwiGLU epilogue 4·FFN in bf16);
    down (row cast FFN, GEMV, cast D); residual (D)."""
    d, q, kv, f = c.D_MODEL, c.N_Q * c.HEAD_DIM, c.N_KV * c.HEAD_DIM, c.FFN
    window = c.KV_BLOCK * c.SPLITS
    return total(times(rms_hand(d), 2),
                 f32(d), gemv(d, q, c.QKV_TK), times(gemv(d, kv, c.QKV_TK), 2), bf16(q + 2 * kv),
                 flash(c.N_Q, c.N_KV, c.HEAD_DIM, window, c.SPLITS, L // window),
                 f32(q), gemv(q, d, c.O_TK), bf16(d), bf16(d),
                 f32(d), times(gemv(d, f, c.UP_TK), 2), bf16(4 * f),
                 f32(f), gemv(f, d, c.DOWN_TK), bf16(d), bf16(d))


def phi3_layer(c):
    """as Llama with tf.rms_norm norms (8·D each, no service), the fused QKV as three
    D-column GEMVs and MHA (n_q = n_kv = N_HEADS)."""
    d, f = c.D_MODEL, c.FFN
    window = c.KV_BLOCK * c.SPLITS
    trips = min(L // window, -(-(c.WINDOW - 1) // window) + 1)
    return total(times(rms_op(d), 2),
                 f32(d), times(gemv(d, d, c.QKV_TK), 3), bf16(3 * d),
                 flash(c.N_HEADS, c.N_HEADS, c.HEAD_DIM, window, c.SPLITS, trips, compares=3),
                 {"integer": 1 + 4 + 2 * trips},
                 f32(d), gemv(d, d, c.O_TK), bf16(d), bf16(d),
                 f32(d), times(gemv(d, f, c.UP_TK), 2), bf16(4 * f),
                 f32(f), gemv(f, d, c.DOWN_TK), bf16(d), bf16(d))


def gemma_layer(c, kv_len):
    """four tf.rms_norm norms; QKV; flash decoding over `kv_len` rows with the soft
    cap (no query scaling); out_proj; residual; GeGLU gate/up (4·FFN in bf16); down;
    residual."""
    d, q, kv, f = c.D_MODEL, c.N_Q * c.HEAD_DIM, c.N_KV * c.HEAD_DIM, c.FFN
    window = c.KV_BLOCK * c.SPLITS
    return total(times(rms_op(d), 4),
                 f32(d), gemv(d, q, c.QKV_TK), times(gemv(d, kv, c.QKV_TK), 2), bf16(q + 2 * kv),
                 flash(c.N_Q, c.N_KV, c.HEAD_DIM, window, c.SPLITS, kv_len // window, scale_q=False, cap=True),
                 {"integer": 1},
                 f32(q), gemv(q, d, c.O_TK), bf16(d), bf16(d),
                 f32(d), times(gemv(d, f, c.UP_TK), 2), bf16(4 * f),
                 f32(f), gemv(f, d, c.DOWN_TK), bf16(d), bf16(d))


def qwen_layer(c, shared=False):
    """two hand RMSNorms; QKV; the q and k norms (tf.rms_norm, 8·numel); flash
    decoding; out_proj; residual. Router: row cast (D), the weight cast (D·E) and
    product (2·D·E), logits to bf16 (E) and back (E), softmax (E), top-k (E),
    the sum and division of the TOP_K weights. Routed experts: row cast (D), then
    per expert two GEMVs over EXPERT_FFN with the SwiGLU epilogue (4·F_e bf16),
    the act row cast (F_e), the down weight cast (F_e·D) and product (2·F_e·D),
    its result to bf16 (D) and back (D), ·weight (D), + (D); the sum to bf16 (D).
    With the `shared` expert (qwen3-moe-shared): row cast, two GEMVs over
    SHARED_FFN, SwiGLU (4·F_s), act cast (F_s), the down GEMV, its cast (D); the
    one-column gate matmul (2·D, bf16), sigmoid (1), ·gate (D), and the MoE sum (D).
    The residual (D)."""
    d, q, kv = c.D_MODEL, c.N_Q * c.HEAD_DIM, c.N_KV * c.HEAD_DIM
    e, k, fe = c.EXPERTS, c.TOP_K, c.EXPERT_FFN
    window = c.KV_BLOCK * c.SPLITS
    expert = total(times(gemv(d, fe, c.EXPERT_TK), 2), bf16(4 * fe),
                   f32(fe + fe * d + 2 * fe * d + d + d + d), bf16(d))
    shared_part = {}
    if shared:
        fs = c.SHARED_FFN
        shared_part = total(f32(d), times(gemv(d, fs, c.SHARED_TK), 2), bf16(4 * fs), f32(fs),
                            gemv(fs, d, c.SHARED_TK), bf16(d + 2 * d + 1 + d), bf16(d))
    return total(times(rms_hand(d), 2),
                 f32(d), gemv(d, q, c.QKV_TK), times(gemv(d, kv, c.QKV_TK), 2), bf16(q + 2 * kv),
                 rms_op(q), rms_op(kv), flash(c.N_Q, c.N_KV, c.HEAD_DIM, window, c.SPLITS, L // window),
                 f32(q), gemv(q, d, c.O_TK), bf16(d), bf16(d),
                 f32(d + d * e + 2 * d * e + e + e + e + k + k), bf16(e),
                 f32(d), times(expert, k), bf16(d),
                 shared_part, bf16(d))


def mamba_layer(c):
    """hand RMSNorm; in_proj: row cast (D), the z and xBC GEMVs, z to bf16 and back
    (D_INNER each), xBC to bf16 (CONV_CH), the conv taps ·w (D_CONV·CONV_CH, bf16),
    cast and reduce over the taps (2·D_CONV·CONV_CH), the bias cast and add and the
    silu (3·CONV_CH); dt: weight cast (D·N_HEADS), product (2·D·N_HEADS), to bf16
    and back, + bias, softplus (N_HEADS each). SSD step (n = N_HEADS, p = HEAD_P,
    s = D_STATE): −exp(a_log) (n, one exp), dt·a (n) and its exp; state·decay,
    (dt·x)·B and the sum (3·n·p·s) with dt·x (n·p); y = state·C (2·n·p·s), x·D
    skip and + (2·n·p); the gated RMSNorm: silu(z), ·, square, reduce (4·n·p),
    ·1/D_INNER, +eps (2), one rsqrt, ·rsqrt, ·w (2·n·p), cast to bf16 (n·p);
    out_proj (row cast D_INNER, GEMV, cast D); residual (D)."""
    d, di, s, p, n, conv = c.D_MODEL, c.D_INNER, c.D_STATE, c.HEAD_P, c.N_HEADS, c.D_CONV
    ch = di + 2 * s
    return total(rms_hand(d),
                 f32(d), gemv(d, di, c.IN_TK), gemv(d, ch, c.IN_TK), bf16(di), f32(di),
                 bf16(ch + conv * ch), f32(2 * conv * ch + 3 * ch),
                 f32(d * n + 2 * d * n + n + n + n), bf16(n),
                 {"f32": n + n, "special": n + n},
                 f32(3 * n * p * s + n * p + 2 * n * p * s + 2 * n * p),
                 {"f32": 4 * n * p + 2 + 2 * n * p, "special": 1}, bf16(n * p),
                 f32(di), gemv(di, d, c.OUT_TK), bf16(d), bf16(d))


def deepseek_layer(c, moe=False):
    """two hand RMSNorms. down_proj: row cast (D), the q and kv latent GEMVs and
    their bf16 casts, the RoPE key's weight cast (D·R), product (2·D·R), cast (R).
    q_absorbed: tf.rms_norm of the q latent (8·Q_RANK), its cast, the nope and rope
    up-GEMVs, the nope part to bf16 and back (H·NOPE each), w_uk folded in a loop
    over NOPE in UK_TK rows (3·H·NOPE·KV_RANK + (NOPE/UK_TK)·H·KV_RANK), to bf16
    and back (H·KV_RANK each), the rope part to bf16 and back (H·R each), roped.
    latent_attention (rows = SPLITS·H, W = KV_BLOCK·SPLITS): the new latent's
    tf.rms_norm (8·KV_RANK), the new key cast, roped and cast back (R + rope(R) + R);
    per trip the latent and key blocks cast (W·KV_RANK, W·R), the two score
    matmuls (2·H·KV_RANK·W, 2·H·R·W), their sum and ·SCALE (2·H·W), block max,
    − max, block sum (3·H·W), the statistics (4·rows), the accumulator's rescale
    and add (2·rows·KV_RANK), probs·latent (2·H·W·KV_RANK); special rows + H·W;
    the combine as flash decoding's with hd = KV_RANK. value_out: the latent row
    cast (H·KV_RANK), w_uv in a loop over KV_RANK in UV_TK rows, the heads to
    bf16 (H·V), their row cast (H·V), the output GEMV, cast (D); residual (D);
    the dense SwiGLU MLP as Llama's (the first DENSE_LAYERS layers) or the MoE
    block (`moe`, deepseek_moe); residual (D)."""
    d, h, qr, kvr, nope, r, v, f = (c.D_MODEL, c.N_HEADS, c.Q_RANK, c.KV_RANK, c.NOPE_DIM, c.ROPE_DIM,
                                    c.V_DIM, c.FFN)
    splits = c.SPLITS
    window = c.KV_BLOCK * splits
    rows = splits * h
    trip = {"f32": window * kvr + 2 * h * kvr * window + window * r + 2 * h * r * window + 2 * h * window
            + 3 * h * window + 4 * rows + 2 * rows * kvr + 2 * h * window * kvr,
            "special": rows + h * window, **mask(h, window)}
    combine = {"f32": 2 * rows + 2 * h * splits * kvr + 2 * h * splits + h * kvr, "bf16": h * kvr,
               "special": rows}
    return total(times(rms_hand(d), 2),
                 f32(d), gemv(d, qr, c.DOWN_Q_TK), gemv(d, kvr, c.DOWN_Q_TK), bf16(qr + kvr),
                 f32(d * r + 2 * d * r), bf16(r),
                 rms_op(qr), f32(qr), gemv(qr, h * nope, c.UP_Q_TK), gemv(qr, h * r, c.UP_Q_TK),
                 bf16(h * nope), f32(h * nope), f32(3 * h * nope * kvr + (nope // c.UK_TK) * h * kvr),
                 bf16(h * kvr), f32(h * kvr), bf16(h * r), f32(h * r), rope(h * r),
                 rms_op(kvr), f32(r), rope(r), bf16(r), times(trip, L // window), combine,
                 f32(h * kvr + 3 * h * kvr * v + (kvr // c.UV_TK) * h * v), bf16(h * v),
                 f32(h * v), gemv(h * v, d, c.O_TK), bf16(d), bf16(d),
                 deepseek_moe(c) if moe else total(f32(d), times(gemv(d, f, c.UP_TK), 2), bf16(4 * f),
                                                   f32(f), gemv(f, d, c.DOWN_TK), bf16(d)),
                 bf16(d))


def deepseek_moe(c):
    """DeepSeek-V3's placed MoE block. Router: row cast (D), weight cast (D·E) and
    product (2·D·E), sigmoid (E), + bias (E), the per-group top-2 (E) and their sum
    (2·G), the group top-k (G), the G group predicates (score >= the k-th best) and
    E selects (a dropped group's scores masked), the top-k over E (E), the sum of
    the TOP_K picked scores (K), + 1e-20 (1), the division and ·ROUTED_SCALE (2·K).
    Routed experts: row cast (D), then per expert two GEMVs over EXPERT_FFN with the
    SwiGLU epilogue (4·F_e bf16), the act row cast (F_e), the down GEMV over F_e in
    DOWN_TK rows, its result to bf16 (D) and back (D), ·weight (D), + (D); the sum
    to bf16 (D). Shared expert: row cast (D), two GEMVs over SHARED_FFN, SwiGLU
    (4·F_s), act cast (F_s), the down GEMV, its cast (D). routed + shared (D)."""
    d, e, k, fe, fs, g = c.D_MODEL, c.EXPERTS, c.TOP_K, c.EXPERT_FFN, c.SHARED_FFN, c.N_GROUP
    router = total(f32(d + d * e + 2 * d * e + e + e + e + 2 * g + g + e + k + 1 + 2 * k),
                   {"predicate": g, "select": e})
    expert = total(times(gemv(d, fe, c.EXPERT_TK), 2), bf16(4 * fe), f32(fe), gemv(fe, d, c.DOWN_TK),
                   bf16(d), f32(d + d + d))
    shared = total(f32(d), times(gemv(d, fs, c.EXPERT_TK), 2), bf16(4 * fs), f32(fs),
                   gemv(fs, d, c.DOWN_TK), bf16(d))
    return total(router, f32(d), times(expert, k), bf16(d), shared, bf16(d))


#: model name -> (file stem, layer formula, embed, lm_head) at the published config
def formulas(name: str):
    """(layer figures by child name, embed figures, lm_head figures) of one model."""
    stem = {"llama3-8b": "llama3_8b", "phi3-mini": "phi3_mini", "gemma2-9b": "gemma2_9b",
            "qwen3-moe": "qwen3_moe", "qwen3-moe-shared": "qwen3_moe_shared", "mamba2-2.7b": "mamba2_2_7b",
            "deepseek-v3-mla": "deepseek_v3_mla"}[name]
    c = config(stem)
    if name == "deepseek-v3-mla":
        dense, moe = deepseek_layer(c), deepseek_layer(c, moe=True)
        layers = {f"layer{i}": dense if i < c.DENSE_LAYERS else moe for i in range(c.LAYERS)}
        return layers, {}, lm_head(c.D_MODEL, c.VOCAB, c.VOCAB_TK)
    if name == "gemma2-9b":
        layers = {f"layer{i}": gemma_layer(c, c.WINDOW if i % 2 == 0 else L) for i in range(c.LAYERS)}
        # embed: the row scaled by sqrt(D) in bf16; the head soft-caps its logits
        return layers, bf16(c.D_MODEL), lm_head(c.D_MODEL, c.VOCAB, c.VOCAB_TK, cap=True)
    layer = {"llama3-8b": llama_layer, "phi3-mini": phi3_layer, "qwen3-moe": qwen_layer,
             "qwen3-moe-shared": lambda c: qwen_layer(c, shared=True),
             "mamba2-2.7b": mamba_layer}[name](c)
    return ({f"layer{i}": layer for i in range(c.LAYERS)}, {},
            lm_head(c.D_MODEL, c.VOCAB, c.VOCAB_TK))


def whole(name: str) -> dict:
    layers, embed, head = formulas(name)
    return total(embed, *layers.values(), head)
