"""Seed §7.4 worked example on the design thread's accelerator: {mb:8, out:4} ->
{mb:32} on 32 cores. Core 4*mb + out holds a source piece; core mb (the same
mesh, both axes cutting mb) holds a destination piece."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import MultiCoreTarget

MB = 64
OUT = 16


@module(entry="relayout", target=MultiCoreTarget(), topologies=(Topology("core", 32),))
class WorkedExample:
    @func
    def relayout(x: Tensor[(MB, OUT), "f16"]):
        with Mesh(("core",), (8, 4), ("mb", "out")) as cores:
            pieces = tf.reshard(x, (MB @ cores.mb, OUT @ cores.out), "smem")
            rows = tf.reshard(pieces, (MB @ (cores.mb, cores.out), OUT), "smem")
            return rows
