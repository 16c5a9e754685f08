"""Issue 22 item 9: a zero-element tensor moves 0 bytes; no op's relation
divides by a zero extent (a reshape's used to write `mod 0`, which isl refuses)."""
from __future__ import annotations

import json

import pytest

from tests.robustness.json_numbers import numbers
from tilefoundry.cli.main import main

PROGRAM = 'from tilefoundry import module\nfrom tilefoundry.dsl import *\nfrom tilefoundry.target import CudaTarget\n\n\n@module(target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))\nclass Z:\n    @func\n    def rs(x: Tensor[(0, 8), "f32"]) -> Tensor[(8, 0), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.reshape(x, (8, 0))\n\n    @func\n    def mm(a: Tensor[(4, 0), "f32"], b: Tensor[(0, 8), "f32"]) -> Tensor[(4, 8), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.matmul(a, b)\n\n    @func\n    def red(a: Tensor[(4, 0), "f32"]) -> Tensor[(4, 1), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.reduce(a, (-1,), True, ReduceKind.SUM)\n\n    @func\n    def tr(a: Tensor[(4, 0), "f32"]) -> Tensor[(0, 4), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.transpose(a, (1, 0))\n\n    @func\n    def cat(a: Tensor[(4, 0), "f32"], b: Tensor[(4, 3), "f32"]) -> Tensor[(4, 3), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.concat(a, b, axis=1)\n\n    @func\n    def sm(a: Tensor[(0, 8), "f32"]) -> Tensor[(0, 8), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.softmax(a, axis=-1)\n\n    @func\n    def rep(a: Tensor[(0, 8), "f32"]) -> Tensor[(0, 16), "f32"]:\n        with Mesh(("cta",), (1,), ("c",)) as _m:\n            return tf.repeat_interleave(a, repeats=2, axis=1)\n'

KERNELS = ["rs", "mm", "red", "tr", "cat", "sm", "rep"]


@pytest.mark.parametrize("kernel", KERNELS)
def test_zero_extents_analyse_run_and_check(tmp_path, capsys, kernel):
    source = tmp_path / "zero.py"
    source.write_text(PROGRAM)
    selection = f"{source}:Z.{kernel}"
    code = main(["analyze", "--json", "--compute-cost", "--memory", "--roofline", "--performance", selection])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert all(n >= 0 for n in numbers(report["function_records"]))
    assert main(["run", selection]) == 0
    assert main(["check", "--placed", selection]) == 0
    capsys.readouterr()


def test_a_zero_element_reshape_moves_nothing(tmp_path, capsys):
    source = tmp_path / "zero.py"
    source.write_text(PROGRAM)
    code = main(["analyze", "--compute-cost", "--memory", f"{source}:Z.rs"])
    out, _ = capsys.readouterr()
    assert code == 0 and "# peak-footprint=gmem:0" in out
