"""Unit factors carry no sharding (semantic-analysis §3.2 rule 6, companions
§2.5) and a fully-Broadcast placement is kept by the ops that do not change it
(companions §2.2; programs README note 7)."""
from __future__ import annotations

import textwrap

import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.shard import B, Layout, Mesh, S, ShardLayout, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ops import (
    Binary,
    BinaryKind as BK,
    Reduce,
    ReduceKind as RK,
    Reshape,
    Unary,
    UnaryKind as UK,
    Where,
)
from tilefoundry.semantics.relations import relations_of_call
from tilefoundry.semantics.shard_propagation import derive_output_shard_layout
from tests.conftest import PROGRAMS

HEAD_PART = Mesh((Topology("cta", 32),), Layout((4, 8), (8, 1)), names=("head", "part"))
U4 = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))
U16 = Mesh((Topology("cta", 16),), Layout((16,), (1,)), names=("u",))
OTHER16 = Mesh((Topology("cta", 16),), Layout((4, 4), (4, 1)), names=("a", "b"))


def _typed(source: str) -> str:
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(source)
    return typed_program(module, function, None)


def _comment_of(typed: str, statement: str) -> str:
    line = next(line for line in typed.splitlines() if line.strip().startswith(statement))
    return line.split("  # ", 1)[1]


# ---------------------------------------------------------------- §3.2 rule 6 / §2.5


def test_semantic_3_2_rule6_unit_factor_is_same_binding(b):
    # (1, 4 @ head) and (4 @ head,) bind column dim 1 to the same mesh axis
    x = b.var("x", (256, 4), layout=b.sl((8, 32, 4), (0, 1, 0), (S(2), S(0)), HEAD_PART), storage=SK.RMEM)
    peak = b.var("peak", (1, 4), layout=b.sl((1, 1, 4), (0, 0, 1), (S(2), B()), HEAD_PART), storage=SK.RMEM)
    out = b.call(Binary(BK.SUB), x, peak)
    assert out.type.layout == x.type.layout
    swapped = b.call(Binary(BK.SUB), peak, x)
    assert swapped.type.layout == x.type.layout


def test_semantic_3_2_rule6_unit_factor_is_dropped_from_the_result(b):
    # operands that differ only by a unit position give the result neither it
    # nor an order dependence; the split stays on the extent-4 factor
    with_unit = b.var("a", (4, 8), layout=b.sl((1, 4, 8), (0, 8, 1), (S(1),), U4), storage=SK.RMEM)
    plain = b.var("c", (4, 8), layout=b.sl((4, 8), (8, 1), (S(0),), U4), storage=SK.RMEM)
    for lhs, rhs in ((with_unit, plain), (plain, with_unit)):
        out = b.call(Binary(BK.ADD), lhs, rhs).type.layout
        assert out.layout.shape == (4, 8) and out.attrs == (S(0),)


def test_semantic_3_2_agreeing_unit_positions_are_kept(b):
    # operands laid out alike keep their (authored) layout, unit position included
    both = b.sl((4, 1, 8), (8, 0, 1), (S(0),), U4)
    x = b.var("x", (4, 8), layout=both, storage=SK.RMEM)
    y = b.var("y", (4, 8), layout=both, storage=SK.RMEM)
    assert b.call(Binary(BK.ADD), x, y).type.layout == both


def test_semantic_3_2_rule6_different_factorisations_still_refused(b):
    mesh = Mesh((Topology("cta", 4),), Layout((2, 2), (2, 1)), names=("a", "c"))
    lhs = b.var("l", (8,), layout=b.sl((2, 4), None, (S(0), B()), mesh))
    rhs = b.var("r", (8,), layout=b.sl((2, 2, 2), None, (S(0), B()), mesh))
    with pytest.raises(VerifyError, match="incompatible mesh axes"):
        b.call(Binary(BK.ADD), lhs, rhs)


def test_companions_2_5_keepdim_reduce_is_one_unit_position(b):
    x = b.var("x", (256, 4), layout=b.sl((8, 32, 4), (0, 1, 0), (S(2), S(0)), HEAD_PART), storage=SK.RMEM)
    peak = b.call(Reduce((0,), True, RK.MAX), x).type.layout
    assert peak.layout.shape == (1, 4)
    assert peak.attrs == (S(1), B())
    assert peak.layout.strides == (0, 1)


