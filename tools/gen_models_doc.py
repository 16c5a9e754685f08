"""Write docs/models.md, the model zoo page, from analyses of the zoo (issue 23 item 3).

Per model and target one table: for the whole-model decode step, each placed
layer, the embedding and the head, the roofline ideal, the predicted time, their
ratio, what bounds it, the peak shared-memory and register footprint of one CTA,
and the costliest statements (`analyze --top 3`; for a decode step the three
costliest source lines summed over its layers). Every figure is read off an
analysis of the registered selection (`tilefoundry.models.MODELS`); the prose,
one paragraph per model on how its kernels are placed and why, is in this file.

    python tools/gen_models_doc.py           # rewrite docs/models.md (a few minutes)
    python tools/gen_models_doc.py --check   # exit 1 when docs/models.md is stale

tests/models/test_models_whole.py builds the page from the analyses it makes and
compares it with the file.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "models.md"
FAMILIES = ("compute-cost", "memory", "roofline", "performance", "estimate")
TOP = 3


def doc_selections(model) -> list:
    """The rows of a model's tables, per target: its decode step, its placed layers,
    its embedding and head."""
    placed = {p.root for p in model.placed_roots}
    order = {"decode-step": 0, "layer": 1}
    rows = [s for s in model.selections if s.selector.split(".")[0] in placed
            and (s.kind in order or s.selector.endswith((".embed", ".lm_head")))]
    return sorted(rows, key=lambda s: (s.target != "nvidia.h200_sxm", order.get(s.kind, 2)))


def families_for(selection) -> tuple:
    """All four families; the B200's performance only once its document states the
    special-function rate its programs need (companions §6.5, §6.8)."""
    from tilefoundry.target import CudaTarget, PerformanceServiceFacts

    if selection.target == "nvidia.b200_sxm":
        rates = CudaTarget(selection.target).get_facts(PerformanceServiceFacts)
        if rates.ops("special") is None:
            return FAMILIES[:3] + FAMILIES[4:]
    return FAMILIES


# ---------------------------------------------------------------- one analysis, summarised


def _written(source: str | None) -> str:
    """The name a statement's source line assigns (``wg_t`` of ``wg_t = tf.cast(...)``):
    the view renames every call ``v<k>``, and an op nested in an expression has no
    binding of its own, so the line says best what it is."""
    import linecache

    if not source:
        return "?"
    path, line, _col = source.rsplit(":", 2)
    found = re.match(r"\s*([A-Za-z_][A-Za-z0-9_, ]*?)\s*=[^=]", linecache.getline(path, int(line)))
    return found.group(1).split(",")[0].strip() if found else "return"


def _op(statement: str) -> str:
    found = re.search(r"= ([a-z_0-9]+)\(", statement)
    return found.group(1) if found else statement.split("=", 1)[-1].strip()


def _costliest(result, rendering, by_source: bool) -> list[dict]:
    """The TOP costliest statements by time (or, over many layers, source lines)."""
    from tilefoundry.render.views.top import executions_of, percent, report_totals, short_source, statement_rows

    report = rendering.report
    rows = statement_rows(report, executions_of(result, rendering))
    if by_source:  # a decode step: the same line in every layer is one entry
        sources: dict = {}
        for row in rows:
            entry = sources.setdefault(row["source"], {**row, "time_ns": 0})
            entry["time_ns"] += row["time_ns"]
        total = report_totals(report)["time"]
        rows = [{**row, "share": {"time": percent(row["time_ns"], total)}} for row in sources.values()]
    ranked = sorted(rows, key=lambda r: -r["time_ns"])[:TOP]
    return [{"name": _written(r["source"]), "op": _op(r["statement"]), "where": short_source(r["source"]),
             "share": r["share"]["time"]} for r in ranked]


def summary(result, *, whole_model: bool) -> dict:
    """What the page and the tests read of one analysis."""
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata
    from tilefoundry.analysis.estimate import EstimateSummaryMetadata
    from tilefoundry.analysis.memory.records import MemoryMetadata
    from tilefoundry.analysis.performance import PerformanceSummaryMetadata
    from tilefoundry.analysis.roofline import RooflineMetadata
    from tilefoundry.render.report import render_analysis

    from tilefoundry.render.views.breakdown import breakdown_document

    function = result.function
    roofline = function.get_metadata(RooflineMetadata)
    performance = function.get_metadata(PerformanceSummaryMetadata)
    estimate = function.get_metadata(EstimateSummaryMetadata)
    cost = function.get_metadata(ComputeCostMetadata)
    footprint = function.get_metadata(MemoryMetadata).footprint
    timed = performance is not None
    rendering = render_analysis(result) if timed else None
    calls = breakdown_document(result, rendering)["calls"] if timed and whole_model else []
    return {
        "ideal_ns": roofline.ideal_ns,
        "bound_by": roofline.bound_by,
        "predicted_ns": performance.timeline.end_ns if timed else None,
        "waves": performance.waves if timed else None,
        "estimate_ns": estimate.predicted_ns if estimate is not None else None,
        "estimate_bound_by": estimate.bound_by if estimate is not None else None,
        "footprint": {row.level: (row.peak_bytes, row.capacity_bytes) for row in footprint},
        "flops": {**dict(cost.flops), **dict(cost.service)},
        "costliest": _costliest(result, rendering, whole_model) if timed else [],
        "breakdown": [(row["call"], row["time_ns"], row["share"]["time"]) for row in calls],
    }


ATTENDED_POINTS = (1, 2048, None)  # the attended lengths of each H200 decode step (None: unbound)


def _h200_step(model):  # the H200 decode step; DeepSeek-V3, which has none, its placed layer0
    rows = [s for s in doc_selections(model) if s.target == "nvidia.h200_sxm" and s.kind in ("decode-step", "layer")]
    return min(rows, key=lambda s: (s.kind != "decode-step", s.selector))


def analyse_attended(model, namespace: dict, found: dict) -> None:
    """found[step@kv_len=N] = (gmem bytes read, estimate ns) at each attended length."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.analysis.estimate import EstimateSummaryMetadata as Estimate
    from tilefoundry.analysis.memory import TrafficMetadata as Traffic
    from tilefoundry.dsl.loader import resolve_selector
    step = _h200_step(model)
    module = resolve_selector(namespace, step.selector)
    for kv_len in ATTENDED_POINTS if "KV_LEN" in namespace else ():  # Mamba-2 has no KV cache
        dims = {**step.dim_map(), **({"kv_len": kv_len} if kv_len else {})}
        function = analyze(module, module.entry_function(), analysis=("memory", "estimate"), dims=dims).function
        found[f"{step.selector}@kv_len={kv_len}"] = (dict(function.get_metadata(Traffic).whole)["gmem"].read,
                                                     function.get_metadata(Estimate).predicted_ns)


