"""A device copy kernel, as STREAM-style copy microbenchmarks build it: each CTA of a
1-D mesh moves a contiguous chunk gmem -> registers -> gmem with vectorised loads and
stores, nothing computed. A measured kernel of a few hundred CTAs walks the buffer
grid-stride, 64 KiB per CTA per step; the program gives each 64 KiB step its own CTA
(`ctas` = bytes / 65536, the DimVar a case binds), the same bytes in the same steps,
because a CTA's registers hold one step (the target's rmem limit).
"""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

CTAS = DimVar("ctas", 1, 1 << 20)
CHUNK = 16384  # f32 elements: 1024 threads x 4 float4 loads


@module(entry="copy", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", CTAS),))
class Copy:
    @func
    def copy(src: Tensor[(CTAS, CHUNK), "f32"]) -> Tensor[(CTAS, CHUNK), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as grid:
            staged = tf.reshard(src, (CTAS @ grid.c, CHUNK), "rmem")
            return tf.reshard(staged, (CTAS @ grid.c, CHUNK), "gmem")
