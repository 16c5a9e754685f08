"""MMA tiles own their result layout, regroup relinearises row-major whenever the
sizes agree, and Where anchors storage on its data branches (semantic-analysis
§3.3 and §1.1, companions §2.6; programs p23 and p24)."""
import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.shard import B, Layout, Mesh, S, ShardLayout, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ops import (
    Binary,
    BinaryKind as BK,
    Mma_SM80_16x8x16,
    Reduce,
    ReduceKind as RK,
    Reshard,
    Where,
    Wgmma_SM90_64x128x16,
)
from tilefoundry.semantics.canonical import regroup

# p23's lane grid: lane = x + 4 y, so x is PTX's threadID_in_group, y its groupID
LANES = Mesh((Topology("thread", 32),), Layout((4, 8), (1, 4)), names=("x", "y"))
A_FRAGMENT = ((2, 4, 2, 8, 2), (1, 2, 8, 16, 128), (S(1), S(3)))
B_FRAGMENT = ((8, 2, 4, 2), (1, 8, 16, 64), (S(2), S(0)))
C_FRAGMENT = ((2, 4, 8, 2), (1, 2, 8, 64), (S(1), S(2)))
SM80 = Mma_SM80_16x8x16(DType.bf16, DType.bf16, DType.f32)


def fragment(b, name, shape, dtype, frag, mesh=LANES):
    gshape, strides, attrs = frag
    return b.var(name, shape, dtype, layout=b.sl(gshape, strides, attrs, mesh), storage=SK.RMEM)


def test_semantic_3_3_mma_owns_result_layout(b):
    a = fragment(b, "a", (16, 16), "bf16", A_FRAGMENT)
    w = fragment(b, "w", (16, 8), "bf16", B_FRAGMENT)
    got = b.call(SM80, a, w).type
    assert got.layout == b.sl(*C_FRAGMENT, LANES)
    assert (got.shape, got.dtype, got.storage) == ((16, 8), DType.f32, SK.RMEM)


def test_semantic_3_3_mma_unsplit_operands_give_unsplit_result(b):
    got = b.call(SM80, b.var("a", (16, 16), "bf16"), b.var("w", (16, 8), "bf16")).type
    assert got.layout is None and got.storage == SK.GMEM


def test_semantic_3_3_mma_fragment_follows_the_lane_mesh_axes(b):
    # the same lanes numbered by a (y, x) mesh: the fragment is unchanged, the
    # mesh-axis indices of its splits swap
    swapped = Mesh((Topology("thread", 32),), Layout((8, 4), (4, 1)), names=("y", "x"))
    a = fragment(b, "a", (16, 16), "bf16", (*A_FRAGMENT[:2], (S(3), S(1))), swapped)
    w = fragment(b, "w", (16, 8), "bf16", (*B_FRAGMENT[:2], (S(0), S(2))), swapped)
    assert b.call(SM80, a, w).type.layout == b.sl(*C_FRAGMENT[:2], (S(2), S(1)), swapped)


def test_semantic_3_3_mma_refuses_an_operand_off_its_register_fragment(b):
    rows = fragment(b, "a", (16, 16), "bf16", ((4, 4, 16), None, (S(0), B())))
    w = fragment(b, "w", (16, 8), "bf16", B_FRAGMENT)
    with pytest.raises(VerifyError, match=r"a \(operand 0\) is laid out .* but mma_sm80_16x8x16 reads it as "
                                          r"the register fragment \(\(2, 4 @ x, 2, 8 @ y, 2\)"):
        b.call(SM80, rows, w)


def test_semantic_3_3_mma_refuses_a_mesh_the_fragment_cannot_follow(b):
    # one 32-lane axis would have to split A's tig and group digits, which A
    # holds at non-adjacent strided positions
    flat = Mesh((Topology("thread", 32),), Layout((32,), (1,)), names=("t",))
    a = fragment(b, "a", (16, 16), "bf16", ((2, 32, 8), (1, 2, 64), (S(1),)), flat)
    with pytest.raises(VerifyError, match=r"mesh axis 0 \('t'\) spans lanes whose elements"):
        b.call(SM80, a, b.var("w", (16, 8), "bf16", storage=SK.RMEM))


