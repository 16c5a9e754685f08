"""Small authored programs for the analysis tests, loaded through the real
front end (``load_selection``) from a file written to a temporary folder."""
from __future__ import annotations

import textwrap
from pathlib import Path

HEADER = """\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget, CpuTarget
"""

# A loop whose body holds an invariant matmul and a carried accumulate.
LOOPY = """
@module(entry="step", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Loopy:
    @func
    def step(x: Tensor[(8, 64), "f32"], w: Tensor[(64, 128), "f32"]) -> Tensor[(8, 128), "f32"]:
        acc = tf.zeros(Tensor[(8, 128), "f32"])
        for i in range(3):
            y = tf.matmul(x, w)
            acc = acc + y
        return tf.exp(acc)
"""

# companions §2.7: a column split over a 4-wide CTA mesh
COLUMN_SPLIT = """
@module(entry="proj", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class ColumnSplit:
    @func
    def proj(x: Tensor[(8, 64), "f32"], w: Tensor[(64, 128), "f32"]):
        with Mesh(("cta",), (4,), ("c",)) as m:
            ws = tf.reshard(w, (64, 128 @ m.c), "gmem")
            xs = tf.reshard(x, (8 @ m.c, 64), "gmem")
            return tf.matmul(x, ws), tf.cast(xs, "bf16")
"""

# no topology: per-unit equals whole, header omits topology=
FLAT = """
@module(entry="scale", target=CpuTarget())
class Flat:
    @func
    def scale(v: Tensor[(16, 8), "f32"], i: Tensor[(16, 8), "i32"]):
        a = v * 3.0
        m = v < a
        s = tf.where(m, v, a)
        e = tf.rsqrt(s)
        k = i + i
        return e, k, tf.cast(i, "i64")
"""

DIMMED = """
N = DimVar("n", 1, 65)

@module(entry="grow", target=CpuTarget())
class Dimmed:
    @func
    def grow(v: Tensor[(N, 8), "f32"]) -> Tensor[(N, 8), "f32"]:
        return v + v
"""


def load(tmp_path: Path, body: str, selector: str, header: str = HEADER):
    from tilefoundry.dsl.loader import load_selection

    path = tmp_path / f"prog_{abs(hash(body)) % 10**8}.py"
    path.write_text(header + textwrap.dedent(body))
    return load_selection(f"{path}:{selector}")


def write(tmp_path: Path, body: str, name: str = "prog.py", header: str = HEADER) -> Path:
    path = tmp_path / name
    path.write_text(header + textwrap.dedent(body))
    return path
