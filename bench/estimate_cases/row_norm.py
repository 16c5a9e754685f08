"""RMSNorm row kernels as serving engines build them (FlashInfer's, which vLLM and SGLang
dispatch): one CTA per token row, of min(1024, hidden / 8) threads (FlashInfer's
`block_size` for 16-byte bf16 vectors: 512 at hidden 4096, the module's thread
topology); the row is loaded once into registers, its mean square reduced in f32
across the CTA's threads, the row scaled by rsqrt(mean + eps) and by the weight.
`RmsNormFp8Quant` also scales by a static FP8 scale and writes the row as e4m3 (the
fused "rmsnorm + static quant" kernel). `tokens` is the DimVar a case binds; HIDDEN is
a module constant.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

TOKENS = DimVar("tokens", 1, 1 << 17)
HIDDEN = 4096
THREADS = min(1024, HIDDEN // 8)  # FlashInfer's block_size for 16-byte bf16 vectors
EPS = 1e-6
INV_HIDDEN = 1.0 / HIDDEN
FP8_MAX = 448.0


@module(entry="norm", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", TOKENS), Topology("thread", THREADS)))
class RmsNorm:
    @func
    def norm(x: Tensor[(TOKENS, HIDDEN), "bf16"], w: Tensor[(1, HIDDEN), "bf16"]) -> Tensor[(TOKENS, HIDDEN), "bf16"]:
        with Mesh(("cta",), (TOKENS,), ("t",)) as grid:
            x32 = tf.cast(tf.reshard(x, (TOKENS @ grid.t, HIDDEN), "rmem"), "f32")
            w32 = tf.cast(tf.reshard(w, (1, HIDDEN), "rmem"), "f32")
            inv_rms = tf.rsqrt(tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_HIDDEN + EPS)
            y = tf.cast(x32 * inv_rms * w32, "bf16")
            return tf.reshard(y, (TOKENS @ grid.t, HIDDEN), "gmem")


@module(entry="norm", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", TOKENS), Topology("thread", THREADS)))
class RmsNormFp8Quant:
    @func
    def norm(
        x: Tensor[(TOKENS, HIDDEN), "bf16"], w: Tensor[(1, HIDDEN), "bf16"], inv_scale: Tensor[(1, 1), "f32"]
    ) -> Tensor[(TOKENS, HIDDEN), "fp8e4m3"]:
        with Mesh(("cta",), (TOKENS,), ("t",)) as grid:
            x32 = tf.cast(tf.reshard(x, (TOKENS @ grid.t, HIDDEN), "rmem"), "f32")
            w32 = tf.cast(tf.reshard(w, (1, HIDDEN), "rmem"), "f32")
            s = tf.reshard(inv_scale, (1, 1), "rmem")
            inv_rms = tf.rsqrt(tf.reduce(x32 * x32, (-1,), True, ReduceKind.SUM) * INV_HIDDEN + EPS)
            y = tf.clamp(x32 * inv_rms * w32 * s, -FP8_MAX, FP8_MAX)
            return tf.reshard(tf.cast(y, "fp8e4m3"), (TOKENS @ grid.t, HIDDEN), "gmem")