def test_semantic_3_3_wgmma_accumulator_on_a_warpgroup(b):
    group = Mesh((Topology("thread", 128),), Layout((4, 8, 4), (1, 4, 32)), names=("x", "y", "w"))
    a = fragment(b, "a", (64, 16), "bf16",
                 ((2, 4, 2, 8, 2, 4), (1, 2, 8, 16, 128, 256), (S(1), S(3), S(5))), group)
    w = b.var("w", (16, 128), "bf16", storage=SK.RMEM)  # B carries no lane split: read whole
    got = b.call(Wgmma_SM90_64x128x16(DType.bf16, DType.bf16, DType.f32), a, w)
    assert got.type.layout == b.sl((2, 4, 16, 8, 2, 4), (1, 2, 8, 128, 1024, 2048), (S(1), S(3), S(5)), group)


def test_companions_2_6_regroup_row_major_relinearisation(b):
    # position 2 (extent 8) straddles: its high 2 lies in the rows, its low 4 in the columns
    assert regroup((16, 8), (2, 4, 8, 2)) == ((0, 1, 2), (2, 3))
    bias = b.call(Reshard(b.sl(*C_FRAGMENT, LANES), SK.RMEM), b.var("bias", (16, 8)))
    assert bias.type.layout == b.sl(*C_FRAGMENT, LANES)
    # an elementwise op carries the relinearised layout whole
    scaled = b.call(Binary(BK.MUL), bias, b.const(2.0))
    assert scaled.type.layout == bias.type.layout and scaled.type.storage == SK.RMEM


def test_companions_2_6_regroup_refuses_sizes_that_disagree(b):
    with pytest.raises(VerifyError, match=r"layout domain \(2, 4, 8, 3\) does not regroup onto logical shape "
                                          r"\(16, 8\) \(canonical regroup, row-major\): it holds 192 elements"):
        regroup((16, 8), (2, 4, 8, 3))
    with pytest.raises(VerifyError, match=r"layout domain \(2, 4, 8, 4\) holds 256 elements but the value"):
        b.call(Reshard(b.sl((2, 4, 8, 4), None, (S(1), S(2)), LANES), SK.RMEM), b.var("bias", (16, 8)))


def test_semantic_3_2_relinearised_layout_fails_closed_off_identity(b):
    bias = b.call(Reshard(b.sl(*C_FRAGMENT, LANES), SK.RMEM), b.var("bias", (16, 8)))
    with pytest.raises(VerifyError, match="row-major relinearisation .* propagates only through an identity"):
        b.call(Reduce((1,), True, RK.SUM), bias)


def test_semantic_3_3_where_condition_does_not_vote(b):
    cond = b.var("c", (4, 4), "bool", storage=SK.GMEM)
    got = b.call(Where(), cond, b.var("x", (4, 4), storage=SK.SMEM), b.var("y", (4, 4), storage=SK.SMEM))
    assert got.type.storage == SK.SMEM
    # the data branches still vote, and still disagree by their own positions
    with pytest.raises(VerifyError, match=r"operand 1 in gmem, operand 2 in smem"):
        b.call(Where(), cond, b.var("x", (4, 4)), b.var("y", (4, 4), storage=SK.SMEM))


def test_semantic_3_3_wgmma_refuses_a_lane_split_b(b):
    group = Mesh((Topology("thread", 128),), Layout((4, 8, 4), (1, 4, 32)), names=("x", "y", "w"))
    a = fragment(b, "a", (64, 16), "bf16",
                 ((2, 4, 2, 8, 2, 4), (1, 2, 8, 16, 128, 256), (S(1), S(3), S(5))), group)
    w = fragment(b, "w", (16, 128), "bf16", ((4, 4, 128), None, (S(0), B(), B())), group)
    with pytest.raises(VerifyError, match=r"b \(operand 1\) is split on the lane mesh, but wgmma_sm90_64x128x16 "
                                          "reads it whole"):
        b.call(Wgmma_SM90_64x128x16(DType.bf16, DType.bf16, DType.f32), a, w)
