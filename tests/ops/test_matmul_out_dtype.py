"""Issue 40 item 1: ``tf.matmul(a, b, out_dtype="f32")`` (Triton's ``tl.dot`` name). bf16
products accumulated in f32 and written in f32; flops counted under the operands' dtype
(companions §5.3: "lhs dtype : 2·batch·M·K·N"), so priced at the bf16 tensor-core rate;
evaluated in f32; a placed GEMM written with it passes ``check --placed`` and
``check --against`` an f32 reference. Every expected figure is derived here by hand."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from tilefoundry.cli.main import main

HEADER = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget
'''

ONE_CALL = HEADER + '''
@module(entry="mm", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class MM:
    @func
    def mm(a: Tensor[({m}, {k}), "{dt}"], b: Tensor[({k}, {n}), "{dt}"]) -> Tensor[({m}, {n}), "{out}"]:
        return {call}
'''

# a tiled GEMM on a 2 x 2 CTA mesh whose K tiles are summed in an f32 register accumulator
GEMM = HEADER + '''
M, N, K, TILE_K = 64, 32, 256, 32

@module(entry="gemm", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Gemm:
    @func
    def gemm(a: Tensor[(M, K), "bf16"], b: Tensor[(K, N), "bf16"]) -> Tensor[(M, N), "f32"]:
        with Mesh(("cta",), (2, 2), ("mt", "nt")) as grid:
            acc = tf.zeros(Tensor[(M @ grid.mt, N @ grid.nt), "f32", "rmem"])
            for kk in tile(K, TILE_K):
                a_tile = tf.reshard(a[:, kk], (M @ grid.mt, TILE_K), "smem")
                b_tile = tf.reshard(b[kk, :], (TILE_K, N @ grid.nt), "smem")
                prod = PRODUCT
                acc = acc + tf.reshard(prod, (M @ grid.mt, N @ grid.nt), "rmem")
            return tf.reshard(acc, (M @ grid.mt, N @ grid.nt), "gmem")
'''
WIDE = 'tf.matmul(a_tile, b_tile, out_dtype="f32")'
NARROW = 'tf.cast(tf.matmul(a_tile, b_tile), "f32")'  # each K tile's product rounded to bf16

REFERENCE = '''\
import numpy as np


def reference(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)
'''

# H200 SXM dense BF16 tensor-core and f32 CUDA-core peaks (target/hardware/nvidia.h200_sxm.toml:
# NVIDIA H200 datasheet, 1979 TFLOP/s BF16 with sparsity / 2, and 67 TFLOP/s FP32)
BF16_FLOPS, F32_FLOPS = 989.5e12, 67e12


def _program(tmp_path, text: str, name: str = "prog.py", **subs) -> str:
    for key, value in subs.items():
        text = text.replace(key, value)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _mm(tmp_path, m, k, n, call, dt="bf16", out="f32"):
    text = ONE_CALL.format(m=m, k=k, n=n, call=call, dt=dt, out=out)
    return _program(tmp_path, text) + ":MM.mm"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_item1_out_dtype_types_f32_and_counts_bf16_flops(tmp_path, capsys):
    source = _mm(tmp_path, 8, 64, 32, 'tf.matmul(a, b, out_dtype="f32")')
    code, out, err = _run(capsys, "analyze", "--compute-cost", "--memory", source)
    assert (code, err) == (0, "")
    flops = 2 * 8 * 64 * 32  # 2·M·K·N, under the operands' dtype
    assert (f'    v0 = matmul(a, b, out_dtype="f32")  # Tensor[(8, 32), "f32"]; '
            f'compute-cost flops=bf16:{flops}@{flops}') in out
    # bf16 operands read (8·64 + 64·32)·2 bytes, the f32 result written 8·32·4 bytes
    reads, writes = (8 * 64 + 64 * 32) * 2, 8 * 32 * 4
    assert f"# traffic traffic=gmem:r{reads}/w{writes}@r{reads}/w{writes}" in out


def test_item1_without_out_dtype_the_result_keeps_the_operand_dtype(tmp_path, capsys):
    source = _mm(tmp_path, 8, 64, 32, "tf.matmul(a, b)", out="bf16")
    code, out, err = _run(capsys, "analyze", "--compute-cost", source)
    assert (code, err) == (0, "")
    assert '    v0 = matmul(a, b)  # Tensor[(8, 32), "bf16"]; compute-cost flops=bf16:32768@32768' in out


@pytest.mark.parametrize("dt, out", [("bf16", "f16"), ("f32", "bf16"), ("bf16", "i32")])
def test_item1_an_out_dtype_no_tensor_core_writes_is_refused_with_the_remedy(tmp_path, capsys, dt, out):
    source = _mm(tmp_path, 8, 16, 8, f'tf.matmul(a, b, out_dtype="{out}")', dt=dt, out=out)
    code, stdout, err = _run(capsys, "analyze", "--compute-cost", source)
    assert code == 1 and stdout == ""
    assert err.count("\n") == 1
    assert (f"prog.py:9:16: MatMul: out_dtype {out} is not written from {dt} operands; out_dtype is "
            f"the operands' dtype or, for bf16/f16/fp8 operands, \"f32\"") in err


def test_item1_out_dtype_is_priced_at_the_tensor_core_rate(tmp_path, capsys):
    m = k = n = 1024
    flops = 2 * m * k * n
    wide = _mm(tmp_path, m, k, n, 'tf.matmul(a, b, out_dtype="f32")')
    code, out, err = _run(capsys, "analyze", "--roofline", "--json", wide)
    assert (code, err) == (0, "")
    compute_ns = json.loads(out)["calls"][0]["roofline"]["compute_ns"]
    assert abs(compute_ns - flops / BF16_FLOPS * 1e9) <= 1  # 2170 ns, not f32's 32051
    narrow_dir = tmp_path / "cast"
    narrow_dir.mkdir()
    cast = _mm(narrow_dir, m, k, n, 'tf.matmul(tf.cast(a, "f32"), tf.cast(b, "f32"))')
    code, out, err = _run(capsys, "analyze", "--roofline", "--json", cast)
    cast_ns = [c["roofline"]["compute_ns"] for c in json.loads(out)["calls"] if "roofline" in c]
    assert abs(max(cast_ns) - flops / F32_FLOPS * 1e9) <= 1


def _gemm_inputs(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 32)).astype(ml_dtypes.bfloat16)
    return a, b


def _forward_bound(a, b):
    """|computed - exact| <= gamma_K · (|a| @ |b|) elementwise for a K-term f32 sum
    (Higham, Accuracy and Stability of Numerical Algorithms, §3.1; u = 2^-24), bf16
    products being exact in f32 (8 + 8 significand bits)."""
    k, u = a.shape[1], 2.0 ** -24
    gamma = k * u / (1 - k * u)
    return gamma * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


@pytest.mark.parametrize("product, holds", [(WIDE, True), (NARROW, False)])
def test_item1_out_dtype_numerics_within_the_f32_forward_bound(tmp_path, product, holds):
    import tilefoundry

    source = _program(tmp_path, GEMM, PRODUCT=product) + ":Gemm.gemm"
    a, b = _gemm_inputs()
    (got,) = tilefoundry.run(source, inputs={"a": a, "b": b}).values()
    exact = a.astype(np.float64) @ b.astype(np.float64)
    within = np.abs(got.astype(np.float64) - exact) <= _forward_bound(a, b)
    # f32-accumulated K tiles stay within the bound everywhere; bf16-rounded K tiles leave it
    assert bool(within.all()) is holds


def test_item1_placed_gemm_with_out_dtype_passes_check_placed_and_against_f32(tmp_path, capsys):
    source = _program(tmp_path, GEMM, PRODUCT=WIDE) + ":Gemm.gemm"
    code, out, err = _run(capsys, "check", "--placed", source)
    assert (code, err) == (0, ""), err
    assert "placed: PASS" in out and out.rstrip().endswith("result: PASS")
    twin = _program(tmp_path, REFERENCE, name="reference.py") + ":reference"
    code, out, err = _run(capsys, "check", "--against", twin, "--tolerance", "dtype", source)
    assert (code, err) == (0, ""), err
    assert "output: PASS" in out and out.rstrip().endswith("result: PASS")


CTA_TILE = HEADER + '''
@module(entry="cta_tile", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class CtaTile:
    @func
    def cta_tile(a: Tensor[(128, 64), "bf16"], b: Tensor[(64, 128), "bf16"]) -> Tensor[(128, 128), "f32"]:
'''


def test_item1_a_cta_tile_of_wgmma_instructions_as_the_op_reference_writes_it(tmp_path, capsys):
    """The composition docs/ops.md gives under wgmma_sm90_64x128x16, run as written."""
    from tilefoundry.ops.reference import op_docs

    doc = op_docs()["wgmma_sm90_64x128x16"].dtypes
    block = doc.split("```python\n")[1].split("```")[0]
    body = "".join(f"        {line}\n" for line in block.splitlines()) + "        return acc\n"
    source = _program(tmp_path, CTA_TILE + body) + ":CtaTile.cta_tile"
    code, out, err = _run(capsys, "analyze", "--compute-cost", "--json", source)
    assert (code, err) == (0, ""), err
    # 2 M blocks x 4 K steps of 2·64·128·16 bf16 flops; 8 accumulator adds of 64·128 f32
    assert json.loads(out)["totals"]["flops"] == {"bf16": 2 * 128 * 128 * 64, "f32": 8 * 64 * 128}
    twin = _program(tmp_path, REFERENCE, name="reference.py") + ":reference"
    code, out, err = _run(capsys, "check", "--against", twin, source)
    assert (code, err) == (0, ""), err
    assert out.rstrip().endswith("result: PASS")