def attended_table(found: dict) -> str:
    from tilefoundry.models import MODELS
    heads = " / ".join(["kv_len = 1 (pos 0)", "kv_len = 2048", "unbound (pos 4095)"])
    lines = [f"| model | gmem read: {heads} | estimate-ns: {heads} |", "|---|---|---|"]
    for model, step in ((m, _h200_step(m)) for m in MODELS):
        rows = [found.get(f"{step.selector}@kv_len={kv}") for kv in ATTENDED_POINTS]
        if rows[0] is not None:
            lines.append(f"| `{model.name}` (`{step.selector}`) | " + " / ".join(f"{r[0] / 1e9:.4f} GB" for r in rows)
                         + " | " + " / ".join(f"{r[1]:,}" for r in rows) + " |")
    return "\n".join(lines) + "\n"


def analyse_all(progress=None) -> dict:
    """selector -> summary of every row of the page (loads each model file once)."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_module_file, resolve_selector
    from tilefoundry.models import MODELS

    found = {}
    for model in MODELS:
        namespace = vars(load_module_file(str(model.source)))
        for selection in doc_selections(model):
            if progress:
                progress(selection.selector)
            module = resolve_selector(namespace, selection.selector)
            result = analyze(module, module.entry_function(), analysis=families_for(selection),
                             dims=selection.dim_map())
            found[selection.selector] = summary(result, whole_model=selection.kind == "decode-step")
        analyse_attended(model, namespace, found)
    return found


# ---------------------------------------------------------------- the page

INTRO = """\
# Model zoo

<!-- Generated by tools/gen_models_doc.py from analyses of the zoo; do not edit by hand. -->

`src/tilefoundry/models/` ships six published LLM architectures, each one file
written in the authoring DSL (`docs/authoring.md`) with its published config as
module-level constants (no `transformers`, no `torch`), weights as `ConstTensor`
parameters and one DimVar `ctx_len` for the KV cache. Batch 1, one token. Each
file holds four roots:

- the **logical** root (`Llama3_8B`): the specification, written as the model's
  reference code reads (a kernel computes its whole value on a few CTAs). A
  layer Module whose `@func` kernels call siblings defined above them, LAYERS
  renamed copies of it (`layer0` ... at the published count), `embed`, `lm_head`
  and the whole-model `decode_step`;
