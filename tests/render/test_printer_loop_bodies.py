"""Printer (companions §7.4) inside loop bodies. A constant inside a tuple operand
(insert_slice offsets `(i, 0)`) is written as its literal, so the printed
program reparses (it was printed as an undefined name `v6_2`)."""
from __future__ import annotations

import textwrap

SOURCE = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(table: Tensor[(64, 128), "f32"], out: Tensor[(16, 128), "f32"]) -> Tensor[(16, 128), "f32"]:
        for i in range(0, 16, 2):
            row = tf.index_select(table, tf.reshape(i, (1,)), dim=0)
            out = tf.insert_slice(out, row, (i, 0))
        return out
'''


def test_render_7_4_loop_body_tuple_constant_is_literal_and_reparses(tmp_path):
    from tests.golden.typed_text import reanalysed
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "prog.py"
    source.write_text(textwrap.dedent(SOURCE))
    module, function = load_selection(f"{source}:M")
    first = typed_program(module, function, None)
    assert "insert_slice(out, " in first and ", (i, 0))" in first, first
    assert reanalysed(first, tmp_path) == first


RANGE_ROW = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(x: Tensor[(16, 128), "f32"]) -> Tensor[(1, 32), "f32"]:
        acc = tf.zeros(Tensor[(1, 32), "f32"])
        for r in range(16):
            row = tf.reshape(x[r, :], (1, 128))
            for c in tile(128, 32):
                acc = acc + row[:, c]
        return acc
'''


def test_render_7_4_range_induction_subscript_keeps_its_axis(tmp_path):
    # a slice starting at a range variable keeps size 1: printed `x[r:r + 1, :]`
    # (`x[r, :]` reads back as a dropped axis); a tile window prints as `row[:, c]`
    from tests.golden.typed_text import reanalysed
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "rows.py"
    source.write_text(textwrap.dedent(RANGE_ROW))
    module, function = load_selection(f"{source}:M")
    first = typed_program(module, function, None)
    assert 'x[r:r + 1, :]  # Tensor[(1, 128), "f32"]' in first, first
    assert "[:, c]  # Tensor[(1, 32)" in first, first
    assert reanalysed(first, tmp_path) == first
