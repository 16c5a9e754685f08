"""A sweep test program that a worker process loads slowly while the file
``slow`` lies beside it (it waits until the file is gone, at most 60 s): the
interrupt test stops a sweep while its workers wait here. The client (no
parent process) loads it at once. The kernel is a small pooling one."""
import multiprocessing
import os
import time

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

SLOW = os.path.join(os.path.dirname(__file__), "slow")
if multiprocessing.parent_process() is not None:
    waited = time.monotonic()
    while os.path.exists(SLOW) and time.monotonic() - waited < 60:
        time.sleep(0.05)

D = 512
CTAS = 4


@module(entry="pool", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", CTAS),))
class SlowLoad:
    @func
    def pool(x: Tensor[(256, D), "bf16"]) -> Tensor[(1, D), "f32"]:
        with Mesh(("cta",), (CTAS,), ("d",)) as g:
            xs = tf.cast(tf.reshard(x, (256, D @ g.d), "gmem"), "f32")
            return tf.reduce(xs, (0,), True, ReduceKind.SUM)