- one **placed** root per target (`Llama3_8B_H100`, `Llama3_8B_H200`, `Llama3_8B_B200`): the same
  decode step with every kernel placed over the whole device the way production
  decode kernels are (below), built by the file's `decode_model` factory. Each
  placed layer and decode step computes what its logical twin does: `tilefoundry
  check --against` holds them together, on reduced-config copies in the tests
  (`tests/models/test_zoo_placed_numerics.py`).

| name | file | config | layers | what it models |
|---|---|---|---|---|
{models}

## Running them

```
$ tilefoundry models            # table: name, layers, kernels, every selection (kind, target, --dim)
$ tilefoundry models --json     # [{"name", "source", "layers", "selections": [{"selector", "dims", "kind", "target"}]}]
$ tilefoundry analyze --compute-cost --memory --roofline --performance --dim ctx_len=4096 \\
      $(python -c 'import tilefoundry.models as m; print(m.models_dir())')/llama3_8b.py:Llama3_8B_H200
$ tilefoundry analyze --breakdown --dim ctx_len=4096 .../llama3_8b.py:Llama3_8B_H200   # one row per layer
```

Selections: the logical root's `embed`, `lm_head`, `layer0` (its entry
`decoder_layer`) and `layer0.<kernel>` for every kernel (Gemma also `layer1`);
per target the placed root's `decode_step` (kind `decode-step`: the whole model),
its `embed`, `lm_head`, `layer0` and every placed kernel. `dims` is empty where
the selected function does not state `ctx_len` (binding an unstated dimension
is an error). The placed attention walks the cache in windows of KV_BLOCK x
SPLITS rows, so a placed selection needs `ctx_len` a multiple of that (1024 for
Llama-3, Qwen3 and Gemma-2, 256 for Phi-3 and DeepSeek-V3). In Python,
`tilefoundry.models.MODELS` holds the same registry; importing it loads no model
file.

## The attended length (`kv_len`)

A step at `pos` needs the cache rows `0 .. pos` only; a real decode kernel reads no
block past them. Every attention walking its cache in blocks (placed flash decoding
and latent attention, the logical Llama-3 and Phi-3 block loops) takes the attended
length as a second DimVar, `kv_len`: a step below it visits the rows `[0, min(kv_len,
ctx_len))` rounded up to its block (placed: KV_BLOCK x SPLITS rows), no further, and
masks the rows past `pos` in the last block. Gemma-2's sliding layers visit
`min(kv_len, WINDOW)` slots of their ring; Phi-3 only the ceil((WINDOW - 1) / W) + 1
blocks its window of 2047 can touch at most (9 of 256 rows placed), from a first
block computed from `pos` at run time.

- **Stating it.** `--dim kv_len=N` (`dims={"kv_len": N}`) prices a step at a position
  below N (N = pos + 1: what a kernel at `pos` reads). Unbound it is MAX_POS (its
  `DimVar(..., default=MAX_POS)`): the whole cache, as on the rest of this page.
- **Running it.** `run`/`check` visit the same blocks and read `pos` from the
  visited rows' indices (`tf.index_select`, priced at its table: 4 bytes a row;
  Phi-3 a slice; Gemma-2 the `slot`): a position past them is refused in one line
  (`index holds 31, outside the valid range [0, 16)`), and a random one drawn in them.
- **What it changes** (H200 decode step, `ctx_len` = 4096; DeepSeek-V3 layer0): the KV bytes skipped.

{attended}

## How the placed decode steps are placed

Common to every model, on both targets:

- **128 CTAs.** Every placed kernel runs on a grid of 128 CTAs (Mamba's head
  and vocabulary kernels on 80 and 112 of them, Phi-3's vocabulary on 96): the
  largest grid that divides every feature dimension of these models (each is a
  power of two times 3, 5 or 7), one wave on the H200's 132 SMs and the B200's
  148. A memory-bound kernel on 128 of 132 SMs can be at best 132/128 = 1.03x
  its whole-device ideal (148/128 = 1.16x on the B200).
- **GEMVs split over output features.** Each projection is one kernel: every
  CTA stages the input row in shared memory (its RMSNorm is that kernel's
  prologue), owns N/128 output columns, walks K in tiles of TK rows of its
  columns staged through shared memory, and accumulates the f32 products in
  registers (a CUDA-core GEMV, as batch-1 decode kernels are: 2 flops per
  weight read leave the tensor cores idle); the epilogue casts to bf16 and
  writes the columns. Weights are read exactly once, by one CTA each.
- **Split-K flash decoding.** Attention runs on a (heads x SPLITS) grid: CTA
  (h, s) owns KV head h and, of every window of KV_BLOCK x SPLITS cache rows,
  the s-th KV_BLOCK rows, with its own online softmax (running max, sum and
  accumulator). It ropes its query group and the new key from the one table
  row `pos` selects (read at a run-time start, never the whole table), writes
  the new row into the cache, and at the end the SPLITS partials are combined
  by a matmul over the split axis: the rescaled accumulators and sums carry a
  Partial on `s` that the reshards to the output complete.
- **Kernel boundaries go through global memory**: each kernel's outputs are
  resharded to `gmem` in its own split, and the next kernel reads them in its
  (a gmem to gmem reshard only relabels who owns what).
- The predicted time is the performance family's timeline: occurrences on one
  CTA serialize (no overlap of loads with math inside a kernel), and the
  roofline ideal is the summed work at the whole device's peak rates, so
  predicted / ideal measures the placement, not the hardware.
- The estimate (docs/estimate.md) is the time the GPU takes: the kernels back
  to back, each priced by occupancy and waves, L2 reuse, sustained HBM, L2 and
  tensor rates, overlap, DRAM latency and a CUDA-graph launch gap.

{paragraphs}

## Figures

Each table states, for one target at `ctx_len` = 4096: the roofline ideal
(`ideal-ns`), the performance family's prediction (`predicted-ns`), their ratio,
the estimate (`estimate-ns`, with what bounds it: docs/estimate.md), what bounds the ideal, the peak shared-memory (`smem`) and register (`rmem`)
footprint of one CTA, and the costliest statements by modeled time (`analyze
--top 3`: the binding, its op, where it is written and its share of the time;
for the decode step the three costliest source lines summed over every layer).
{b200_note}
{tables}
## Tests and bench

- `tests/models/test_models_flops.py` pins the logical layers' compute-cost, and
  `tests/models/placed_flops.py` derives the placed layers', heads' and whole
  models' from the configs (each derivation in its docstring);
  `test_models_placed.py` and `test_models_whole.py` hold every placed layer and
  decode step to them, to predicted >= ideal, to 3x of a memory-bound ideal and
  to the per-CTA capacities, and this page to the analyses (it is regenerated
  in memory and compared).
- `tests/models/test_models_selections.py` runs every registered selection but
  the decode steps with all four families in-process (the decode steps: in
  `test_models_whole.py`); `BLOCKED` lists strict xfails for selections waiting
  on a fix elsewhere (empty).
- `tests/models/test_zoo_placed_numerics.py` checks each placed layer and decode
  step against its logical twin on a reduced-config copy (`zoo_reduced.py`).
- `bench/models.py` times the whole process of analysing every model's `layer0`
  with all four families (best of 3; `--all` for every selection).
"""

PARAGRAPHS = {
    "llama3-8b": (
        "**Llama-3-8B** (`llama3_8b.py`). `qkv` is one GEMV over the 4096 query and "
        "2x1024 key/value columns (32 + 8 + 8 per CTA, K tiles of 256 rows); "
        "`decode_attention` runs on 8 KV heads x 16 splits (KV_BLOCK 64: each CTA "
        "reads 256 of 4096 cache rows for its head and holds its 4 query heads); "
        "`out_proj`, the gate/up GEMV (112 + 112 columns per CTA, the SwiGLU in its "
        "epilogue) and the down GEMV (32 columns, K tiles of 512) follow. The 436 MB "
        "of weights of a layer are 94% of its bytes; the head reads 1 GB."),
    "qwen3-moe": (
        "**Qwen3-30B-A3B** (`qwen3_moe.py`), as published: no shared expert. Attention "
        "as Llama's on 4 KV heads x 32 splits, with the q/k RMSNorms in its prologue. "
        "The router is a GEMV of one expert column per CTA; every CTA then repeats the "
        "softmax and top-8 over the 128 logits, so each holds the routing. The routed "
        "experts run one after another (a `range` loop over the 8 slots): expert "
        "`ids[j]` is read as a run-time window of the expert stack (so only the 8 "
        "chosen experts' bytes count) and spread over all 128 CTAs, 6 gate/up and 16 "
        "down columns each, rather than one expert per CTA group: a CTA choosing its "
        "expert by its mesh coordinate would leave the whole-device traffic of the "
        "window uncountable (every CTA's window reads as the same one)."),
    "qwen3-moe-shared": (
        "**Qwen3-MoE with a shared expert** (`qwen3_moe_shared.py`), a zoo variant: "
        "qwen3-moe plus the Qwen2-MoE-style shared expert (a dense SwiGLU of 2048 "
        "features whose one-column sigmoid gate is a dot product every CTA computes), "
        "kept to show what that block costs; no published checkpoint has this shape."),
    "deepseek-v3-mla": (
        "**DeepSeek-V3** (`deepseek_v3_mla.py`, its layers built by "
        "`deepseek_v3_layers.py`): 3 dense layers (`layer0`) and 58 MoE layers "
        "(`layer3`). `down_proj` computes the q and kv latents (12 + 4 columns per CTA) "
        "and, on 64 CTAs, the decoupled RoPE key; `q_absorbed` normalises the q latent "
        "on every CTA and splits the up-projection over heads (128 heads: one per CTA), "
        "folding `w_uk` into the nope part (K tiles of 32) and rotating the rope part; "
        "`latent_attention` runs on 8 head groups x 16 splits over the latent and "
        "RoPE-key caches every head shares (each latent row is read by the 8 head "
        "groups of its split); `value_out` applies `w_uv` per head and the output "
        "GEMV. The MoE layer's router is a GEMV of 2 expert columns per CTA in f32, "
        "then every CTA repeats the group-limited choice (8 groups of 32, the best 4 "
        "groups by their two best biased sigmoid scores, the top 8 of those); the 8 "
        "routed experts run one after another over all CTAs (16 gate/up and 56 down "
        "columns each, the down GEMV in K tiles of 256), then the shared expert. "
        "671 B parameters fit no single GPU, so the model has no decode-step "
        "selection: the section below states each layer kind's figures, the whole "
        "model's bytes and how many GPUs hold it."),
    "gemma2-9b": (
        "**Gemma-2-9B** (`gemma2_9b.py`). Built by one factory for the sliding "
        "(4096-slot ring buffer, `slot = pos mod 4096`) and the global layers: the "
        "same kernels as Llama's, 8 KV heads x 16 splits, the logit soft cap "
        "`tanh(s / 50) * 50` applied to each block before the online softmax, and "
        "four RMSNorms each the prologue of the kernel that reads its row (every CTA "
        "normalises the whole 3584-wide row). The head's GEMV (2000 vocabulary "
        "columns per CTA) ends with the final soft cap."),
    "mamba2-2.7b": (
        "**Mamba-2 2.7B** (`mamba2_2_7b.py`). `in_proj` is one GEMV kernel over the z "
        "(40 per CTA) and xBC (42 per CTA) columns whose xBC epilogue is the "
        "depthwise conv1d step (each CTA owns its channels, their 4-tap state and "
        "weights); dt, one column per head, runs on 80 CTAs. `ssm` updates the "
        "80 x 64 x 128 state on a 16 x 8 grid of heads x head dimension (5 heads x 8 "
        "rows per CTA), B and C read by all; the gated RMSNorm's sum of squares is "
        "reduced across the grid and each CTA writes its normalised slice. "
        "`out_proj` is a GEMV again. There is no KV cache: the decode step is static."),
    "phi3-mini": (
        "**Phi-3-mini** (`phi3_mini.py`). The fused QKV and gate/up weights are read "
        "as column windows of the one tensor (views, no copy), so each GEMV still "
        "reads each weight once: 24 + 24 + 24 QKV columns and 64 + 64 gate/up "
        "columns per CTA. Attention is MHA: 32 heads x 4 splits. The vocabulary "
        "(32064 = 2^6 x 501) splits over 96 CTAs."),
}


def _bytes(count: int) -> str:
    return f"{count / 1024:.1f} KiB" if count < 1 << 20 else f"{count / (1 << 20):.1f} MiB"


def _cell_costliest(rows: list[dict]) -> str:
    return "<br>".join(f"`{r['name']}`: {r['op']}, {r['where']} ({r['share']:.1f}%)" for r in rows) or "—"


def _row(selection, found: dict) -> str:
    s = found[selection.selector]
    predicted = s["predicted_ns"]
    ratio = f"{predicted / s['ideal_ns']:.2f}" if predicted is not None and s["ideal_ns"] else "—"
    smem = s["footprint"].get("smem", (0, None))[0]
    rmem = s["footprint"].get("rmem", (0, None))[0]
    what = selection.selector.split(".", 1)[1]
    estimate = s.get("estimate_ns")
    estimated = "—" if estimate is None else f"{estimate:,} ({s['estimate_bound_by']})"
    return (f"| `{what}` | {s['ideal_ns']:,} | {'—' if predicted is None else f'{predicted:,}'} | {ratio} "
            f"| {estimated} | {s['bound_by']} | {_bytes(smem)} | {_bytes(rmem)} "
            f"| {_cell_costliest(s['costliest'])} |")


def _breakdown_line(rows: list) -> str:
    """`analyze --breakdown` of a decode step in one line, runs of equal layers joined."""
    parts, index = [], 0
    rows = [r for r in rows if r[1]]  # the entry's own statements take no time
    while index < len(rows):
        call, time_ns, share = rows[index]
        end = index
        while end + 1 < len(rows) and rows[end + 1][1] == time_ns and rows[end + 1][0].startswith("layer"):
            end += 1
        if end > index:
            total = sum(r[2] for r in rows[index:end + 1])
            parts.append(f"`{call}`–`{rows[end][0]}` {time_ns:,} ns each ({total:.1f}%)")
        else:
            parts.append(f"`{call}` {time_ns:,} ns ({share:.1f}%)")
        index = end + 1
    return "Per call (`analyze --breakdown`): " + "; ".join(parts) + "."


#: per model: what the file models of the published architecture, and what it leaves out
FIDELITY = {
    "llama3-8b": ("every layer as published (GQA, RoPE theta 500000, SwiGLU, RMSNorm)",
                  "Llama-3.1's RoPE scaling (the file is Meta-Llama-3-8B)"),
    "qwen3-moe": ("Qwen3-30B-A3B as published: q/k-norm GQA, a softmax router choosing the top 8 of 128 "
                  "experts, their probabilities renormalised (norm_topk_prob), every layer MoE, no shared expert",
                  "the router's auxiliary load-balancing loss (training only)"),
    "qwen3-moe-shared": ("qwen3-moe plus a Qwen2-MoE-style sigmoid-gated shared expert",
                         "a published checkpoint: this shape is the zoo's own, so it has no checkpoint "
                         "mapping or transformers twin"),
    "deepseek-v3-mla": ("61 layers as published: MLA (absorbed; YaRN softmax scale), 3 dense SwiGLU layers, "
                        "58 MoE layers (256 routed experts, group-limited sigmoid routing with the "
                        "correction bias, top 8, weights normalised and scaled by 2.5, 1 shared expert); "
                        "the checkpoint's interleaved RoPE columns de-interleaved by the mapping "
                        "(`deinterleave`, `heads_deinterleave`), the RoPE tables YaRN-scaled from config.json",
                        "the multi-token-prediction module (layer 61 of the checkpoint), the FP8 weights "
                        "(a bf16 checkpoint is read), and a whole decode step on one GPU (it fits none)"),
    "gemma2-9b": ("alternating sliding (ring of 4096) / global layers, each writing its own cache slot; "
                  "soft caps; the norms' stored offsets converted to 1 + w by the layer's converters",
                  "the embedding scale is sqrt(d_model) in f32 (transformers rounds it to the "
                  "activation dtype first)"),
    "mamba2-2.7b": ("the decode step as published: conv1d step, SSD state update (one group), gated RMSNorm; "
                    "a recurrent prefill scan",
                    "the chunked SSD prefill (the scan here is the recurrence); the checkpoint read is "
                    "transformers' Mamba2 layout (state-spaces' files converted first)"),
    "phi3-mini": ("fused QKV / gate-up, MHA masked to the sliding window of 2047",
                  "Phi-3's long-context RoPE scaling (the file is the 4k model)"),
}


def deepseek_section(found: dict) -> str:
    """DeepSeek-V3 as a whole: each layer kind's parameters, bytes and estimate, the
    whole model's bytes, and the fewest GPUs of each target whose memory holds it."""
    from tilefoundry.models import CTX_LEN, model_named
    from tilefoundry.models.reduce_config import constants

    model = model_named("deepseek-v3-mla")
    c = constants(model.source.read_text(encoding="utf-8"))
    d, h, e = c["D_MODEL"], c["N_HEADS"], c["EXPERTS"]
    attention = (d * c["Q_RANK"] + c["Q_RANK"] + c["Q_RANK"] * h * (c["NOPE_DIM"] + c["ROPE_DIM"])
                 + d * (c["KV_RANK"] + c["ROPE_DIM"]) + c["KV_RANK"] + h * c["NOPE_DIM"] * c["KV_RANK"]
                 + h * c["KV_RANK"] * c["V_DIM"] + h * c["V_DIM"] * d + 2 * d)
    dense = attention + 3 * d * c["FFN"]
    moe = attention + d * e + 3 * e * d * c["EXPERT_FFN"] + 3 * d * c["SHARED_FFN"]
    cache = CTX_LEN * (c["KV_RANK"] + c["ROPE_DIM"]) * 2  # one layer's latent + RoPE-key rows, bf16
    kinds = (("dense (`layer0`)", c["DENSE_LAYERS"], 2 * dense, "layer0"),
             ("MoE (`layer3`)", c["LAYERS"] - c["DENSE_LAYERS"], 2 * moe + 4 * e, "layer3"))
    root = 2 * (2 * c["VOCAB"] * d + d)
    total = sum(count * (size + cache) for _, count, size, _ in kinds) + root
    params = c["DENSE_LAYERS"] * dense + (c["LAYERS"] - c["DENSE_LAYERS"]) * moe + 2 * c["VOCAB"] * d + d
    lines = ["## DeepSeek-V3 as a whole", "",
             f"Parameters from the config: {params / 1e9:.1f} B (the published 671 B). Per layer kind, at "
             f"`ctx_len` = {CTX_LEN:,} (bf16 weights, the routing bias in f32; the cache is the latent and "
             "RoPE-key rows), with the H200 estimate of one placed layer:", "",
             "| layer kind | layers | weights | cache | estimate-ns per layer (H200) |", "|---|---:|---:|---:|---:|"]
    step = 0
    for name, count, size, child in kinds:
        estimate = found.get(f"DeepSeekV3_H200.{child}", {}).get("estimate_ns")
        step += count * (estimate or 0)
        lines.append(f"| {name} | {count} | {size / 1e9:.2f} GB | {cache / 1e6:.1f} MB "
                     f"| {'—' if estimate is None else f'{estimate:,}'} |")
    for head in ("embed", "lm_head"):
        step += found.get(f"DeepSeekV3_H200.{head}", {}).get("estimate_ns") or 0
    lines += ["", f"The whole model: {total / 1e12:.3f} TB of weights and caches (embedding and head "
              f"{root / 1e9:.2f} GB). A decode step's kernels back to back would take {step / 1e6:.1f} ms "
              "on one H200 that held it all (the sum of the per-layer estimates above and the head's). "
              "The fewest GPUs whose memory holds the weights and caches (no activations, no "
              "parallelism's copies or workspace: a lower bound):", ""]
    for placed in model.placed_roots:
        capacity = found.get(f"{placed.root}.layer0", {}).get("footprint", {}).get("gmem", (0, None))[1]
        if capacity:
            lines.append(f"- `{placed.target}` ({capacity / 1e9:.1f} GB each): {-(-total // capacity)} GPUs")
    return "\n".join(lines) + "\n"


def checkpoint_section() -> str:
    """How each model reads a Hugging Face checkpoint, from its file's tables."""
    from tilefoundry.models import MODELS
    from tilefoundry.models.hf_twin import HF_MODULES
    from tilefoundry.models.reduce_config import constants

    lines = []
    for model in MODELS:
        found = constants(model.source.read_text(encoding="utf-8"))
        modelled, left = FIDELITY[model.name]
        lines += [f"### {model.name}", "", f"Modelled: {modelled}. Not modelled: {left}.", ""]
        if "HF_LAYER_WEIGHTS" not in found:
            continue
        twin = HF_MODULES.get(model.name, "none yet")
        config = ", ".join(f"`{k}` = {v}" for k, v in found["HF_CONFIG"].items())
        lines += [f"Checked against `transformers`' {twin} (`check --against hf:{model.name}`); "
                  f"config.json `model_type` `{found.get('HF_MODEL_TYPE', '')}`, fields held against "
                  f"the constants: {config}.", "",
                  "| weight | checkpoint tensor | reading |", "|---|---|---|"]
        for table in ("HF_LAYER_WEIGHTS", "HF_ROOT_WEIGHTS"):
            for ours, (theirs, reading) in found[table].items():
                where = "layer N: " if table == "HF_LAYER_WEIGHTS" else ""
                lines.append(f"| {where}`{ours}` | `{theirs}` | {reading or 'as stored'} |")
        lines.append("")
    return "\n".join(lines)


CHECKPOINTS = """\
## Checkpoints and transformers

`tilefoundry run` / `check --weights DIR` read a Hugging Face checkpoint directory
(`config.json`, `model.safetensors` or the shards its `model.safetensors.index.json`
lists) through the model file's own tables (`HF_CONFIG`, `HF_LAYER_WEIGHTS`,
`HF_ROOT_WEIGHTS`; `src/tilefoundry/models/checkpoints.py`). A config field that
differs from the file's constant is refused in one line naming it, unless every
differing size is smaller: then the selection runs on a reduced copy of the file
(`tilefoundry.models.reduced(name, **dims)`: the placement constants each become
the largest power of two, at most the published value, dividing every figure the
file's `REDUCE_RULES` lists, and the file's `REDUCE_REQUIRES` must hold).
`HF_FIXED` lists fields that must hold one value (a routing rule, the layer
pattern; DeepSeek-V3 refuses a `quantization_config`: its published FP8 files
are read after DeepSeek's cast to bf16). A reading `T` transposes a Linear's
(out, in) weight to our (in, out); `rows(a, b)` and `heads_rows(h, a, b)` split a
fused projection (per head block for DeepSeek's `q_b_proj` / `kv_b_proj`);
`stack` reads the experts `{e}` onto a new first axis; `deinterleave(n)` /
`heads_deinterleave(h, n)` reorder DeepSeek's RoPE rows from interleaved pairs
(2i, 2i + 1) to the halves (i, i + n/2) our `tf.rope` rotates (the same rotation,
exactly); `reshape` / `transpose` lay a block out. The RoPE tables `cos_t` /
`sin_t` are built from `rope_theta` (YaRN-scaled where config.json's rope
scaling is yarn, as DeepSeek-V3's) where `--inputs` gives none; every array is
cast to its parameter's dtype. Every attention takes its valid length as the
position: cache rows past `pos` (and, for Phi-3, before its window) are masked,
so a step is right at any position of the cache; the block-walking attentions
also skip the blocks past the attended length (above, `kv_len`).

`check --against hf:<model> --weights DIR` runs `transformers`' module of the same
architecture (`pip install 'tilefoundry[hf]'`: torch 2.13.0, transformers 5) on
the same checkpoint and cache: a layer selection against the loaded model's
decoder layer, the decode step against the causal LM (`tests/models/test_hf_twin.py`:
logical and placed layer and a decode step of two layers, positions 0, 13, 31 (past
Phi-3's window and Gemma-2's ring; again at `kv_len` = pos + 1), f32 within 1e-4, bf16 2e-2;
Gemma-2's global layer, DeepSeek-V3's MoE layer too; Mamba-2 over random conv windows
and SSM states, which transformers' cache holds as its own). Every published model has
a twin; qwen3-moe-shared, the zoo's own shape, has none.

{checkpoints}
"""


def page(found: dict) -> str:
    """The whole page from the summaries of every row."""
    from tilefoundry.models import MODELS

    models = "\n".join(f"| `{m.name}` | `{m.file}` | {m.config} | {m.layers} | {m.architecture} |"
                       for m in MODELS)
    tables = []
    for model in MODELS:
        for placed in model.placed_roots:
            rows = [s for s in doc_selections(model) if s.target == placed.target]
            tables += [f"### {model.name} on `{placed.target}` (`{placed.root}`)", "",
                       "| selection | ideal-ns | predicted-ns | ratio | estimate-ns (bound) | bound-by "
                       "| smem/CTA | rmem/CTA | costliest statements |",
                       "|---|---:|---:|---:|---:|---|---:|---:|---|",
                       *(_row(s, found) for s in rows), ""]
            steps = [s for s in rows if s.kind == "decode-step" and found[s.selector]["breakdown"]]
            tables += [_breakdown_line(found[s.selector]["breakdown"]) + "\n" for s in steps]
    untimed = any(found[s.selector]["predicted_ns"] is None for m in MODELS for s in doc_selections(m))
    b200_note = ("\nOn the B200 a predicted time is stated only where the program does no "
                 "special-function work: the B200 document states no per-CTA rate for it "
                 "(`rsqrt`, `exp`; companions §6.5, §6.8), so the performance family refuses "
                 "those programs (`target states no one-unit throughput for 'special' work at "
                 "'cta'`) and the tables show `—`.\n" if untimed else "")
    paragraphs = "\n\n".join(PARAGRAPHS[m.name] for m in MODELS)
    text = INTRO.replace("## Figures\n", CHECKPOINTS + "\n" + deepseek_section(found) + "\n## Figures\n", 1)
    for key, value in (("models", models), ("paragraphs", paragraphs), ("b200_note", b200_note),
                       ("checkpoints", checkpoint_section()), ("tables", "\n".join(tables) + "\n"),
                       ("attended", attended_table(found))):
        text = text.replace("{" + key + "}", value)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/models.md is stale")
    args = parser.parse_args(argv)
    text = page(analyse_all(lambda name: print(f"analysing {name}", file=sys.stderr)))
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print("docs/models.md is stale: run python tools/gen_models_doc.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
