"""Loops: `a, b = 2, 16`; list bindings `xs = [..]`, `[... for _i in range(3)]`,
`xs[-1]`; a `range` loop with a nested `tile` loop carrying two accumulators; a
strided `range(a, b, 2)` loop building index vectors `tf.reshape(i, (1,))` for
index_select and insert_slice; a sliced mesh scope `with grid[:4] as left` holding a
`where(...)` annotation. Fully static.
"""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS = 16, 128
STEP = 32

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class Loops:
    @func
    def f(x: Tensor[(ROWS, COLS), "f32"], table: Tensor[(64, COLS), "f32"], out: Tensor[(ROWS, COLS), "f32"]):
        a, b = 2, 16
        xs = [x * 2.0, x + 1.0]
        ys = [tf.exp(x) for _i in range(3)]
        acc = tf.zeros(Tensor[(1, STEP), "f32"])
        total = tf.zeros(Tensor[(1, 1), "f32"])
        for r in range(ROWS):
            row = tf.reshape(x[r, :], (1, COLS))
            for c in tile(COLS, STEP):
                acc = acc + row[:, c]
            total = total + tf.reduce(acc, (-1,), True, "sum")
        for i in range(a, b, 2):
            idx = tf.reshape(i, (1,))
            picked = tf.index_select(table, idx, dim=0)
            out = tf.insert_slice(out, picked, (i, 0))
        with Mesh(("cta",), (8,), ("u",)) as grid:
            with grid[:4] as left:
                y: where(layout=(_, COLS @ cta), storage="gmem") = xs[-1] * ys[0]
        return total, out, y, xs[0]