def test_companions_2_5_reshape_adds_no_unit_factor(b):
    column = b.var("c", (1, 4), layout=b.sl((1, 4), (0, 1), (S(1),), U4), storage=SK.RMEM)
    flat = b.call(Reshape((4,)), column).type.layout
    assert flat.layout.shape == (4,) and flat.attrs == (S(0),)
    rows = b.var("r", (4, 1), layout=b.sl((4, 1), (1, 0), (S(0),), U4), storage=SK.RMEM)
    flat = b.call(Reshape((4,)), rows).type.layout
    assert flat.layout.shape == (4,) and flat.attrs == (S(0),)
    lifted = b.call(Reshape((1, 4, 1)), flat_var(b)).type.layout
    assert lifted.layout.shape == (1, 4, 1) and lifted.attrs == (S(1),)


def flat_var(b):
    return b.var("f", (4,), layout=b.sl((4,), (1,), (S(0),), U4), storage=SK.RMEM)


def test_semantic_3_2_rule6_p19_column_shift_analyses():
    typed = _typed(f"{PROGRAMS / 'p19_unit_factor_split.py'}:ColumnShift")
    assert _comment_of(typed, "v1 = reduce(") == 'Tensor[(1, 4), "f32", ((1, 4 @ cta.head), (0, 1)), "rmem"]'
    assert _comment_of(typed, "v2 = sub(") == (
        'Tensor[(256, 4), "f32", ((8 @ cta.part, 32, 4 @ cta.head), (0, 1, 0)), "rmem"]')


# ---------------------------------------------------------------- §2.2 Broadcast placement


def _everywhere(b, shape=(8, 64), mesh=U16, storage=SK.GMEM, name="x"):
    strides = (64, 1) if shape == (8, 64) else None
    return b.var(name, shape, layout=b.sl(shape, strides, (B(),) * mesh.rank, mesh), storage=storage)


def _replicated(layout, shape, mesh=U16):
    return (isinstance(layout, ShardLayout) and layout.is_replicated and layout.mesh == mesh
            and layout.layout.shape == tuple(shape))


def test_semantic_3_2_fully_broadcast_input_is_no_real_sharding(b):
    # the shared service stays as the spec states it; ops keep the placement
    x = _everywhere(b)
    call = b.call(Binary(BK.MUL), x, x)
    assert derive_output_shard_layout((x.type, x.type), relations_of_call(call), (8, 64)) is None


def test_companions_2_2_broadcast_survives_binary(b):
    x = _everywhere(b)
    squared = b.call(Binary(BK.MUL), x, x)
    assert squared.type.layout == x.type.layout
    scaled = b.call(Binary(BK.MUL), squared, b.const(0.5))
    assert scaled.type.layout == x.type.layout


def test_companions_2_2_broadcast_keeps_an_equal_shape_physical_layout(b):
    # a column-major replicated value stays column-major, so a loop carry of it
    # keeps its type across trips
    x = b.var("x", (8, 64), layout=b.sl((8, 64), (1, 8), (B(),), U16), storage=SK.RMEM)
    assert b.call(Binary(BK.MUL), x, b.const(0.5)).type.layout == x.type.layout


def test_companions_2_2_broadcast_rebuilt_over_result_shape(b):
    column = _everywhere(b, (8, 1), name="col")
    x = _everywhere(b)
    out = b.call(Binary(BK.ADD), column, x).type.layout
    assert _replicated(out, (8, 64))
    out = b.call(Binary(BK.ADD), x, column).type.layout
    assert _replicated(out, (8, 64)) and out.layout.strides == (64, 1)


def test_companions_2_2_broadcast_survives_where_and_unary(b):
    x = _everywhere(b)
    mask = _everywhere(b, name="m")
    mask = b.var("m", (8, 64), "bool", layout=mask.type.layout)
    picked = b.call(Where(), mask, x, x)
    assert picked.type.layout == x.type.layout
    assert b.call(Unary(UK.EXP), x).type.layout == x.type.layout


def test_companions_2_2_broadcast_survives_reduce(b):
    x = _everywhere(b, storage=SK.RMEM)
    kept = b.call(Reduce((-1,), True, RK.SUM), x).type.layout
    assert _replicated(kept, (8, 1)) and kept.layout.strides == (1, 0)
    dropped = b.call(Reduce((-1,), False, RK.SUM), x).type.layout
    assert _replicated(dropped, (8,))


def test_companions_2_2_broadcast_on_two_meshes_is_no_placement(b):
    x = _everywhere(b)
    y = _everywhere(b, mesh=OTHER16, name="y")
    assert b.call(Binary(BK.ADD), x, y).type.layout is None


