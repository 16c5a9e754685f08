"""Programs the estimate's physics tests price, written as the kernels they
model are built: a tensor-core GEMM on a CTA grid (128x128 CTA tiles, K tiles
staged gmem -> smem, products accumulated in f32 registers, one cast at the
end) and a copy kernel (each CTA streams its rows gmem -> registers -> gmem)."""
from __future__ import annotations

from pathlib import Path

GEMM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M, N, K = {m}, {n}, {k}
TM, TN, TK = {tm}, {tn}, 64


@module(entry="gemm", target=CudaTarget("{target}"),
        topologies=(Topology("cta", (M // TM) * (N // TN)),))
class Gemm:
    @func
    def gemm(a: Tensor[(M, K), "bf16"], b: Tensor[(K, N), "bf16"]) -> Tensor[(M, N), "bf16"]:
        with Mesh(("cta",), (M // TM, N // TN), ("mt", "nt")) as grid:
            acc = tf.zeros(Tensor[(M @ grid.mt, N @ grid.nt), "f32", "rmem"])
            for kk in tile(K, TK):
                a_tile = tf.reshard(a[:, kk], (M @ grid.mt, TK), "smem")
                b_tile = tf.reshard(b[kk, :], (TK, N @ grid.nt), "smem")
                prod = tf.matmul(a_tile, b_tile)
                acc = acc + tf.cast(tf.reshard(prod, (M @ grid.mt, N @ grid.nt), "rmem"), "f32")
            return tf.reshard(tf.cast(acc, "bf16"), (M @ grid.mt, N @ grid.nt), "gmem")
'''

COPY = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS, CTAS = {rows}, {cols}, {ctas}


@module(entry="copy", target=CudaTarget("{target}"), topologies=(Topology("cta", CTAS),))
class Copy:
    @func
    def copy(x: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            held = tf.reshard(x, (ROWS @ grid.r, COLS), "rmem")
            return tf.reshard(held, (ROWS @ grid.r, COLS), "gmem")
'''


def gemm(tmp: Path, m: int, n: int, k: int, target: str = "nvidia.h100_sxm",
         tm: int = 128, tn: int = 128) -> str:
    path = tmp / f"gemm_{m}_{n}_{k}_{tm}_{tn}_{target.replace('.', '_')}.py"
    path.write_text(GEMM.format(m=m, n=n, k=k, tm=tm, tn=tn, target=target))
    return f"{path}:Gemm"


def copy(tmp: Path, rows: int, cols: int, ctas: int, target: str = "nvidia.h100_sxm") -> str:
    path = tmp / f"copy_{rows}_{cols}_{ctas}_{target.replace('.', '_')}.py"
    path.write_text(COPY.format(rows=rows, cols=cols, ctas=ctas, target=target))
    return f"{path}:Copy"
