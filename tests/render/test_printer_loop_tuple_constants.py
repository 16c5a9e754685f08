"""Printer (companions §7.4): a constant inside a tuple operand in a loop body
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
    from tilefoundry.analysis.view import build_view
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_module_file, load_selection
    from tilefoundry.ir.module import Module
    from tilefoundry.render.printer import print_program

    source = tmp_path / "prog.py"
    source.write_text(textwrap.dedent(SOURCE))
    module, function = load_selection(f"{source}:M")
    first = typed_program(module, function, None)
    assert "insert_slice(out, " in first and ", (i, 0))" in first, first
    printed = tmp_path / "printed.py"
    printed.write_text(first)
    reparsed = load_module_file(str(printed)).f
    holder = Module("Reparsed", functions=(reparsed,), entry="f", topologies=())
    assert print_program(build_view(holder, reparsed).function).text == first
