"""A device copy kernel, as STREAM-style copy microbenchmarks build it: each CTA of a
1-D mesh moves a contiguous chunk gmem -> registers -> gmem, nothing computed. A
measured kernel of a few hundred CTAs walks the buffer grid-stride, one block's
threads x unroll x load width per CTA per step (256 threads x 4 x 16 B = 16 KiB for
float4 loads unrolled 4 times); the program gives each step its own CTA (`ctas` =
bytes / step bytes, `chunk` = f32 elements per step: the DimVars a case binds), the
same bytes in the same steps, each step's loads issued together.
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

CTAS = DimVar("ctas", 1, 1 << 20)
CHUNK = DimVar("chunk", 1, 1 << 20)
THREADS = 256  # the measured kernels' blocks


@module(entry="copy", target=CudaTarget("nvidia.h100_sxm"),
        topologies=(Topology("cta", CTAS), Topology("thread", THREADS)))
class Copy:
    @func
    def copy(src: Tensor[(CTAS, CHUNK), "f32"]) -> Tensor[(CTAS, CHUNK), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as grid:
            staged = tf.reshard(src, (CTAS @ grid.c, CHUNK), "rmem")
            return tf.reshard(staged, (CTAS @ grid.c, CHUNK), "gmem")
