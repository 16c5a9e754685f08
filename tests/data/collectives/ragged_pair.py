"""Seed §7.2's ragged example, Ns = 2 -> Nd = 3: two cores hold halves of x, then
three cores hold thirds; the middle third overlaps both halves (fanin [1, 2, 1])."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import MultiCoreTarget

X = 6


@module(entry="thirds", target=MultiCoreTarget(), topologies=(Topology("core", 32),))
class RaggedPair:
    @func
    def thirds(x: Tensor[(X,), "f32"]):
        with Mesh(("core",), (32,), ("c",)) as cores:
            with cores[:2] as two:
                halves = tf.reshard(x, (X @ two.c,), "smem")
            with cores[:3] as three:
                parts = tf.reshard(halves, (X @ three.c,), "smem")
            return parts
