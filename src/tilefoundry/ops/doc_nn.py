"""Reference prose of the neural-network ops (``ops.nn``, ``ops.mma``): see ``ops.op_doc``."""
from __future__ import annotations

from tilefoundry.ops.op_doc import OpDoc


def _rowwise(rows: str, free: str, weights: bool = True) -> str:
    extra = ", and so is any sharded weight or bias" if weights else ""
    return (f"One iteration per row ({rows}), which reads {free} whole. A `Split` of a row axis carries "
            "to the same axis of the result, whose layout is `x`'s kept whole; a `Split` of "
            f"{free} is refused (reshard that mesh axis `Broadcast` first){extra}. An all-`Broadcast` "
            "(replicated) `x` gives a result with no layout. Every `Partial` is refused.")


def _rowwise_access(what: str) -> str:
    return (f"One iteration per row; the row of `x` is read whole ({what} are free in the relation), "
            "every row reads the whole weight (and bias), and the row of the result is written whole.")


_MMA_DTYPES = (
    "`a` and `b` must have exactly `dtype_a` and `dtype_b`, and the triple (`dtype_a`, `dtype_b`, "
    "`dtype_acc`) is one of (f16, f16, f16), (bf16, bf16, bf16), (f16, f16, f32), (bf16, bf16, f32), "
    "(f32, f32, f32); the result has `dtype_acc`. This is the op that multiplies bf16 (or f16) "
    "operands into an f32 accumulator while its work is counted under the operand dtype. "
    "`a_layout`/`b_layout` (`\"N\"` or `\"T\"`) name the operands' storage order only.")

_MMA_CTA = (
    " A CTA tile larger than the instruction is written as CUTLASS composes it: a `tile` loop "
    "over the instruction's M rows and one over K, each step the instruction on a window of "
    "the operands, the K steps summed into an f32 accumulator and each M block written with "
    "`insert_slice`. For a 128x64 by 64x128 bf16 tile on the SM90 instruction:\n\n"
    "```python\n"
    "acc = tf.zeros(Tensor[(128, 128), \"f32\"])\n"
    "for mm in tile(128, 64):\n"
    "    part = tf.zeros(Tensor[(64, 128), \"f32\"])\n"
    "    for kk in tile(64, 16):\n"
    "        part = part + tf.wgmma_sm90_64x128x16(a[mm, kk], b[kk, :], dtype_a=\"bf16\",\n"
    "                                              dtype_b=\"bf16\", dtype_acc=\"f32\")\n"
    "    acc = tf.insert_slice(acc, part, (mm, 0))\n"
    "```\n\n"
    "The instructions' flops are bf16 (2 * 128 * 128 * 64 in all); the `add` of each step is "
    "counted as f32 work besides, which the hardware folds into the instruction's accumulate. "
    "Where no register fragment is to be checked, `tf.matmul(a, b, out_dtype=\"f32\")` on the "
    "whole CTA tile states the same product and price in one call.")

_MMA_SHARD = (
    "The tile is read whole by every lane, so there is no relation to propagate through: operands "
    "that are not split give an unsplit result; a split operand must be laid out exactly as the "
    "instruction's register fragment on one static lane mesh of the instruction's lane count (else "
    "refused, naming the fragment), and the result is then the accumulator fragment on that mesh. "
    "Every `Partial` is refused.")

