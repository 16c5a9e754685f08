"""Seed §7.3 row 2 (the measured Mul_QC pattern {y:16} -> {y:32}): 16 cores hold
one slice each, then all 32 cores hold half a source slice each."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import MultiCoreTarget

Y = 64


@module(entry="spread", target=MultiCoreTarget(), topologies=(Topology("core", 32),))
class RowTwoScatter:
    @func
    def spread(x: Tensor[(Y,), "f32"]):
        with Mesh(("core",), (32,), ("y",)) as cores:
            with cores[:16] as half:
                slices = tf.reshard(x, (Y @ half.y,), "smem")
            halves = tf.reshard(slices, (Y @ cores.y,), "smem")
            return halves
