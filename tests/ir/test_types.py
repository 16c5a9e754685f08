"""companions §1 (types) and §2 (shard and layout) — the data model rules."""
from __future__ import annotations

import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import DimVar, ceildiv, dim_max, format_dim, substitute
from tilefoundry.ir.dtype import DType, resolve_dtype
from tilefoundry.ir.shard import (
    B, Broadcast, ComposedLayout, Layout, Mesh, P, Partial, S, ShardLayout, Topology,
    c_order_strides, partial_reductions_by_axis,
)
from tilefoundry.ir.storage import StorageKind, resolve_storage
from tilefoundry.ir.tensor_type import TensorType, TupleType, numel, tensor_bytes


def test_types_1_1_dtype_set_and_bits():
    bits = {d: resolve_dtype(d).bits for d in
            ("f32", "f16", "bf16", "fp8e4m3", "f8e8m0", "f4e2m1", "i32", "i64", "bool")}
    assert bits == {"f32": 32, "f16": 16, "bf16": 16, "fp8e4m3": 8, "f8e8m0": 8,
                    "f4e2m1": 4, "i32": 32, "i64": 64, "bool": 1}
    assert DType.from_name("bf16") is DType.bf16
    assert str(DType.f32) == "f32"


def test_types_1_1_unknown_dtype_lists_sorted_valid_names():
    # the nearest spelling is suggested (issue 21), the valid names still listed
    with pytest.raises(VerifyError) as err:
        resolve_dtype("f8e4m3")
    assert str(err.value) == (
        "DType: unknown value 'f8e4m3'; did you mean 'fp8e4m3'? valid: ['bf16', 'bool', 'f16', 'f32', "
        "'f4e2m1', 'f8e8m0', 'fp8e4m3', 'i32', 'i64']"
    )
    with pytest.raises(VerifyError) as err:
        resolve_dtype("u8")  # nothing near: no suggestion
    assert str(err.value) == (
        "DType: unknown value 'u8'; valid: ['bf16', 'bool', 'f16', 'f32', "
        "'f4e2m1', 'f8e8m0', 'fp8e4m3', 'i32', 'i64']"
    )


def test_types_1_2_storage_tokens():
    assert [str(k) for k in StorageKind] == ["host", "gmem", "smem", "rmem", "tmem", "umat"]
    assert resolve_storage("smem") is StorageKind.SMEM
    assert resolve_storage(None) is None
    with pytest.raises(VerifyError, match="StorageKind: unknown value 'SMEM'"):
        resolve_storage("SMEM")


def test_types_1_3_malformed_shape_refused():
    with pytest.raises(VerifyError, match="malformed shape"):
        TensorType((4, "x"), "f32")
    with pytest.raises(VerifyError, match="malformed shape"):
        TensorType((4, True), "f32")


def test_types_1_4_non_affine_extent_refused():
    n, m = DimVar("n", 1, 9), DimVar("m", 1, 9)
    with pytest.raises(VerifyError, match="not affine"):
        TensorType((n * m,), "f32")
    assert TensorType((n // 4, n * 2 + 1), "f32").shape == (n // 4, n * 2 + 1)


def test_types_1_4_dimvar_identity_and_normal_form():
    n = DimVar("n", 1, 9)
    assert DimVar("n", 1, 9) is n
    assert DimVar("n", 1, 10) is not n
    assert n + n - n == n
    assert (n * 4) // 2 == 2 * n
    assert format_dim(ceildiv(n, 8)) == "(n + 7) // 8"
    assert ceildiv(16, 8) == 2
    assert substitute(n * 4 + 1, {"n": 3}) == 13
    assert dim_max(n, n) is n
    with pytest.raises(VerifyError, match="lo < hi"):
        DimVar("k", 4, 4)
    with pytest.raises(VerifyError, match="must be an int"):
        DimVar("k", True, 4)


def test_types_1_5_tensor_bytes_rounded_per_leaf():
    assert tensor_bytes(TensorType((3,), "f4e2m1")) == 2
    assert tensor_bytes(TensorType((9,), "bool")) == 2
    assert tensor_bytes(TensorType((), "bool")) == 1
    pair = TupleType((TensorType((3,), "bool"), TensorType((3,), "bool")))
    assert tensor_bytes(pair) == 2
    assert numel(TensorType((0, 5), "f32")) == 0


def test_types_1_5_symbolic_numel_names_the_dim():
    with pytest.raises(VerifyError, match="bind it with --dim n=EXTENT"):
        numel(TensorType((DimVar("n", 1, 9),), "f32"))


def test_shard_2_2_mesh_tuple_layout_is_row_major():
    mesh = Mesh((Topology("cta", 8),), (4, 2), ("a", "b"))
    assert mesh.layout == Layout((4, 2), (2, 1))
    assert c_order_strides((4, 32)) == (32, 1)


def test_shard_2_2_multi_level_axes_assigned_left_to_right():
    mesh = Mesh((Topology("cta", 8), Topology("thread", 128)), (8, 4, 32), ("r", "w", "l"))
    assert mesh.axis_levels() == ("cta", "thread", "thread")


def test_shard_2_2_axis_straddling_levels_refused():
    mesh = Mesh((Topology("cta", 4), Topology("thread", 64)), (8, 32), ("a", "b"))
    with pytest.raises(VerifyError, match="straddles topology levels"):
        mesh.axis_levels()


def test_shard_2_2_slice_records_offset_and_parent_strides():
    grid = Mesh((Topology("cta", 6),), (6,), ("u",))
    right = grid[4:]
    assert right.layout == ComposedLayout(None, 4, Layout((2,), (1,)))
    with pytest.raises(VerifyError, match="sliced again"):
        right[0:1]
    with pytest.raises(VerifyError, match="empty slice"):
        grid[3:3]


def test_shard_2_3_attrs_one_per_mesh_axis():
    mesh = Mesh((Topology("cta", 4),), (4,), ("c",))
    with pytest.raises(VerifyError, match="one attr per mesh axis"):
        ShardLayout(Layout((4, 8)), (S(0), B()), mesh)
    with pytest.raises(VerifyError, match="names no position"):
        ShardLayout(Layout((4, 8)), (S(2),), mesh)
    with pytest.raises(VerifyError, match="unknown reduction"):
        Partial("avg")


def test_semantic_3_2_partial_reductions_by_axis():
    mesh = Mesh((Topology("cta", 8),), (2, 4), ("m", "k"))
    layout = ShardLayout(Layout((2, 64, 64)), (S(0), P("sum")), mesh)
    assert partial_reductions_by_axis(layout) == (None, "sum")
    assert partial_reductions_by_axis(None) == ()
    assert ShardLayout(Layout((8,)), (B(), Broadcast()), mesh).is_replicated
