"""Bad input: a Reshard to a layout whose split cuts an inner position (each core
would hold every fourth element: a strided share, no box) cannot be tabled; a
Reshard to a Dynamic() placement cannot either. Both are findings; the gather
beside them still reports."""

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.ir.types.shard import Dynamic, Layout, ShardLayout
from tilefoundry.target import MultiCoreTarget

N = 16
LEVELS = (Topology("core", 4),)
CORES = Mesh(LEVELS, Layout((4,), (1,)), ("c",))
STRIDED = ShardLayout(Layout((4, 4)), (Split(1),), CORES)
UNDECIDED = ShardLayout(Layout((N,)), (Dynamic(),), CORES)


@module(entry="mixed", target=MultiCoreTarget(), topologies=LEVELS)
class Unformable:
    @func
    def mixed(x: Tensor[(N,), "f32"]):
        with CORES as cores:
            pieces = tf.reshard(x, (N @ cores.c,), "smem")
            strided = tf.reshard(pieces, layout=STRIDED, storage="smem")
            undecided = tf.reshard(pieces, layout=UNDECIDED, storage="smem")
            whole = tf.reshard(pieces, (N,), "smem")
            return strided, undecided, whole