_CARRY = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="decayed", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 16),))
class Carry:
    @func
    def decayed(x: Tensor[(1, 64), "f32"]) -> Tensor[(1, 64), "f32"]:
        with Mesh(("cta",), (16,), ("u",)) as _grid:
            everywhere = tf.reshard(x, (1, 64), "{storage}")
            total = tf.full_like(everywhere, 0.0)
            for step in range(3):
                total = tf.exp(total * 0.5 + everywhere)
            return tf.reshard(total, (1, 64), "gmem")
'''


@pytest.mark.parametrize("storage", ["gmem", "rmem"])
def test_companions_2_2_broadcast_loop_carry_keeps_its_type(tmp_path, storage):
    # rmem gives the carry per-instance strides (0, 1): the body must keep them
    path = tmp_path / "carry.py"
    path.write_text(textwrap.dedent(_CARRY).replace("{storage}", storage))
    typed = _typed(f"{path}:Carry")
    seed = _comment_of(typed, "total = full_like(")
    assert "(1, 64)" in seed
    assert _comment_of(typed, "for step in range(3):") == seed


def test_companions_2_2_p22_replicated_keeps_placement():
    typed = _typed(f"{PROGRAMS / 'p22_broadcast_placement.py'}:Replicated")
    assert _comment_of(typed, "v2 = add(") == 'Tensor[(8, 64), "f32", (8, 64)]'


def test_companions_2_2_broadcast_restates_strides_that_differ_only_on_unit_axes(b):
    # (0, 0) over (1, 1) places every byte as C-order does: the rebuilt result
    # states C-order rather than lending the operand's unit-axis zeros
    x = b.var("x", (1, 1), layout=b.sl((1, 1), (0, 0), (B(),), U16), storage=SK.RMEM)
    assert b.call(Binary(BK.MUL), x, b.const(0.5)).type.layout.layout.strides == (1, 1)
    # an order that does move bytes differently is still lent (the carry case)
    y = b.var("y", (1, 8, 64), layout=b.sl((1, 8, 64), (0, 1, 8), (B(),), U16), storage=SK.RMEM)
    assert b.call(Binary(BK.MUL), y, b.const(0.5)).type.layout.layout.strides == (0, 1, 8)


# ---------------------------------------------------------------- Transpose result layout


def _head_split(b, shape, strides, split_axis, mesh=U4):
    return b.var("q", shape, layout=b.sl(shape, strides, (S(split_axis),), mesh), storage=SK.SMEM)


def test_semantic_3_2_a_transpose_relabelling_unit_axes_is_laid_out_fresh(b):
    """p20 head_major: (1, 1, 4 @ u, 64) in its local-box order, axes 1 and 2
    swapped -- only a unit axis moves, the element order is the operand's
    canonical one, so the result is canonical and stated fresh (no strides)."""
    from tilefoundry.ops import Transpose

    q = _head_split(b, (1, 1, 4, 64), (0, 0, 0, 1), 2)
    layout = b.call(Transpose((0, 2, 1, 3)), q).type.layout
    assert layout.layout.shape == (1, 4, 1, 64) and layout.attrs == (S(1),)
    assert layout.layout.strides is None


def test_semantic_3_2_a_transpose_reordering_axes_keeps_its_operands_strides_permuted(b):
    """p05: axes of extent 128 and 4 swap, so the result is a permuted view of
    the operand's order, strides permuted -- even though they happen to be the
    result's local-box order too."""
    from tilefoundry.ops import Transpose

    q = _head_split(b, (1, 128, 4, 64), (0, 64, 0, 1), 2)
    layout = b.call(Transpose((0, 2, 1, 3)), q).type.layout
    assert layout.layout.shape == (1, 4, 128, 64) and layout.attrs == (S(1),)
    assert layout.layout.strides == (0, 0, 64, 1)


def test_semantic_3_2_a_unit_relabelling_of_a_non_canonical_operand_keeps_its_order(b):
    """Only a unit axis moves, but the operand is column-major over its last
    two axes: that order is the physical one, kept permuted, never replaced by
    a canonical one."""
    from tilefoundry.ops import Transpose

    q = _head_split(b, (1, 1, 4, 64), (0, 0, 0, 4), 2)
    layout = b.call(Transpose((0, 2, 1, 3)), q).type.layout
    assert layout.layout.strides == (0, 0, 0, 4)
