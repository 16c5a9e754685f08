"""Issue 37 item 7: measure on a CUDA GPU what the target documents state for the
`estimate` family: HBM copy bandwidth, L2 bandwidth (a buffer that fits the L2, read
again and again), kernel launch cost (an empty kernel, back to back on a stream and
replayed from a CUDA graph) and one bf16 GEMM. Each figure is printed with the GPU's
name and the software versions, so that it can be recorded beside the published source
in hardware/*.toml, naming the GPU.

Needs PyTorch with CUDA; without them it prints one line and exits 0 (nothing in the
project depends on a device being present).

Run: python bench/device/estimate_facts.py [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

GIB = 1 << 30


def device_or_none():
    """(torch, why): torch when a CUDA device is usable, else None and the reason."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA device"
    return torch, ""


def timed_ms(torch, fn, iters: int, warmup: int = 3) -> float:
    """Mean milliseconds of fn() over iters runs, timed with CUDA events on the stream."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iters


def copy_bandwidth(torch) -> dict:
    """Device copy of a 1 GiB buffer (far past any L2): read + written bytes / time."""
    src = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = timed_ms(torch, lambda: dst.copy_(src), iters=20)
    return {"bytes_moved": 2 * GIB, "ms": ms, "GB_per_s": 2 * GIB / (ms * 1e-3) / 1e9}


def l2_bandwidth(torch) -> dict:
    """A read-only sum over a buffer of a quarter of the L2, repeated: after the first
    pass it is resident, so bytes read / time is the L2's read bandwidth."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    x = torch.ones(l2 // 4 // 4, dtype=torch.float32, device="cuda")
    out = torch.empty((), dtype=torch.float32, device="cuda")
    ms = timed_ms(torch, lambda: torch.sum(x, dim=0, out=out), iters=200, warmup=10)
    read = x.numel() * 4
    return {"l2_bytes": l2, "buffer_bytes": read, "ms": ms, "GB_per_s": read / (ms * 1e-3) / 1e9}


def launch_cost(torch) -> dict:
    """An empty kernel (torch.cuda._sleep(0) spins zero cycles): the GPU time per launch
    back to back on a stream, the host time to issue one, and the time per launch when
    the same launches are replayed from a captured CUDA graph."""
    n = 1000
    empty = lambda: torch.cuda._sleep(0)  # noqa: E731
    stream_ms = timed_ms(torch, lambda: [empty() for _ in range(n)], iters=5)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        empty()
    host_us = (time.perf_counter() - start) / n * 1e6
    torch.cuda.synchronize()
    graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph):
            for _ in range(n):
                empty()
    graph_ms = timed_ms(torch, graph.replay, iters=5)
    return {"launches": n, "stream_us_per_launch": stream_ms * 1e3 / n,
            "host_issue_us_per_launch": host_us, "graph_us_per_launch": graph_ms * 1e3 / n}


def bf16_gemm(torch, size: int = 8192) -> dict:
    """One square bf16 GEMM through torch.matmul (cuBLAS), f32 accumulation."""
    a = torch.randn(size, size, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(size, size, dtype=torch.bfloat16, device="cuda")
    ms = timed_ms(torch, lambda: torch.matmul(a, b), iters=20)
    return {"m": size, "n": size, "k": size, "ms": ms, "TFLOP_per_s": 2 * size**3 / (ms * 1e-3) / 1e12}


def conditions(torch) -> dict:
    props = torch.cuda.get_device_properties(0)
    return {"gpu": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
            "memory_bytes": props.total_memory, "torch": torch.__version__, "cuda": torch.version.cuda,
            "compute_capability": f"{props.major}.{props.minor}"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    torch, why = device_or_none()
    if torch is None:
        print(f"estimate_facts: skipped: {why}")
        return 0
    facts = {"conditions": conditions(torch), "copy": copy_bandwidth(torch), "l2": l2_bandwidth(torch),
             "launch": launch_cost(torch), "gemm_bf16": bf16_gemm(torch)}
    if args.json:
        print(json.dumps(facts, indent=1))
        return 0
    gpu = facts["conditions"]["gpu"]
    print(f"GPU {gpu} (sm {facts['conditions']['compute_capability']}, "
          f"{facts['conditions']['sm_count']} SMs), torch {facts['conditions']['torch']}, "
          f"CUDA {facts['conditions']['cuda']}")
    print(f"{gpu}: HBM copy {facts['copy']['GB_per_s']:,.0f} GB/s (1 GiB, read + write)")
    print(f"{gpu}: L2 read {facts['l2']['GB_per_s']:,.0f} GB/s "
          f"({facts['l2']['buffer_bytes']:,} B resident of {facts['l2']['l2_bytes']:,} B L2)")
    launch = facts["launch"]
    print(f"{gpu}: empty-kernel launch {launch['stream_us_per_launch']:.2f} us/launch on a stream "
          f"(host issue {launch['host_issue_us_per_launch']:.2f} us), "
          f"{launch['graph_us_per_launch']:.2f} us/launch from a CUDA graph")
    gemm = facts["gemm_bf16"]
    print(f"{gpu}: bf16 GEMM {gemm['m']}^3 {gemm['ms'] * 1e6:,.0f} ns, {gemm['TFLOP_per_s']:.0f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
