"""Seed §7.5 P07 (Add_QC_3): {mb:16} -> {mb:8, out:4} on 32 cores, the non-square
all-to-all: 16 cores hold one mb slice each; every core then holds one (mb, out)
piece of an eight-way mb cut."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import MultiCoreTarget

MB = 32
OUT = 16


@module(entry="regroup", target=MultiCoreTarget(), topologies=(Topology("core", 32),))
class NonSquareAllToAll:
    @func
    def regroup(x: Tensor[(MB, OUT), "f32"]):
        with Mesh(("core",), (32,), ("c",)) as flat:
            with flat[:16] as half:
                rows = tf.reshard(x, (MB @ half.c, OUT), "smem")
        with Mesh(("core",), (8, 4), ("mb", "out")) as grid:
            pieces = tf.reshard(rows, (MB @ grid.mb, OUT @ grid.out), "smem")
            return pieces