DOCS = {
    "matmul": OpDoc(
        dtypes=(
            "`lhs` and `rhs` have one dtype, rank >= 2, `lhs[-1] == rhs[-2]`; batch axes broadcast "
            "right-aligned. The result `(*batch, M, N)` has `lhs`'s dtype, or `out_dtype` when given "
            "(Triton's `tl.dot` name): `out_dtype=\"f32\"` on bf16, f16 or fp8 operands writes the "
            "f32 sum of their products, as every tensor-core MMA accumulates them; any other "
            "`out_dtype` than the operands' own is refused (cast the result for another). "
            "Numerically the products are accumulated in f32 and rounded once to the result dtype, "
            "so a bf16 result rounds each K tile's product while an `out_dtype=\"f32\"` one keeps "
            "it (a tiled GEMM accumulating K tiles writes `tf.matmul(a_tile, b_tile, "
            "out_dtype=\"f32\")`). Casting the operands to f32 instead gives the same values but "
            "prices the work as f32 flops at the CUDA-core rate (67 TFLOP/s on the H200, not the "
            "bf16 tensor-core 989.5 TFLOP/s)."),
        shard=(
            "Over the iteration space `(*batch, M, N, K)`: a `Split` of `lhs`'s M axis, `rhs`'s N axis "
            "or a batch axis carries to the result; a `Split` of K -- on `lhs`, `rhs` or both, which "
            "must then use the same mesh axis (else refused) -- leaves each unit a partial product, "
            "so the result is `Partial(\"sum\")` on that mesh axis (complete it with `reshard`). A "
            "`Partial(\"sum\")` operand times one `Broadcast` on that mesh axis stays "
            "`Partial(\"sum\")`; two `Partial` operands, or a non-sum one, are refused. The result "
            "takes fresh C-order strides."),
        access=("Iteration space `(*batch, M, N, K)`: `lhs` is read at `(batch, m, k)` and `rhs` at "
                "`(batch, k, n)` (a broadcast batch axis at 0), the result written at `(batch, m, n)`; "
                "K is the reduction dim."),
        cost=("`2 * batch * M * K * N` flops under `lhs`'s dtype (companions §5.3), whatever "
              "`out_dtype` writes: an `out_dtype=\"f32\"` product of bf16 operands is bf16 work, "
              "priced at the bf16 tensor-core rate. Both operands read, the result written (at "
              "the result dtype's width)."),
        example=("@func\n"
                 "def example(a: Tensor[(64, 128), \"bf16\"], b: Tensor[(128, 32), \"bf16\"]):\n"
                 "    return tf.matmul(a, b, out_dtype=\"f32\")  # "
                 "Tensor[(64, 32), \"f32\"]"),
        example_cost="flops=bf16:524288",
        also="the operator `a @ b`.",
    ),
    "rms_norm": OpDoc(
        dtypes=("`weight` is rank 1 with `x`'s last extent; its dtype may differ from `x`'s (an f32 "
                "weight with a bf16 `x` is accepted). The result has `x`'s type; the arithmetic is in "
                "f32, rounded once to `x`'s dtype."),
        shard=_rowwise("every axis but the last", "the last axis"),
        access=_rowwise_access("the last axis's elements"),
        cost=("`8 * numel(x)` flops under f32, whatever `x`'s dtype (companions §5.3); `x` and `weight` "
              "read, the result written."),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"bf16\"], w: Tensor[(64,), \"f32\"]):\n"
                 "    return tf.rms_norm(x, w)  # Tensor[(8, 64), \"bf16\"]"),
        example_cost="flops=f32:4096",
    ),
    "layer_norm": OpDoc(
        dtypes=("`x` is float; `weight` and `bias` have the shape of the normalised suffix "
                "`x.shape[axis:]`. The result has `x`'s type; the arithmetic is in f32."),
        shard=_rowwise("the axes before `axis`", "the normalised axes (`axis` on)"),
        access=_rowwise_access("the axes from `axis` on"),
        cost=("`8 * numel(x)` flops under f32, whatever `x`'s dtype; `x`, `weight` and `bias` read, the "
              "result written."),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"f32\"], w: Tensor[(64,), \"f32\"], "
                 "b: Tensor[(64,), \"f32\"]):\n"
                 "    return tf.layer_norm(x, w, b, axis=-1, eps=1e-5)  # Tensor[(8, 64), \"f32\"]"),
        example_cost="flops=f32:4096",
    ),
    "softmax": OpDoc(
        dtypes="`x` is float; the result has `x`'s type, computed in f32.",
        shard=_rowwise("the axes before `axis`", "the axes from `axis` on", weights=False),
        access=_rowwise_access("the axes from `axis` on"),
        cost=("`numel(result)` flops under the result dtype, one per element (the exponential is not "
              "counted as `special` service); `x` read, the result written."),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"f32\"]):\n"
                 "    return tf.softmax(x, axis=-1)  # Tensor[(8, 64), \"f32\"]"),
        example_cost="flops=f32:512",
    ),
    "rope": OpDoc(
        dtypes=("`q` and `k` have one rank >= 1 and one even head dim (the last axis); `cos_cache` and "
                "`sin_cache` are rank 2 `[positions, head_dim]`; `pos_ids` is an integer tensor. The "
                "result is the pair (type of `q`, type of `k`): unpack it, `q_r, k_r = tf.rope(...)`."),
        shard=("`q` and `k` keep their own layouts (the result types are theirs). A `Split` of a head "
               "dim is refused -- rotate-half pairs element `d` with `d +- D/2` -- and so is any "
               "sharded `cos_cache`, `sin_cache` or `pos_ids` (read at data-dependent rows: reshard "
               "them `Broadcast`). Every `Partial` is refused."),
        access=("Iteration space `q`'s shape plus a pair index: `q` (pair 0) and `k` (pair 1, where "
                "its head index is in range) are read and written elementwise; the tables are read at "
                "(any row, head-dim index) -- the row is chosen by `pos_ids` at run time -- and "
                "`pos_ids` is read whole."),
        cost=("`3 * (numel(q) + numel(k))` flops under `q`'s dtype; the five inputs read, the pair "
              "written."),
        example=("@func\n"
                 "def example(q: Tensor[(1, 4, 8, 64), \"bf16\"], k: Tensor[(1, 4, 2, 64), \"bf16\"],\n"
                 "            cos: Tensor[(256, 64), \"bf16\"], sin: Tensor[(256, 64), \"bf16\"],\n"
                 "            pos: Tensor[(1, 4), \"i64\"]):\n"
                 "    return tf.rope(q, k, cos, sin, pos)  # Tuple[Tensor[(1, 4, 8, 64), \"bf16\"], "
                 "Tensor[(1, 4, 2, 64), \"bf16\"]]"),
        example_cost="flops=bf16:7680",
    ),
    "conv2d": OpDoc(
        dtypes=("NCHW `input`, OIHW `weight` and rank-1 `bias` of one dtype, which the result takes; "
                "`input` channels = weight in-channels x `groups`. Result `(N, O, floor((H + 2p - "
                "d(k - 1) - 1) / s) + 1, ...)`; all attributes required (`stride`, `padding`, "
                "`dilation` 2-tuples, `groups` an int)."),
        shard=("Over the iteration space `(N, O, OH, OW, Ci, KH, KW)`: a `Split` of the batch axis N "
               "(of `input`) or of the out-channel axis O (of `weight`, with `bias` split alike) "
               "carries to the result; a `Split` of `input`'s H or W is refused (read at translated "
               "positions), and a `Split` of the in-channels or of the kernel (reduction dims neither "
               "partial nor complete) is refused. Every `Partial` is refused (the bias is added once). "
               "Fresh C-order strides."),
        access=("Iteration space `(N, O, OH, OW, Ci, KH, KW)`: `input` read at `(n, group channel, "
                "s*oh + d*kh - p, s*ow + d*kw - p)` inside its bounds (zero padding outside), "
                "`weight` at `(o, ci, kh, kw)`, `bias` at `o`; the result written at `(n, o, oh, ow)`."),
        cost=("`2 * numel(result) * (Cin / groups) * kh * kw` flops under `input`'s dtype; the three "
              "inputs read, the result written."),
        example=("@func\n"
                 "def example(img: Tensor[(1, 3, 8, 8), \"f32\"], w: Tensor[(4, 3, 3, 3), \"f32\"],\n"
                 "            b: Tensor[(4,), \"f32\"]):\n"
                 "    return tf.conv2d(img, w, b, stride=(1, 1), padding=(1, 1), dilation=(1, 1), "
                 "groups=1)  # Tensor[(1, 4, 8, 8), \"f32\"]"),
        example_cost="flops=f32:13824",
    ),
    "quant": OpDoc(
        dtypes=("`x` is float of rank >= 1, its last extent a multiple of `group`; only `scheme=\"per_"
                "token_group\"` exists. The result is the pair (`x` quantised, `target_dtype`, `x`'s "
                "shape; its scales, f32, `x.shape[:-1] + (last // group,)`)."),
        shard=("`x_q` follows `x` elementwise; the scale's last axis is `x`'s last divided by `group`, "
               "so a `Split` of `x`'s last axis is refused (no projection reaches the scales), while a "
               "`Split` of any other axis carries to both results. Every `Partial` is refused."),
        access=("Identity into `x_q`; the scale is written at `(..., j // group)`: each run of `group` "
                "last-axis elements writes one scale."),
        cost="`4 * numel(x)` flops under f32; `x` read, both results written.",
        example=("@func\n"
                 "def example(x: Tensor[(4, 256), \"bf16\"]):\n"
                 "    return tf.quant(x, group=128)  # Tuple[Tensor[(4, 256), \"fp8e4m3\"], "
                 "Tensor[(4, 2), \"f32\"]]"),
        example_cost="flops=f32:4096",
    ),
    "mma_sm80_16x8x16": OpDoc(
        dtypes=(f"`a` is `(16, 16)` and `b` `(16, 8)`; the result is `(16, 8)`. {_MMA_DTYPES} A CTA "
                "tile of these instructions is composed as `wgmma_sm90_64x128x16`'s section shows."),
        shard=_MMA_SHARD + " The lane mesh has 32 lanes (one warp).",
        access="Each result element reads the whole `a` and `b` tiles; the result is written elementwise.",
        cost=("`2 * m * n * k` flops of the tile under `dtype_a`; per unit, `2 * k` for each "
              "accumulator element the unit holds. Both operands read, the result written."),
        example=("@func\n"
                 "def example(a: Tensor[(16, 16), \"bf16\"], b: Tensor[(16, 8), \"bf16\"]):\n"
                 "    return tf.mma_sm80_16x8x16(a, b, dtype_a=\"bf16\", dtype_b=\"bf16\", "
                 "dtype_acc=\"f32\")  # Tensor[(16, 8), \"f32\"]"),
        example_cost="flops=bf16:4096",
    ),
    "wgmma_sm90_64x128x16": OpDoc(
        dtypes=f"`a` is `(64, 16)` and `b` `(16, 128)`; the result is `(64, 128)`. {_MMA_DTYPES}{_MMA_CTA}",
        shard=(_MMA_SHARD + " The lane mesh has 128 lanes (one warpgroup); `b` is read from shared "
               "memory and may not be split at all."),
        access="Each result element reads the whole `a` and `b` tiles; the result is written elementwise.",
        cost=("`2 * m * n * k` flops of the tile under `dtype_a`; per unit, `2 * k` for each "
              "accumulator element the unit holds. Both operands read, the result written."),
        example=("@func\n"
                 "def example(a: Tensor[(64, 16), \"f16\"], b: Tensor[(16, 128), \"f16\"]):\n"
                 "    return tf.wgmma_sm90_64x128x16(a, b, dtype_a=\"f16\", dtype_b=\"f16\", "
                 "dtype_acc=\"f32\")  # Tensor[(64, 128), \"f32\"]"),
        example_cost="flops=f16:262144",
    ),
}
