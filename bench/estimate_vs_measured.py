"""Issue 37 item 3: the `estimate` family held against published kernel measurements.

Each case is a DSL program under bench/estimate_cases/ written as the measured kernel
is built, the dims and target of the measurement, the published figure exactly as its
source states it (time, TFLOP/s or bandwidth: converted here to nanoseconds through the
work the case states), the source (paper with table or figure, vendor document, or
repository file with its URL) and the conditions. Per case it prints our `estimate`
ns, our `performance` ns, the measured ns, estimate / measured, and what the peer
analytical tools predict where they run here; then the geometric-mean ratio and the
worst case. The issue's goal (every case within 1.3x, geometric mean within 1.15x) is
the bench's reading, never asserted.

Run: python bench/estimate_vs_measured.py [--markdown | --json] [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

CASES_DIR = Path(__file__).resolve().parent / "estimate_cases"
GOAL_EACH = 1.3
GOAL_GEOMEAN = 1.15

# ----------------------------------------------------------------------- sources
FAST_CU = ("https://github.com/pranjalssh/fast.cu (README.md, 'Benchmarks', commit a1bb7b2): "
           "'Average elapsed time' of KERNEL {kernel} at size {size}")
FAST_CU_COND = ("H100 SXM; BF16 A (row-major) x B (column-major), FP32 accumulation, C column-major, "
                "M=N=K; normal(0, 1) inputs; {what}")
PYPTX = ("https://pyptx.dev/performance/ ('Blackwell GEMM (tcgen05, bf16)' table, cuBLAS TFLOPS "
         "column)")
PYPTX_COND = ("B200 (the page: ~2250 TFLOPS bf16 dense peak); cuBLAS through PyTorch 2.8 / CUDA 12.8; "
              "CUDA events over 20-200 iterations after warmup; bf16 in/out")
DEEPGEMM = ("https://github.com/deepseek-ai/DeepGEMM (README as first published, Feb 2025, "
            "'Performance', table 'Normal GEMMs for dense models', Computation column)")
DEEPGEMM_COND = ("H800 SXM5 (132 SMs and the H100 SXM5's SM clock, tensor peaks and 3.35 TB/s HBM3; "
                 "it differs from the H100 SXM in NVLink only), NVCC 12.8; FP8 e4m3 NT GEMM with "
                 "1x128 (A) and 128x128 (B) f32 scales, bf16 out; DeepGEMM JIT kernels")
FA3 = ("Shah et al., 'FlashAttention-3', arXiv:2407.08608 (the arXiv text, whose abstract states up "
       "to 740 TFLOPs/s in FP16), Section 4.1, the forward-speed figure, panel 'Attention forward "
       "speed, head dim {hd} (H100 80GB SXM5)' without causal mask, the FlashAttention-3 bar at {seq}")
FA3_COND = ("H100 80GB SXM5 (700 W); BF16; forward, non-causal; batch x seqlen = 16k tokens, "
            "hidden 2048 ({heads} heads of dim {hd}); FLOPs counted as 4 x seqlen^2 x head_dim x heads "
            "x batch (the paper's convention)")
CUDA_STUDY = ("https://github.com/ahmadsharif1/cuda_study (README.md, '{section}', row "
              "'{row}', commit a305873)")
CUDA_STUDY_COND = ("H100 SXM5 80 GB HBM3 at the observed 1.98 GHz boost clock, CUDA 12.8; f32 copy "
                   "src -> dst, bandwidth = 2 x bytes / time, CUDA events over 20 iterations; {what}")
QUACK = ("Guo, Zadouri, Dao, 'Getting Memory-bound Kernels to Speed-of-Light' (2025-07-10), "
         "https://github.com/Dao-AILab/quack/blob/main/media/2025-07-10-membound-sol.md, "
         "section 'NCU profile (softmax kernel)': 'DRAM throughput ... at 3.01 TB/s'")
QUACK_COND = ("H100 80GB HBM3 (Intel Xeon Platinum 8468 host); FP32 softmax, batch 16K rows x "
              "131K reduction; QuACK CuTe-DSL kernel, cluster of 4 CTAs x 256 threads, 128-bit loads; "
              "Nsight Compute DRAM throughput")
SGLANG_NORM = ("https://github.com/sgl-project/sglang/pull/32994 (description, 'Kernel Benchmark "
               "H100', rmsnorm_fp8_quant_h4096_residualFalse, column 'rmsnorm_quant (fused, default) "
               "(latency (ms))', num_tokens {tokens})")
SGLANG_NORM_COND = ("H100; bf16 input, hidden 4096, no residual; fused RMSNorm + static FP8 (e4m3) "
                    "quantisation (FlashInfer's fused kernel as SGLang dispatches it); "
                    "benchmark/kernels/bench_fused_rmsnorm_fp8_quant.py")
HUMMING = ("https://github.com/inclusionAI/humming/pull/2 (description, 'Kernel Benchmarks', table "
           "for dense n8192 k8192, column torch-w16a16, shape_m {m})")
HUMMING_COND = ("H100 (form factor not stated); float16 activations and weights (torch-w16a16: "
                "PyTorch's fp16 linear, cuBLAS); N = K = 8192; metric TFLOPS = 2 m N K / time")
FLASHINFER_SPLITK = ("https://github.com/flashinfer-ai/flashinfer/pull/3847 (description, 'Perf "
                     "benchmark', row M={m} N=2304 K=6144, column 'Split-K (us)')")
FLASHINFER_SPLITK_COND = ("SM100 (the PR names the architecture, not the board: the B200 family); "
                          "CuTe-DSL MXFP8 dense GEMM with split-K autotuned over {2, 4}; the "
                          "program splits K four ways")


@dataclass(frozen=True)
class Case:
    """One published measurement and the program of the kernel it measured."""

    name: str
    program: str  # "file.py:Module" under bench/estimate_cases/
    dims: dict
    target: str
    value: float  # the figure exactly as published
    unit: str  # "s", "ms", "us", "TFLOP/s", "GB/s" or "TB/s"
    work: int  # flops (for TFLOP/s) or bytes moved (for GB/s, TB/s); 0 for a time
    source: str
    conditions: str
    peer: dict = field(default_factory=dict)  # the shape a peer tool is asked about

    @property
    def measured_ns(self) -> float:
        """The published figure as nanoseconds: a time directly, a rate through the work."""
        scale = {"s": 1e9, "ms": 1e6, "us": 1e3}
        if self.unit in scale:
            return self.value * scale[self.unit]
        per_second = {"TFLOP/s": 1e12, "GB/s": 1e9, "TB/s": 1e12}[self.unit]
        return self.work / (self.value * per_second) * 1e9


def _gemm(name, program, m, n, k, target, value, unit, source, conditions, *, tile_n=128, fp8=False):
    dims = ({"m_tiles": m // 128, "n_tiles": n // tile_n, "k_blocks": k // 128, "tile_n": tile_n}
            if fp8 else {"m_tiles": m // 128, "n_tiles": n // tile_n, "k": k})
    return Case(name, program, dims, target, value, unit, 2 * m * n * k if unit == "TFLOP/s" else 0,
                source, conditions, {"kind": "gemm", "m": m, "n": n, "k": k,
                                     "dtype": "fp8" if fp8 else "bf16"})


def _fa3(hd, seq, tflops):
    heads, batch = 2048 // hd, 16384 // seq
    label = f"{seq // 1024}k"
    return Case(f"fa3_fwd_hd{hd}_seq{label}", f"flash_attention.py:FlashAttentionHd{hd}",
                {"bh": batch * heads, "q_tiles": seq // 128}, "nvidia.h100_sxm", tflops, "TFLOP/s",
                4 * seq * seq * hd * heads * batch, FA3.format(hd=hd, seq=label),
                FA3_COND.format(heads=heads, hd=hd),
                {"kind": "attention", "batch": batch, "heads": heads, "seq": seq, "head_dim": hd})


def deepgemm_block_n(m: int, n: int, sms: int = 132) -> int:
    """The CTA tile width DeepGEMM's JIT chose for a normal GEMM as first published
    (deep_gemm/jit_kernels/gemm.py, get_best_configs): BLOCK_M is 128 for M > 64, and of
    the BLOCK_N in 16, 24, ..., 128 it takes the fewest waves over the SMs, then the
    fullest last wave, then the narrowest."""
    block_m = 64 if m <= 64 else 128

    def rank(block_n):
        blocks = -(-m // block_m) * -(-n // block_n)
        waves = -(-blocks // sms)
        return waves, -(blocks % sms or sms), block_n

    return min(range(16, 129, 8), key=rank)


def _deepgemm(m, n, k, tflops):
    tile_n = deepgemm_block_n(m, n)
    blocks = (f"; 128x{tile_n} CTA tiles, the block shape DeepGEMM's published selection rule "
              "(deep_gemm/jit_kernels/gemm.py, get_best_configs) gives on 132 SMs")
    return _gemm(f"deepgemm_fp8_{m}x{n}x{k}", "gemm.py:GemmFp8BlockScaled", m, n, k, "nvidia.h100_sxm",
                 tflops, "TFLOP/s", DEEPGEMM + f", row M={m} N={n} K={k}", DEEPGEMM_COND + blocks,
                 tile_n=tile_n, fp8=True)


_MIB = 1 << 20
CASES = (
    # -- bf16 GEMM, H100: cuBLAS and a 128x256-tile warp-specialised kernel (fast.cu)
    _gemm("cublas_bf16_8192", "gemm.py:GemmBf16", 8192, 8192, 8192, "nvidia.h100_sxm", 0.001378, "s",
          FAST_CU.format(kernel=0, size=8192), FAST_CU_COND.format(what="KERNEL 0 = a cuBLAS call")),
    _gemm("cublas_bf16_6144", "gemm.py:GemmBf16", 6144, 6144, 6144, "nvidia.h100_sxm", 0.000626, "s",
          FAST_CU.format(kernel=0, size=6144), FAST_CU_COND.format(what="KERNEL 0 = a cuBLAS call")),
    _gemm("fastcu_k11_bf16_8192", "gemm.py:GemmBf16Wide", 8192, 8192, 8192, "nvidia.h100_sxm", 0.001361,
          "s", FAST_CU.format(kernel=11, size=8192),
          FAST_CU_COND.format(what="KERNEL 11, the README's best hand-written kernel: kernel 7's "
                              "128x256 CTA tiles (m64n256k16 WGMMA), TMA loads, producer/consumer "
                              "warpgroups and 2-CTA clusters with A multicast, plus a Hilbert-curve "
                              "tile order and TMA stores"), tile_n=256),
    _gemm("fastcu_k11_bf16_6144", "gemm.py:GemmBf16Wide", 6144, 6144, 6144, "nvidia.h100_sxm", 0.000584,
          "s", FAST_CU.format(kernel=11, size=6144),
          FAST_CU_COND.format(what="KERNEL 11 as above"), tile_n=256),
    # -- bf16 GEMM, B200: cuBLAS
    _gemm("cublas_bf16_b200_2048", "gemm.py:GemmBf16Wide", 2048, 2048, 2048, "nvidia.b200_sxm", 1006,
          "TFLOP/s", PYPTX + ", row 2048^3", PYPTX_COND, tile_n=256),
    _gemm("cublas_bf16_b200_4096", "gemm.py:GemmBf16Wide", 4096, 4096, 4096, "nvidia.b200_sxm", 1532,
          "TFLOP/s", PYPTX + ", row 4096^3", PYPTX_COND, tile_n=256),
    _gemm("cublas_bf16_b200_8192", "gemm.py:GemmBf16Wide", 8192, 8192, 8192, "nvidia.b200_sxm", 1610,
          "TFLOP/s", PYPTX + ", row 8192^3", PYPTX_COND, tile_n=256),
    # -- FP8 GEMM (DeepGEMM on H800 = H100 SXM compute and HBM): square-ish and skinny (M = 128)
    _deepgemm(4096, 7168, 16384, 1358),
    _deepgemm(4096, 4096, 7168, 1304),
    _deepgemm(4096, 7168, 2048, 1025),
    _deepgemm(128, 4096, 7168, 533),
    _deepgemm(128, 7168, 16384, 645),
    _deepgemm(128, 7168, 2048, 510),
    # -- FlashAttention-3 forward, H100
    _fa3(128, 1024, 565),
    _fa3(128, 4096, 638),
    _fa3(128, 16384, 648),
    _fa3(64, 2048, 460),
    _fa3(64, 16384, 497),
    # -- memory-bound kernels, H100
    Case("copy_hbm_256mib", "copy_kernel.py:Copy", {"ctas": 256 * _MIB // 16384, "chunk": 4096}, "nvidia.h100_sxm", 2034, "GB/s",
         2 * 256 * _MIB, CUDA_STUDY.format(section="3b. HBM Bandwidth Scaling", row="528 blocks (4x SMs)"),
         CUDA_STUDY_COND.format(what="a 256 MB buffer (taken as 2^28 bytes); micro_benchmarks/copy_bw.cu's "
                                "SM-scaling kernel: 528 blocks of 256 threads, grid-stride, float4 loads "
                                "unrolled 4 (16 KiB per block per step)")),
    Case("copy_l2_16mib", "copy_kernel.py:Copy", {"ctas": 16 * _MIB // 8192, "chunk": 2048}, "nvidia.h100_sxm", 3574, "GB/s",
         2 * 16 * _MIB, CUDA_STUDY.format(section="3c. L2 Bandwidth Scaling", row="528 blocks (4x SMs)"),
         CUDA_STUDY_COND.format(what="a 16 MB working set (2^24 bytes; 32 MB src + dst fit the 50 MB "
                                "L2), micro_benchmarks/l2_bw.cu: 528 blocks of 256 threads, grid-stride, "
                                "f32 __ldcg/__stcg unrolled 8 (8 KiB per block per step), L2 warmed "
                                "before timing")),
    Case("softmax_f32_16k_x_131k", "softmax.py:ClusterRowSoftmax", {"rows": 16384, "share": 131072 // 8},
         "nvidia.h100_sxm", 3.01, "TB/s", 2 * 16384 * 131072 * 4, QUACK, QUACK_COND),
    Case("rmsnorm_fp8quant_h4096_t16384", "row_norm.py:RmsNormFp8Quant", {"tokens": 16384},
         "nvidia.h100_sxm", 0.094088, "ms", 0, SGLANG_NORM.format(tokens="16384.0"), SGLANG_NORM_COND),
    Case("rmsnorm_fp8quant_h4096_t8192", "row_norm.py:RmsNormFp8Quant", {"tokens": 8192},
         "nvidia.h100_sxm", 0.049283, "ms", 0, SGLANG_NORM.format(tokens="8192.0"), SGLANG_NORM_COND),
    Case("gemv_f16_m1_8192x8192", "gemv.py:DecodeGemvF16", {"m": 1}, "nvidia.h100_sxm", 2.30, "TFLOP/s",
         2 * 1 * 8192 * 8192, HUMMING.format(m=1), HUMMING_COND,
         {"kind": "gemm", "m": 1, "n": 8192, "k": 8192, "dtype": "fp16"}),
    Case("gemv_f16_m4_8192x8192", "gemv.py:DecodeGemvF16", {"m": 4}, "nvidia.h100_sxm", 9.26, "TFLOP/s",
         2 * 4 * 8192 * 8192, HUMMING.format(m=4), HUMMING_COND,
         {"kind": "gemm", "m": 4, "n": 8192, "k": 8192, "dtype": "fp16"}),
    # -- split-K (a Partial completed across CTAs), B200-family
    Case("splitk_mxfp8_m1_2304x6144", "split_k.py:SplitKFp8", {"m": 1}, "nvidia.b200_sxm", 5.7248, "us", 0,
         FLASHINFER_SPLITK.format(m=1), FLASHINFER_SPLITK_COND,
         {"kind": "gemm", "m": 1, "n": 2304, "k": 6144, "dtype": "fp8"}),
    Case("splitk_mxfp8_m16_2304x6144", "split_k.py:SplitKFp8", {"m": 16}, "nvidia.b200_sxm", 6.3152, "us", 0,
         FLASHINFER_SPLITK.format(m=16), FLASHINFER_SPLITK_COND,
         {"kind": "gemm", "m": 16, "n": 2304, "k": 6144, "dtype": "fp8"}),
)

#: dims small enough to analyse every case program in a test (tests/bench)
SMALL_DIMS = {
    "gemm.py:GemmBf16": {"m_tiles": 2, "n_tiles": 2, "k": 128},
    "gemm.py:GemmBf16Wide": {"m_tiles": 2, "n_tiles": 1, "k": 128},
    "gemm.py:GemmFp8BlockScaled": {"m_tiles": 2, "n_tiles": 2, "k_blocks": 2, "tile_n": 128},
    "flash_attention.py:FlashAttentionHd128": {"bh": 2, "q_tiles": 2},
    "flash_attention.py:FlashAttentionHd64": {"bh": 2, "q_tiles": 2},
    "copy_kernel.py:Copy": {"ctas": 4, "chunk": 4096},
    "softmax.py:ClusterRowSoftmax": {"rows": 2, "share": 1024},
    "row_norm.py:RmsNorm": {"tokens": 4},
    "row_norm.py:RmsNormFp8Quant": {"tokens": 4},
    "gemv.py:DecodeGemvF16": {"m": 1},
    "split_k.py:SplitKFp8": {"m": 1},
}


# ----------------------------------------------------------------------- peer tools


def target_fact(target: str, *path: str) -> float:
    """One stated figure of a target document (hardware/*.toml, with its source there):
    the peer tools are given the very peaks our targets state."""
    import tomllib
    from importlib.resources import files

    document = tomllib.loads((files("tilefoundry.target") / "hardware" /
                              f"{target.replace('.', '_')}.toml").read_text())
    node = document["facts"]
    for key in path:
        node = node[key]
    return float(node["value"])


class GenZPeer:
    """GenZ (pip `genz-llm`): its operator roofline (GenZ.operators GEMM, Logit + Attend)
    on a GenZ System holding the target's stated tensor peak and HBM bandwidth, at
    GenZ's default efficiencies (1.0). Kernels it has no operator for answer None."""

    name = "genz"

    def predict_ns(self, case: Case):
        import warnings

        from GenZ.operators import GEMM, Attend, Logit
        from GenZ.system import System
        from GenZ.unit import Unit

        shape = case.peer
        if shape.get("kind") not in ("gemm", "attention"):
            return None
        bits = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8"}[shape.get("dtype", "bf16")]
        system = System(flops=target_fact(case.target, "throughput", "bf16") / 1e12,
                        offchip_mem_bw=target_fact(case.target, "memory", "hbm", "bandwidth") / 1e9,
                        bits=bits)
        unit = Unit()
        key = f"Latency ({unit.unit_time})"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if shape["kind"] == "gemm":  # GenZ's GEMM: B, M (weight rows), N (tokens), K, type 3
                ops = [GEMM(["gemm", 1, shape["n"], shape["m"], shape["k"], 3], density=(1, 1, 1))]
            else:  # unfused attention: scores (Logit, type 4) then P @ V (Attend, type 5)
                dims = [shape["batch"], shape["heads"], shape["seq"], shape["seq"], shape["head_dim"],
                        shape["heads"]]
                ops = [Logit(["logit", *dims, 4], density=(1, 1, 1)),
                       Attend(["attend", *dims, 5], density=(1, 1, 1))]
            return float(sum(op.get_roofline(system, unit)[key] for op in ops)) * _NS_PER[unit.unit_time]


_NS_PER = {"msec": 1e6, "usec": 1e3, "sec": 1e9}


def available_peers() -> dict:
    """The peer tools that run here, by name."""
    try:
        import GenZ.operators  # noqa: F401
    except ImportError:
        return {}
    return {"genz": GenZPeer()}


def unavailable_peers() -> dict:
    """Why a peer tool prints `-`: said once, in the summary."""
    why = {"llm-analysis": (
        "llm-analysis prices whole transformer layers from a model config (its latency API takes "
        "batch and sequence of a model), with no single-kernel entry; the bench does not rebuild its "
        "formula, so it predicts no case here")}
    if "genz" not in available_peers():
        why["genz"] = ("genz-llm is not installed (pip install '.[bench]' installs it); GenZ predicts "
                       "GEMM and attention cases only (it has no copy, norm or softmax operator)")
    else:
        why["genz"] = ("GenZ has no copy, row-norm or softmax operator: those cases print `-`")
    return why


# ----------------------------------------------------------------------- running


def selection(case_or_program) -> str:
    """The "file.py:Module" selection of a case program, as a path the API loads."""
    program = getattr(case_or_program, "program", case_or_program)
    file, module = program.split(":")
    return f"{CASES_DIR / file}:{module}"


def estimate_available() -> bool:
    """Whether this checkout has the `estimate` family (issue 37 item 1)."""
    from tilefoundry import api

    return "estimate" in api.FAMILIES


def ours(case: Case) -> dict:
    """Our figures for one case: estimate (None without the family), performance, roofline."""
    from tilefoundry import api

    families = ("estimate", "performance", "roofline") if estimate_available() else ("performance", "roofline")
    figures = api.analyze(selection(case), dims=case.dims, target=case.target, families=families).figures()
    return {"estimate_ns": figures.get("estimate_ns"), "bound_by": figures.get("estimate_bound_by"),
            "performance_ns": figures["predicted_ns"], "ideal_ns": figures["ideal_ns"]}


def estimate_without(case: Case, effect: str) -> int:
    """Our estimate for one case with one effect switched off."""
    from tilefoundry import api

    figures = api.analyze(selection(case), dims=case.dims, target=case.target, families=("estimate",),
                          estimate={"disabled": [effect]}).figures()
    return figures["estimate_ns"]


def contributions(cases) -> list:
    """What each effect contributes: the geometric-mean ratio and the cases within
    the goal with that effect switched off, beside the full model's."""
    from tilefoundry.analysis.estimate import EFFECTS

    rows = []
    for effect in EFFECTS:
        ratios = [estimate_without(c, effect) / c.measured_ns for c in cases]
        rows.append({"effect": effect, "geomean": geomean(ratios),
                     "within_goal": sum(1 for r in ratios if 1 / GOAL_EACH <= r <= GOAL_EACH)})
    return rows


def ratio(ours_ns, measured_ns):
    return None if ours_ns is None else ours_ns / measured_ns


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def worst(rows, key):
    """The row whose ratio is furthest from 1, either way."""
    rated = [r for r in rows if r[key]]
    return max(rated, key=lambda r: abs(math.log(r[key])), default=None)


def run(cases, peers) -> dict:
    rows = []
    for case in cases:
        figures = ours(case)
        row = {"name": case.name, "target": case.target, "program": case.program, "dims": case.dims,
               "measured": f"{case.value:g} {case.unit}", "measured_ns": case.measured_ns, **figures,
               "estimate_ratio": ratio(figures["estimate_ns"], case.measured_ns),
               "performance_ratio": ratio(figures["performance_ns"], case.measured_ns),
               "peers": {name: peer.predict_ns(case) for name, peer in peers.items()},
               "source": case.source, "conditions": case.conditions}
        rows.append(row)
    summary = {}
    for key in ("estimate_ratio", "performance_ratio"):
        far = worst(rows, key)
        summary[key] = {
            "geomean": geomean(r[key] for r in rows),
            "worst": far and {"name": far["name"], "ratio": far[key]},
            "within_goal": sum(1 for r in rows if r[key] and 1 / GOAL_EACH <= r[key] <= GOAL_EACH),
            "cases": sum(1 for r in rows if r[key])}
    for name in peers:
        ratios = [ratio(r["peers"][name], r["measured_ns"]) for r in rows if r["peers"].get(name)]
        summary[name] = {"geomean": geomean(ratios), "cases": len(ratios),
                         "within_goal": sum(1 for x in ratios if 1 / GOAL_EACH <= x <= GOAL_EACH)}
    return {"rows": rows, "summary": summary,
            "peers_unavailable": {name: why for name, why in unavailable_peers().items()}}


# ----------------------------------------------------------------------- printing


def _ns(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _x(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


COLUMNS = ("case", "target", "estimate ns", "bound by", "performance ns", "measured ns",
           "estimate/measured", "performance/measured", "genz ns", "measured as")


def _cells(row) -> list:
    return [row["name"], row["target"], _ns(row["estimate_ns"]), row["bound_by"] or "-", _ns(row["performance_ns"]),
            _ns(row["measured_ns"]), _x(row["estimate_ratio"]), _x(row["performance_ratio"]),
            _ns(row["peers"].get("genz")), row["measured"]]


def _summary_lines(result) -> list:
    lines = []
    for key, label in (("estimate_ratio", "estimate"), ("performance_ratio", "performance")):
        s = result["summary"][key]
        if not s["cases"]:
            lines.append(f"{label}: no figures (the family did not run in this checkout)")
            continue
        lines.append(f"{label}: geometric-mean ratio {s['geomean']:.3f}x over {s['cases']} cases "
                     f"(goal within {GOAL_GEOMEAN}x); {s['within_goal']}/{s['cases']} within {GOAL_EACH}x; "
                     f"worst {s['worst']['name']} at {s['worst']['ratio']:.2f}x")
    for name, why in result["peers_unavailable"].items():
        s = result["summary"].get(name)
        if s and s["cases"]:
            lines.append(f"{name}: geometric-mean ratio {s['geomean']:.3f}x over the {s['cases']} cases it "
                         f"predicts; {s['within_goal']}/{s['cases']} within {GOAL_EACH}x")
        lines.append(f"{name}: {why}")
    return lines


def print_text(result) -> None:
    widths = [max(len(c), *(len(_cells(r)[i]) for r in result["rows"])) for i, c in enumerate(COLUMNS)]
    print("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)))
    for row in result["rows"]:
        print("  ".join(c.ljust(w) for c, w in zip(_cells(row), widths)))
    print()
    for line in _summary_lines(result):
        print(line)


def print_markdown(result) -> None:
    print("| " + " | ".join(COLUMNS) + " | source | conditions |")
    print("|" + "---|" * (len(COLUMNS) + 2))
    for row in result["rows"]:
        print("| " + " | ".join(_cells(row)) + f" | {row['source']} | {row['conditions']} |")
    print()
    for line in _summary_lines(result):
        print(f"- {line}")


def print_contributions(rows, cases: int, markdown: bool) -> None:
    print()
    if markdown:
        print("| effect switched off | geometric-mean ratio | within 1.3x |")
        print("|---|---|---|")
        for row in rows:
            print(f"| {row['effect']} | {row['geomean']:.3f}x | {row['within_goal']}/{cases} |")
        return
    print("what each effect contributes (the estimate with it switched off):")
    for row in rows:
        print(f"  without {row['effect']:<10} geometric-mean ratio {row['geomean']:.3f}x, "
              f"{row['within_goal']}/{cases} within {GOAL_EACH}x")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="the table as markdown (docs/estimate.md)")
    form.add_argument("--json", action="store_true", help="every figure as JSON")
    parser.add_argument("--only", default="", help="the cases whose name contains this text")
    parser.add_argument("--effects", action="store_true",
                        help="also price every case with each effect switched off (what each contributes)")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.only in c.name]
    if not cases:
        parser.error(f"no case name contains {args.only!r}; the cases are {', '.join(c.name for c in CASES)}")
    result = run(cases, available_peers())
    if args.json:
        print(json.dumps({**result, "cases": [asdict(c) for c in cases]}, indent=1, default=str))
    elif args.markdown:
        print_markdown(result)
    else:
        print_text(result)
    if args.effects and estimate_available():
        print_contributions(contributions(cases), len(cases), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
