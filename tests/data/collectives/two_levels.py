"""Two levels on an H200: columns split over 4 CTAs x 32 threads, then rows over
the CTAs (columns still over the threads). At --topology cta the threads are
inside one participant: 4 CTAs exchange quarters (an all-to-all). At --topology
thread the CTA cut itself changes, so the tables of one thread level cannot be
formed: a finding that names the coarser level."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = 8
COLS = 1024


@module(entry="transpose_cut", target=CudaTarget("nvidia.h200_sxm"),
        topologies=(Topology("cta", 4), Topology("thread", 32)))
class TwoLevels:
    @func
    def transpose_cut(x: Tensor[(ROWS, COLS), "f32"]):
        with Mesh(("cta",), (4,), ("c",)) as grid:
            with Mesh(("thread",), (32,), ("t",)) as lanes:
                columns = tf.reshard(x, (ROWS, COLS @ (grid.c, lanes.t)), "rmem")
                rows = tf.reshard(columns, (ROWS @ grid.c, COLS @ lanes.t), "rmem")
                return rows
