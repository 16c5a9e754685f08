"""Issue 20 speed and memory targets of `tilefoundry run` (prints, never asserts).

1. Llama-3-8B-style layer0 decode at ctx_len 4096, random weights: wall time
   of the numpy run (`run_logical`) beside a plain numpy implementation of the
   same layer on the same arrays (the floor; it widens bf16 weights to f32 as
   the evaluators do), and the peak RSS of each, measured in its own process,
   beside the arguments' own bytes. Goals: run <= 2x the floor's time, peak
   <= 1.5x the floor's peak.
2. `check --placed` of a placed kernel on 32 CTAs
   (bench/programs/placed_decode_32.py) against its logical run alone. The
   check runs the logical run too, in lockstep. Goal: <= 5x.

Run: python bench/run.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LLAMA = os.path.join(ROOT, "src", "tilefoundry", "models", "llama3_8b.py") + ":Llama3_8B.layer0"

_CHILD = r'''
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {here!r})
from run import floor_layer
from tilefoundry.execution import prepare
from tilefoundry.execute import run_logical
p = prepare({sel!r}, dims={{"ctx_len": 4096}}, seed=0)
args = p.by_name()
live = sum(np.asarray(a).nbytes for a in args.values())
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if {which!r} == "run":
    out = run_logical(p.function, p.arguments)["output[0]"]
else:
    out = floor_layer(args)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": seconds, "peak_kib": peak, "before_kib": base, "live": live,
                  "checksum": float(np.asarray(out, dtype=np.float64).sum())}}))
'''


def floor_layer(a: dict):
    """A plain numpy Llama-3 decode layer: RMSNorm, GQA attention with RoPE
    (rotate-half) over the KV cache after appending the new token, SwiGLU."""
    import numpy as np

    f = lambda t: np.asarray(t).astype(np.float32)  # noqa: E731
    x = f(a["x"])
    pos = int(a["pos"][0])

    def rms(v, w):
        return (v / np.sqrt((v * v).mean(-1, keepdims=True) + 1e-5)) * f(w)

    h = rms(x, a["attn_norm"])
    q = (h @ f(a["w_q"])).reshape(1, 32, 128)
    k = (h @ f(a["w_k"])).reshape(1, 8, 128)
    v = (h @ f(a["w_v"])).reshape(1, 8, 128)
    cos, sin = f(a["cos_t"])[pos], f(a["sin_t"])[pos]

    def rope(t):
        half = t.shape[-1] // 2
        rotated = np.concatenate([-t[..., half:], t[..., :half]], axis=-1)
        return t * cos + rotated * sin

    q, k = rope(q), rope(k)
    k_cache, v_cache = f(a["k_cache"]), f(a["v_cache"])
    k_cache[0, pos], v_cache[0, pos] = k[0], v[0]
    # GQA without copying the cache per query head: (8 kv heads, 4 queries each)
    grouped = q[0].reshape(8, 4, 128)
    keys = k_cache[0].transpose(1, 2, 0)  # (8, 128, ctx)
    values = v_cache[0].transpose(1, 0, 2)  # (8, ctx, 128)
    scores = (grouped @ keys) / np.float32(np.sqrt(128.0))
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    scores /= scores.sum(-1, keepdims=True)
    attn = (scores @ values).reshape(1, 4096)
    x = x + attn @ f(a["w_o"])
    h = rms(x, a["mlp_norm"])
    gate, up = h @ f(a["w_gate"]), h @ f(a["w_up"])
    return x + ((gate / (1 + np.exp(-gate))) * up) @ f(a["w_down"])


def measure(which: str) -> dict:
    code = _CHILD.format(here=HERE, sel=LLAMA, which=which)
    best = None
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or figures["seconds"] < best["seconds"]:
            best = figures
    return best


def placed_ratio() -> tuple[float, float, str]:
    from tilefoundry.execute import check_placed, run_logical
    from tilefoundry.execution import prepare

    p = prepare(os.path.join(HERE, "programs", "placed_decode_32.py"))
    logical = min(_timed(lambda: run_logical(p.function, p.arguments)) for _ in range(3))
    placed = min(_timed(lambda: check_placed(p.function, p.arguments)) for _ in range(3))
    return logical, placed, "bench/programs/placed_decode_32.py (split-K GEMM + epilogue, 32 CTAs)"


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    run, floor = measure("run"), measure("floor")
    print("llama3_8b layer0 decode, ctx_len 4096 (best of 3, own process each):")
    print(f"  run    {run['seconds']:.3f} s  peak RSS {run['peak_kib'] / 1024:.0f} MiB")
    print(f"  floor  {floor['seconds']:.3f} s  peak RSS {floor['peak_kib'] / 1024:.0f} MiB")
    print(f"  arguments {run['live'] / 2**20:.0f} MiB; time ratio {run['seconds'] / floor['seconds']:.2f}x "
          f"(goal <= 2x); peak ratio {run['peak_kib'] / floor['peak_kib']:.2f}x (goal <= 1.5x)")
    print(f"  output sums: run {run['checksum']:.6g}, floor {floor['checksum']:.6g}")
    logical, placed, what = placed_ratio()
    print(f"check --placed of {what}: logical {logical:.3f} s, lockstep {placed:.3f} s, "
          f"ratio {placed / logical:.2f}x of the logical run alone (goal <= 5x)")


if __name__ == "__main__":
    main()
