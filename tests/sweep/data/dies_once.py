"""A sweep test program: a worker process that loads it while the file
``armed`` lies beside it removes that file and dies at once (SIGKILL: no
handler runs, as when a cluster node is lost). Only one process can remove the
file, so exactly one worker dies; the client (no parent process) never does.
The program itself is a small pooling kernel over one DimVar ``seq``."""
import multiprocessing
import os
import signal

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ARMED = os.path.join(os.path.dirname(__file__), "armed")
if multiprocessing.parent_process() is not None:
    try:
        os.remove(ARMED)
    except FileNotFoundError:
        pass
    else:
        os.kill(os.getpid(), signal.SIGKILL)

D = 1024
CTAS = 4
SEQ = DimVar("seq", 1, 4097)


@module(entry="pool", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", CTAS),))
class DiesOnce:
    @func
    def pool(x: Tensor[(SEQ, D), "bf16"]) -> Tensor[(1, D), "f32"]:
        with Mesh(("cta",), (CTAS,), ("d",)) as g:
            xs = tf.cast(tf.reshard(x, (SEQ, D @ g.d), "gmem"), "f32")
            return tf.reduce(xs, (0,), True, ReduceKind.SUM)
