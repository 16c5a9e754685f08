"""Printed forms of companions §7.4: which layouts an annotation names, how
sugar strides print, and when a loop header is `tile(...)` rather than
`range(...)`. Every program is printed, reparsed and printed again: the
header and the annotations must read back to the same program."""
from __future__ import annotations

import textwrap

SOURCE = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 2),))
class M:
    @func
    def plain(x: Tensor[(4, 8), "f32", "smem"]) -> Tensor[(4, 8), "f32", "smem"]:
        return tf.exp(x)

    @func
    def narrow(x: Tensor[(8, 64), "f32"]) -> Tensor[(8, 16), "f32"]:
        acc = tf.zeros(Tensor[(8, 16), "f32"])
        for i in tile(64, 32):
            acc = acc + tf.slice(x, (0, i), sizes=(8, 16), strides=(1, 1))
        return acc

    @func
    def exact(x: Tensor[(8, 64), "f32"]) -> Tensor[(8, 32), "f32"]:
        acc = tf.zeros(Tensor[(8, 32), "f32"])
        for i in tile(64, 32):
            acc = acc + x[:, i]
        return acc

    @func
    def shifted(x: Tensor[(8, 80), "f32"]) -> Tensor[(8, 16), "f32"]:
        acc = tf.zeros(Tensor[(8, 16), "f32"])
        for i in tile(64, 16):
            acc = acc + x[:, i + 16]
        return acc
'''


def _typed(tmp_path, name: str) -> str:
    """The typed program of ``M.<name>``, checked to be a print fixed point."""
    from tests.golden.typed_text import reanalysed
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "forms.py"
    source.write_text(textwrap.dedent(SOURCE))
    module, function = load_selection(f"{source}:M.{name}")
    text = typed_program(module, function, None)
    assert reanalysed(text, tmp_path, f"printed_{name}") == text
    return text


def _line(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


def test_companions_7_4_plain_layout_is_not_printed_as_a_types_layout(tmp_path):
    # exp of an unsharded smem value keeps a plain C-order Layout in its type;
    # an annotation names a layout only for a shard layout
    text = _typed(tmp_path, "plain")
    assert _line(text, "= exp(x)").endswith('# Tensor[(4, 8), "f32", "smem"]'), text
    assert "Layout((4, 8)" not in text, text


def test_companions_7_4_loop_header_range_when_window_size_differs_from_step(tmp_path):
    # the window starts at the variable but is 16 wide under a step of 32:
    # `tile(64, 32)` would read back as a 32-wide window
    text = _typed(tmp_path, "narrow")
    assert "for i in range(0, 64, 32):" in text, text
    assert "= x[:, i:i + 16]" in text, text


def test_companions_7_4_loop_header_range_when_window_start_is_computed(tmp_path):
    # the window starts at `i + 16`, not at the variable itself
    text = _typed(tmp_path, "shifted")
    assert "for i in range(0, 64, 16):" in text, text


def test_companions_7_4_loop_header_tile_when_window_size_equals_step(tmp_path):
    text = _typed(tmp_path, "exact")
    assert "for i in tile(64, 32):" in text, text
    assert "= x[:, i]  # " in text, text


def test_companions_7_4_sugar_strides_print_exactly_when_not_c_order():
    # strides are added only when not C-order, compared position by position:
    # a zero stride on an extent-1 position is still not C-order (the
    # reference prints `((1, 8 @ cta.head, 1, 1), (0, 1, 0, 0))`, p20)
    from tilefoundry.ir.shard import Broadcast, Layout, Mesh, ShardLayout, Split, Topology
    from tilefoundry.render.values import MeshNames, TypeFormatter

    mesh = Mesh((Topology("cta", 8),), Layout((8,), (1,)), names=("head",))
    fmt = TypeFormatter(MeshNames(), single_mesh=True)
    c_order = ShardLayout(Layout((1, 8, 1, 64), (512, 64, 64, 1)), (Split(1),), mesh)
    unit_zero = ShardLayout(Layout((1, 8, 1, 1), (0, 1, 0, 0)), (Split(1),), mesh)
    replicated = ShardLayout(Layout((1, 1), (1, 1)), (Broadcast(),), mesh)
    assert fmt.layout(c_order, None, True) == "(1, 8 @ cta.head, 1, 64)"
    assert fmt.layout(unit_zero, None, True) == "((1, 8 @ cta.head, 1, 1), (0, 1, 0, 0))"
    assert fmt.layout(replicated, None, True) == "(1, 1)"
