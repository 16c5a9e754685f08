"""Programs the estimate's physics tests price, written as the kernels they
model are built: a tensor-core GEMM on a CTA grid (128x128 CTA tiles, K tiles
staged gmem -> smem, products accumulated in f32 registers, one cast at the
end), a copy kernel (each CTA streams its rows gmem -> registers -> gmem), and
a loop of a tensor-core product followed by an exponential whose product
either reads what the loop carries (a recurrence, as attention's P @ V reads
the running softmax) or reads only the trip's tiles."""
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


@module(entry="copy", target=CudaTarget("{target}"), topologies=(Topology("cta", CTAS),{threads}))
class Copy:
    @func
    def copy(x: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            held = tf.reshard(x, (ROWS @ grid.r, COLS), "rmem")
            return tf.reshard(held, (ROWS @ grid.r, COLS), "gmem")
'''
STREAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS, CTAS, STEP = {rows}, {cols}, {ctas}, {step}


@module(entry="stream", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", CTAS),))
class Stream:
    @func
    def stream(x: Tensor[(CTAS, ROWS, COLS), "f32"]) -> Tensor[(CTAS, 1, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as grid:
            acc = tf.zeros(Tensor[(CTAS @ grid.c, 1, COLS), "f32", "rmem"])
            for rr in tile(ROWS, STEP):
                held = tf.reshard(x[:, rr, :], (CTAS @ grid.c, STEP, COLS), "rmem")
                acc = acc + tf.reduce(held, (1,), True, ReduceKind.SUM)
            return tf.reshard(acc, (CTAS @ grid.c, 1, COLS), "gmem")
'''

CHAIN = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

M, K, T = 128 * {ctas}, 4096, 128


@module(entry="chain", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", {ctas}),))
class Chain:
    @func
    def chain(a: Tensor[(M, T), "bf16"], b: Tensor[(K, T), "bf16"]) -> Tensor[(M, T), "f32"]:
        with Mesh(("cta",), ({ctas},), ("r",)) as grid:
            a_s = tf.reshard(a, (M @ grid.r, T), "smem")
            acc = tf.zeros(Tensor[(M @ grid.r, T), "f32", "rmem"])
            for kk in tile(K, T):
                b_tile = tf.reshard(b[kk, :], (T, T), "smem")
                left = {left}
                prod = tf.reshard(tf.matmul(left, b_tile, out_dtype="f32"), (M @ grid.r, T), "rmem")
                acc = {update}
            return tf.reshard(acc, (M @ grid.r, T), "gmem")
'''
_CHAIN_FORMS = {
    True: ("tf.reshard(tf.cast(acc, \"bf16\"), (M @ grid.r, T), \"smem\")", "tf.exp(prod)"),
    False: ("a_s", "acc + tf.exp(prod)"),
}


TWO_BLOCKS = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS, CTAS = 1024, 1024, 128


@module(entry="two", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", CTAS),))
class Two:
    @func
    def two(x: Tensor[(ROWS, COLS), "f32"], w: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            y = tf.reshard(x, (ROWS @ grid.r, COLS), "smem") * 2.0
            y_g = tf.reshard(y, (ROWS @ grid.r, COLS), "gmem")
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            # {first} operand first: the dataflow order visits it before the other
            z = {left} + {right}
            return tf.reshard(z, (ROWS @ grid.r, COLS), "gmem")
'''
_W = 'tf.reshard(w, (ROWS @ grid.r, COLS), "smem")'
_Y = 'tf.reshard(y_g, (ROWS @ grid.r, COLS), "smem")'


def two_blocks(tmp: Path, weight_first: bool) -> str:
    """Two ``with Mesh`` blocks, the second reading the first's result and a
    weight of its own; ``weight_first`` puts the weight's load where the
    dataflow order visits it before the whole first block."""
    path = tmp / f"two_blocks_{weight_first}.py"
    left, right = (_W, _Y) if weight_first else (_Y, _W)
    path.write_text(TWO_BLOCKS.format(first="the weight" if weight_first else "the first block's",
                                      left=left, right=right))
    return f"{path}:Two"


GATHER = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS, CTAS = 128, 128, 8


@module(entry="gather", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", CTAS),))
class Gather:
    @func
    def gather(x: Tensor[(ROWS, COLS), "f32"], v: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            y_g = tf.reshard(tf.reshard(x, (ROWS @ grid.r, COLS), "smem") * 2.0, (ROWS @ grid.r, COLS), "{level}")
            whole = tf.reshard({source}, (ROWS, COLS), "smem")
            return tf.reshard(whole * 3.0, (ROWS @ grid.r, COLS), "gmem")
'''


def gather(tmp: Path, own: bool, level: str = "gmem") -> str:
    """Every CTA reads a whole (ROWS, COLS) value into smem: the one its launch
    made split over the CTAs and staged in ``level`` (``own``), or a parameter."""
    path = tmp / f"gather_{own}_{level}.py"
    path.write_text(GATHER.format(source="y_g" if own else "v", level=level))
    return f"{path}:Gather"


SCAN = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

STEPS, COLS, CTAS = 64, 1024, 8


@module(entry="scan", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", CTAS),))
class Scan:
    @func
    def scan(x: Tensor[(STEPS, COLS), "f32"]) -> Tensor[(STEPS, COLS), "f32"]:
        with Mesh(("cta",), (CTAS,), ("c",)) as grid:
            out = tf.zeros(Tensor[(STEPS, COLS @ grid.c), "f32", "{storage}"])
            for t in range(STEPS):
                row = tf.reshard(tf.slice(x, (t, 0), sizes=(1, COLS), strides=(1, 1)), (1, COLS @ grid.c), "rmem")
                out = tf.insert_slice(out, row * 2.0, (t, 0))
            return tf.reshard(out, (STEPS, COLS @ grid.c), "gmem")
'''


def scan(tmp: Path, storage: str) -> str:
    """A loop that reads one row of ``x`` a trip and writes it, doubled, into
    the output it carries (held in ``storage``)."""
    path = tmp / f"scan_{storage}.py"
    path.write_text(SCAN.format(storage=storage))
    return f"{path}:Scan"


SLICED = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS = 1024, 256


@module(entry="copy", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", 128),))
class Sliced:
    @func
    def copy(x: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, COLS), "f32"]:
{body}
'''
_NESTED = '''        with Mesh(("cta",), (128,), ("all",)) as whole:
            with whole[0:16] as g:
                held = tf.reshard(x, (ROWS @ g.all, COLS), "rmem")
                return tf.reshard(held, (ROWS @ g.all, COLS), "gmem")'''
_ALONE = '''        with Mesh(("cta",), (128,), ("all",))[0:16] as g:
            held = tf.reshard(x, (ROWS @ g.all, COLS), "rmem")
            return tf.reshard(held, (ROWS @ g.all, COLS), "gmem")'''


def sliced(tmp: Path, nested: bool) -> str:
    """A copy on 16 of the level's 128 CTAs: a slice opened inside a mesh of
    the whole level (``nested``), or the slice alone."""
    path = tmp / f"sliced_{nested}.py"
    path.write_text(SLICED.format(body=_NESTED if nested else _ALONE))
    return f"{path}:Sliced"


TWO_SUMS = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS, COLS, CTAS, STEP = 1024, 1024, 128, 64


@module(entry="sums", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", CTAS),))
class TwoSums:
    @func
    def sums(x: Tensor[(ROWS, COLS), "f32"]) -> Tensor[(ROWS, 1), "f32"]:
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            total = tf.zeros(Tensor[(ROWS @ grid.r, 1), "f32", "rmem"])
            squares = tf.zeros(Tensor[(ROWS @ grid.r, 1), "f32", "rmem"])
            for kk in tile(COLS, STEP):
                part = tf.reshard(x[:, kk], (ROWS @ grid.r, STEP), "smem")
                total = total + tf.reshard(tf.reduce(part, (-1,), True, ReduceKind.SUM), (ROWS @ grid.r, 1), "rmem")
                squares = squares + tf.reshard(tf.reduce(part * part, (-1,), True, ReduceKind.SUM),
                                               (ROWS @ grid.r, 1), "rmem")
            total_g = tf.reshard(total, (ROWS @ grid.r, 1), "gmem")
            squares_g = tf.reshard(squares, (ROWS @ grid.r, 1), "gmem")
        with Mesh(("cta",), (CTAS,), ("r",)) as grid:
            doubled = tf.reshard(total_g, (ROWS @ grid.r, 1), "smem") * 2.0
            both = doubled + tf.reshard(squares_g, (ROWS @ grid.r, 1), "smem")
            return tf.reshard(both, (ROWS @ grid.r, 1), "gmem")
'''


def two_sums(tmp: Path) -> str:
    """A loop carrying two sums (its results read through tuple fields, views),
    each written to gmem, and a second block reading both."""
    path = tmp / "two_sums.py"
    path.write_text(TWO_SUMS)
    return f"{path}:TwoSums"


REDUCE_ACROSS = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="red", target=CudaTarget("nvidia.h100_sxm"), topologies=(Topology("cta", 8),))
class ReduceAcross:
    @func
    def red(x: Tensor[(4, 256), "f32"]) -> Tensor[(4, 1), "f32"]:
        with Mesh(("cta",), (8,), ("c",)) as g:
            xs = tf.reshard(x, (4, 256 @ g.c), "{level}")
            s = tf.reduce(xs, (-1,), True, ReduceKind.SUM)
            return tf.reshard(s, (4, 1), "gmem")
'''


def reduce_across(tmp: Path, level: str) -> str:
    """A row sum over columns split over 8 CTAs, staged in ``level``: the
    reduce is complete (every CTA holds the whole sum)."""
    path = tmp / f"reduce_across_{level}.py"
    path.write_text(REDUCE_ACROSS.format(level=level))
    return f"{path}:ReduceAcross"


def chain(tmp: Path, recurrent: bool, ctas: int = 132) -> str:
    """The loop's product reads the carried value (``recurrent``) or ``a``,
    staged once before the loop."""
    left, update = _CHAIN_FORMS[recurrent]
    path = tmp / f"chain_{recurrent}_{ctas}.py"
    path.write_text(CHAIN.format(ctas=ctas, left=left, update=update))
    return f"{path}:Chain"


def stream(tmp: Path, rows: int, cols: int, ctas: int, step: int) -> str:
    """Each CTA sums its ``rows`` x ``cols`` f32 block, ``step`` rows a trip."""
    path = tmp / f"stream_{rows}_{cols}_{ctas}_{step}.py"
    path.write_text(STREAM.format(rows=rows, cols=cols, ctas=ctas, step=step))
    return f"{path}:Stream"


def gemm(tmp: Path, m: int, n: int, k: int, target: str = "nvidia.h100_sxm",
         tm: int = 128, tn: int = 128) -> str:
    path = tmp / f"gemm_{m}_{n}_{k}_{tm}_{tn}_{target.replace('.', '_')}.py"
    path.write_text(GEMM.format(m=m, n=n, k=k, tm=tm, tn=tn, target=target))
    return f"{path}:Gemm"


def copy(tmp: Path, rows: int, cols: int, ctas: int, target: str = "nvidia.h100_sxm",
         threads: int | None = None) -> str:
    """``threads``: the module declares a thread topology of that size."""
    path = tmp / f"copy_{rows}_{cols}_{ctas}_{threads}_{target.replace('.', '_')}.py"
    declared = f' Topology("thread", {threads})' if threads else ""
    path.write_text(COPY.format(rows=rows, cols=cols, ctas=ctas, target=target, threads=declared))
    return f"{path}:Copy"
