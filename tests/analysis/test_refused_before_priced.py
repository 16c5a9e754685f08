"""Never price a wrong program (issue 21): a program whose windows, meshes or
values the target cannot hold is refused before any family writes, with one
line naming where, the values, the rule and the remedy.

- authoring §5.5-5.6: a window of ``tile(E, step)`` is ``[w, w + step)``; a last
  window past E is refused at the ``for`` (static E) or at the binding (a DimVar
  E); every run-time window a loop reaches lies inside what it reads or writes.
- analysis §1.2.4 / shard §5: a Mesh's participants are its layout's exact
  image, so a Mesh placing positions its level lacks (or one twice) is refused by
  the program check, for every family and for the typed program.
- analysis §1.2.2: one value over an explicit level's capacity is refused naming
  the user's binding, where it was written, the bytes, the capacity, the remedy.
- companions §2.2-2.5: a Mesh's levels are the module's; a layout splits a
  position only by a divisor of its extent.
"""
from __future__ import annotations

import pytest

from tilefoundry.errors import AnalysisError, TileFoundryError, VerifyError
from tests.analysis.analysis_helpers import write

pytest.importorskip("tilefoundry.analysis.memory")
pytest.importorskip("tilefoundry.analysis.performance")

FAMILIES = [(), ("compute-cost",), ("memory",), ("roofline",), ("performance",),
            ("compute-cost", "memory", "roofline", "performance")]


def refusal(tmp_path, body, selector, families=("compute-cost",), dims=None, error=TileFoundryError,
            name="prog.py"):
    """(the one-line message, the program's path) of a refused analysis."""
    from tilefoundry import api

    path = write(tmp_path, body, name)
    with pytest.raises(error) as caught:
        api.analyze(f"{path}:{selector}", dims=dims, families=families)
    text = str(caught.value)
    assert "\n" not in text, text
    return text, path


def at(path, needle: str, nth: int = 0) -> str:
    """``file:line:col`` of the ``nth`` line holding ``needle``: the file's own
    1-based column, class-body indentation included (docs/authoring.md, Errors)."""
    found = [(k, line) for k, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    number, line = found[nth]
    return f"{path}:{number}:{line.index(needle) + 1}"


def analysed(tmp_path, body, selector, families=("compute-cost",), dims=None, name="prog.py"):
    from tilefoundry import api

    path = write(tmp_path, body, name)
    return api.analyze(f"{path}:{selector}", dims=dims, families=families)


# ---------------------------------------------------------------- authoring §5.6: tile windows

TILE_1000 = """
@module(entry="gemm", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Tiled:
    @func
    def gemm(a: Tensor[(128, 1000), "bf16"], b: Tensor[(1000, 64), "bf16"]) -> Tensor[(128, 64), "f32"]:
        with Mesh(("cta",), (4,), ("m",)) as grid:
            acc = tf.zeros(Tensor[(128 @ grid.m, 64), "f32", "rmem"])
            for kk in tile(1000, 64):
                a_tile = tf.reshard(a[:, kk], (128 @ grid.m, 64), "smem")
                b_tile = tf.reshard(b[kk, :], (64, 64), "smem")
                prod = tf.matmul(tf.cast(a_tile, "f32"), tf.cast(b_tile, "f32"))
                acc = acc + tf.reshard(prod, (128 @ grid.m, 64), "rmem")
            return acc
"""

TILE_REMEDY_1000 = (
    "use an extent divisible by 64 (960 or 1024), or a range loop with a sized slice "
    "(for k in range(0, 960, 64) reading x[..., k : k + 64], then x[..., 960:1000] for the rest)")


def test_authoring_5_6_tile_window_past_static_extent_refused_at_the_for(tmp_path):
    """K = 1000 under tile(K, 64): the last window [960, 1024) reads past K, yet
    16 full windows were priced. Refused while loading, at the `for`."""
    text, path = refusal(tmp_path, TILE_1000, "Tiled", error=VerifyError)
    assert text == (
        f"{at(path, 'for kk')}: tile(1000, 64): the last window [960, 1024) ends past the extent 1000, "
        "since a window of tile(E, step) is [w, w + step) (authoring §5.6); " + TILE_REMEDY_1000)


def test_authoring_5_6_tile_extent_divisible_by_step_is_analysed(tmp_path):
    assert analysed(tmp_path, TILE_1000.replace("1000", "1024"), "Tiled").result is not None


def test_authoring_5_6_tile_smaller_than_step_refused(tmp_path):
    body = TILE_1000.replace("1000", "50")
    text, path = refusal(tmp_path, body, "Tiled", error=VerifyError)
    assert text == (
        f"{at(path, 'for kk')}: tile(50, 64): the last window [0, 64) ends past the extent 50, since a "
        "window of tile(E, step) is [w, w + step) (authoring §5.6); use an extent divisible by "
        "64 (64), or a range loop with a sized slice (no loop, x[..., 0:50])")


TILE_DIMVAR = """
DEPTH = DimVar("depth", 64, 4097)

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Deep:
    @func
    def f(a: Tensor[(8, DEPTH), "f32"]) -> Tensor[(8, 64), "f32"]:
        acc = tf.zeros(Tensor[(8, 64), "f32"])
        for kk in tile(DEPTH, 64):
            acc = acc + a[:, kk]
        return acc
"""


@pytest.mark.parametrize("families", FAMILIES, ids=lambda f: "+".join(f) or "typed")
def test_authoring_5_6_tile_window_past_bound_extent_refused_at_binding(tmp_path, families):
    """A DimVar extent is refused when the bound value makes the last window
    overhang, naming the binding, for the typed program and every family."""
    text, path = refusal(tmp_path, TILE_DIMVAR, "Deep", families=families, dims={"depth": 1000},
                         error=VerifyError)
    assert text == (
        f"{at(path, 'for kk')}: tile(depth, 64) with depth=1000: the last window [960, 1024) ends past "
        "the extent 1000, since a window of tile(E, step) is [w, w + step) (authoring §5.6); "
        + TILE_REMEDY_1000)


def test_authoring_5_6_tile_over_bound_divisible_extent_is_analysed(tmp_path):
    assert analysed(tmp_path, TILE_DIMVAR, "Deep", dims={"depth": 1024}).result is not None


def test_authoring_5_6_p21_window_size_other_than_step_still_analysed():
    """p21's windows are sized 64 by explicit slices under tile(DEPTH, 128): the
    tile window is the step's, and its slices stay inside at depth=2048."""
    from tilefoundry import api
    from tests.conftest import PROGRAMS

    result = api.analyze(f"{PROGRAMS / 'p21_mesh_coordinate_loop.py'}:StridedDot",
                         dims={"depth": 2048}, families=("compute-cost", "memory"))
    assert result.result is not None
    with pytest.raises(VerifyError, match=r"tile\(depth, 128\) with depth=2000: the last window "
                                          r"\[1920, 2048\) ends past the extent 2000"):
        api.analyze(f"{PROGRAMS / 'p21_mesh_coordinate_loop.py'}:StridedDot",
                    dims={"depth": 2000}, families=("compute-cost",))


# ---------------------------------------------------------------- authoring §5.5: run-time windows

WINDOWS = """
@module(entry="over_tile", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class Windows:
    @func
    def over_tile(a: Tensor[(64, 1000), "f32"]) -> Tensor[(64, 64), "f32"]:
        acc = tf.zeros(Tensor[(64, 64), "f32"])
        for kk in tile(1024, 64):
            piece = a[:, kk]
            acc = acc + piece
        return acc

    @func
    def over_range(a: Tensor[(64, 1000), "f32"]) -> Tensor[(64, 64), "f32"]:
        acc = tf.zeros(Tensor[(64, 64), "f32"])
        for k in range(0, 1000, 64):
            acc = acc + a[:, k : k + 64]
        return acc

    @func
    def row_index(a: Tensor[(8, 64), "f32"]) -> Tensor[(64,), "f32"]:
        acc = tf.zeros(Tensor[(64,), "f32"])
        for i in range(10):
            acc = acc + a[i, :]
        return acc

    @func
    def moved_back(a: Tensor[(64, 1024), "f32"]) -> Tensor[(64, 64), "f32"]:
        acc = tf.zeros(Tensor[(64, 64), "f32"])
        for kk in tile(1024, 64):
            acc = acc + a[:, kk - 1]
        return acc

    @func
    def moved_on(a: Tensor[(64, 1024), "f32"]) -> Tensor[(64, 64), "f32"]:
        acc = tf.zeros(Tensor[(64, 64), "f32"])
        for kk in tile(1024, 64):
            acc = acc + a[:, kk + 32]
        return acc

    @func
    def coordinate(a: Tensor[(128, 2048), "f32"]) -> Tensor[(128, 64), "f32"]:
        with Mesh(("cta",), (4, 2), ("head", "w")) as grid:
            acc = tf.zeros(Tensor[(128, 64), "f32"])
            for kk in tile(2048, 64):
                start = kk + grid.w * 64
                acc = acc + a[:, start : start + 64]
            return acc

    @func
    def coordinate_fits(a: Tensor[(128, 2048), "f32"]) -> Tensor[(128, 64), "f32"]:
        with Mesh(("cta",), (4, 2), ("head", "w")) as grid:
            acc = tf.zeros(Tensor[(128, 64), "f32"])
            for kk in tile(2048, 128):
                start = kk + grid.w * 64
                acc = acc + a[:, start : start + 64]
            return acc

    @func
    def insert(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 1000), "f32"]:
        out = tf.zeros(Tensor[(8, 1000), "f32"])
        for kk in range(0, 1000, 64):
            out = tf.insert_slice(out, a, (0, kk))
        return out
"""

RULE = "every window a loop reaches must lie inside [0, {e}) (authoring §5.5-5.6): "


def _window_refusal(tmp_path, selector):
    return refusal(tmp_path, WINDOWS, f"Windows.{selector}", error=VerifyError)


def test_authoring_5_5_tile_window_over_a_smaller_tensor_refused(tmp_path):
    text, path = _window_refusal(tmp_path, "over_tile")
    assert text == (
        f"{at(path, 'a[:, kk]')}: the window [960, 1024) that 'piece' reads on axis 1 of 'a' (extent 1000) "
        f"ends past it when kk = 960 (for kk in tile(1024, 64) at {at(path, 'for kk in tile(1024')}); "
        + RULE.format(e=1000) + "stop the loop where the last window still fits (a start of at "
        "most 936), or read the rest with a sized slice")


def test_authoring_5_5_range_slice_window_past_extent_refused(tmp_path):
    text, path = _window_refusal(tmp_path, "over_range")
    assert text == (
        f"{at(path, 'a[:, k : k')}: the window [960, 1024) that the slice reads on axis 1 of 'a' (extent 1000) "
        f"ends past it when k = 960 (for k in range(0, 1000, 64) at {at(path, 'for k in range(0, 1000')}); "
        + RULE.format(e=1000) + "stop the loop where the last window still fits (a start of at "
        "most 936), or read the rest with a sized slice")


def test_authoring_5_5_range_index_past_extent_refused(tmp_path):
    text, path = _window_refusal(tmp_path, "row_index")
    assert text == (
        f"{at(path, 'a[i, :]')}: the window [9, 10) that the slice reads on axis 0 of 'a' (extent 8) "
        f"ends past it when i = 9 (for i in range(0, 10, 1) at {at(path, 'for i in range(10)')}); "
        + RULE.format(e=8) + "stop the loop where the last window still fits (a start of at "
        "most 7), or read the rest with a sized slice")


def test_authoring_5_5_window_moved_before_zero_refused(tmp_path):
    text, path = _window_refusal(tmp_path, "moved_back")
    assert text == (
        f"{at(path, 'a[:, kk - 1]')}: the window [-1, 63) that the slice reads on axis 1 of 'a' (extent 1024) "
        f"starts before 0 when kk = 0 (for kk in tile(1024, 64) at {at(path, 'for kk in tile(1024', 1)}); "
        + RULE.format(e=1024) + "start the loop where the first window begins at 0 or later")


def test_authoring_5_5_window_moved_past_extent_refused(tmp_path):
    text, path = _window_refusal(tmp_path, "moved_on")
    assert text.startswith(f"{at(path, 'a[:, kk + 32]')}: the window [992, 1056) that the slice reads on axis 1 "
                           "of 'a' (extent 1024) ends past it when kk = 960")


def test_authoring_5_5_mesh_coordinate_window_past_extent_refused(tmp_path):
    """p21's pattern with the loop stepping 64 instead of 128: the second worker's
    last window starts at 2048."""
    text, path = _window_refusal(tmp_path, "coordinate")
    assert text == (
        f"{at(path, 'a[:, start : start')}: the window [2048, 2112) that the slice reads on axis 1 of 'a' (extent 2048) "
        f"ends past it when kk = 1984 (for kk in tile(2048, 64) at {at(path, 'for kk in tile(2048, 64)')}) and a mesh "
        "coordinate = 1; " + RULE.format(e=2048) + "stop the loop where the last window still "
        "fits (a start of at most 1984), or read the rest with a sized slice")


def test_authoring_5_5_mesh_coordinate_window_inside_is_analysed(tmp_path):
    assert analysed(tmp_path, WINDOWS, "Windows.coordinate_fits").result is not None


def test_authoring_5_5_insert_slice_window_past_extent_refused(tmp_path):
    text, path = _window_refusal(tmp_path, "insert")
    assert text == (
        f"{at(path, 'tf.insert_slice')}: the window [960, 1024) that 'out' writes on axis 1 of 'out' (extent 1000) "
        f"ends past it when kk = 960 (for kk in range(0, 1000, 64) at {at(path, 'for kk in range(0, 1000')}); "
        + RULE.format(e=1000) + "stop the loop where the last window still fits (a start of at "
        "most 936), or write the rest apart")


# ---------------------------------------------------------------- analysis §1.2.4: mesh positions

MESH_64 = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 32),))
class Big:
    @func
    def f(x: Tensor[(64, 128), "f32"]) -> Tensor[(64, 128), "f32"]:
        with Mesh(("cta",), (8, 8), ("a", "b")) as m:
            y = tf.reshard(x, (64 @ m.a, 128), "gmem")
            z = tf.exp(y)
            return tf.reshard(z, (64, 128), "gmem")
"""


@pytest.mark.parametrize("families", FAMILIES, ids=lambda f: "+".join(f) or "typed")
def test_analysis_1_2_4_mesh_positions_outside_level_refused_by_program_check(tmp_path, families):
    """(8, 8) under Topology("cta", 32): 64 positions. Compute-cost and memory
    priced a 1/64 share; now every family and the typed program refuse it once,
    at the `with Mesh`."""
    text, path = refusal(tmp_path, MESH_64, "Big", families=families, error=AnalysisError)
    assert text == (
        f"{at(path, 'with Mesh')}: Mesh((\"cta\",), (8, 8)) places 64 positions against the 32 of level "
        "'cta': a Mesh's participants are its layout's exact image, which must lie inside its "
        "level (analysis §1.2.4, shard §5); use a mesh whose axes multiply to at most 32, or "
        "declare a larger Topology(\"cta\", 64)")


def test_analysis_1_2_4_mesh_inside_level_and_slices_are_analysed(tmp_path):
    body = """
    @module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
    class Fits:
        @func
        def f(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
            with Mesh(("cta",), (2, 4), ("r", "c")) as m:
                with m[1:] as half:
                    return tf.exp(a)
    """
    assert analysed(tmp_path, body, "Fits", families=("compute-cost", "memory")).result is not None


STRIDED = """
from tilefoundry.ir.types.shard import Layout

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class Strided:
    @func
    def f(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), Layout((4,), (4,)), ("c",)) as m:
            return tf.exp(a)

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Twice:
    @func
    def f(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), Layout((4,), (0,)), ("c",)) as m:
            return tf.exp(a)
"""


def test_analysis_1_2_4_mesh_strides_reaching_outside_level_refused(tmp_path):
    text, path = refusal(tmp_path, STRIDED, "Strided", error=AnalysisError)
    assert text == (
        f"{at(path, 'with Mesh')}: Mesh((\"cta\",), Layout((4,), (4,))) reaches position(s) 8, 12 outside "
        "the 8 positions [0, 8) of level 'cta': a Mesh's participants are its layout's exact "
        "image, which must lie inside its level (analysis §1.2.4, shard §5); use strides and an "
        "offset that stay inside [0, 8), or declare a larger Topology(\"cta\", 13)")


def test_analysis_1_2_4_mesh_naming_a_position_twice_refused(tmp_path):
    text, path = refusal(tmp_path, STRIDED, "Twice", error=AnalysisError)
    assert text == (
        f"{at(path, 'with Mesh', 1)}: Mesh((\"cta\",), Layout((4,), (0,))) places level 'cta' position 0 more "
        "than once: a Mesh's participants are its layout's exact image, one unit per coordinate "
        "(analysis §1.2.4, shard §5); give its layout strides that name each position once")


# ---------------------------------------------------------------- companions §2.2-2.5

FOREIGN = """
from tilefoundry.ir.types.shard import Layout, Mesh as MeshValue, ShardLayout, Split

EIGHT = MeshValue((Topology("cta", 8),), Layout((4,), (1,)))
FOUR = MeshValue((Topology("cta", 4),), Layout((4,), (1,)))

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Foreign:
    @func
    def f(x: Tensor[(64, 8), "f32", ShardLayout(Layout((4, 16, 8)), (Split(0),), EIGHT)]) -> Tensor[(64, 8), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.exp(x)

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Uneven:
    @func
    def f(x: Tensor[(10, 8), "f32", ShardLayout(Layout((10, 8)), (Split(0),), FOUR)]) -> Tensor[(10, 8), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            return tf.exp(x)
"""


def test_companions_2_2_mesh_topology_other_than_declared_refused(tmp_path):
    text, _ = refusal(tmp_path, FOREIGN, "Foreign", families=(), error=AnalysisError)
    assert text == (
        "parameter 'x': Mesh((\"cta\",), (4,)) states Topology(\"cta\", 8), but the module declares "
        "Topology(\"cta\", 4); a Mesh's levels are the module's (authoring §4.2, companions §2.2): "
        "build it from the declared Topology, or write it as `with Mesh((\"cta\",), ...)`")


@pytest.mark.parametrize("families", [(), ("compute-cost",), ("memory",)],
                         ids=lambda f: "+".join(f) or "typed")
def test_companions_2_5_split_not_dividing_its_position_refused(tmp_path, families):
    """A parameter's ShardLayout splitting 10 over 4: the typed program was
    accepted and each family failed later naming a generated `v0`."""
    text, _ = refusal(tmp_path, FOREIGN, "Uneven", families=families, error=AnalysisError)
    assert text == (
        "parameter 'x': its layout splits layout position 0 (extent 10) over mesh axis 'x' of "
        "extent 4, which does not divide it: each unit would hold 10/4 of it (companions "
        "§2.3-2.5); use an extent divisible by 4, or split a position that the axes divide")


# ---------------------------------------------------------------- analysis §1.2.2: capacity

RMEM = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4), Topology("thread", 128)))
class Big:
    @func
    def f(x: Tensor[(512, 256), "f32"]) -> Tensor[(512, 256), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as m:
            acc = tf.reshard(x, (512, 256), "rmem")
            y = tf.exp(acc)
            return tf.reshard(y, (512, 256), "gmem")
"""


@pytest.mark.parametrize("families", [("memory",), ("roofline",), ("performance",)])
def test_analysis_1_2_2_explicit_capacity_overflow_names_the_users_binding(tmp_path, families):
    """The refusal used to say `value 'v0'` with no location; `v0` is the view's
    name, not the user's."""
    text, path = refusal(tmp_path, RMEM, "Big", families=families, error=AnalysisError)
    assert text == (
        f"{at(path, 'tf.reshard(x')}: value 'acc' of function 'f' (v0 in the analysed program) needs 524288 B "
        "in rmem, more than the 262144 B the target states for that level (analysis §1.2.2); "
        "split it over a mesh axis (N @ m.a in its layout), tile it with a loop over windows, or "
        "place it in a larger level (gmem)")


def test_analysis_1_2_2_capacity_overflow_of_an_unnamed_value(tmp_path):
    body = RMEM.replace('acc = tf.reshard(x, (512, 256), "rmem")\n            y = tf.exp(acc)',
                        'y = tf.exp(tf.reshard(x, (512, 256), "rmem"))')
    text, path = refusal(tmp_path, body, "Big", families=("memory",), error=AnalysisError)
    assert text.startswith(f"{at(path, 'tf.reshard(x')}: the unnamed reshard result in function 'f' (v0 in the "
                           "analysed program) needs 524288 B in rmem, more than the 262144 B")


MESH_SLICES = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class IndexOut:
    @func
    def f(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), (2, 4), ("r", "c")) as m:
            with m[5] as row:
                return tf.exp(a)

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class LastRow:
    @func
    def f(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), (2, 4), ("r", "c")) as m:
            with m[-1] as row:
                return tf.exp(a)

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class Clipped:
    @func
    def f(a: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), (8,), ("c",)) as m:
            with m[:12] as part:
                return tf.exp(a)
"""


def test_companions_2_2_mesh_index_past_its_axis_refused(tmp_path):
    """`m[5]` on an axis of 2 placed 4 CTAs at positions 20..23 of an 8-CTA level,
    and compute-cost priced them."""
    text, path = refusal(tmp_path, MESH_SLICES, "IndexOut", error=VerifyError)
    assert text == (f"{at(path, 'm[5]')}: Mesh: index 5 is outside axis 0 of extent 2; a mesh index "
                    "names one of its positions, in [-2, 2)")


def test_companions_2_2_mesh_negative_index_counts_from_the_end(tmp_path):
    """`m[-1]` is the last row (positions 4..7), as in Python, not offset -4."""
    from tilefoundry.ir.expr import postorder
    from tilefoundry.ir.metadata import ExecutionDomainMetadata

    result = analysed(tmp_path, MESH_SLICES, "LastRow")
    call = next(n for n in postorder(result.result.function.body)
                if n.get_metadata(ExecutionDomainMetadata))
    inner = call.get_metadata(ExecutionDomainMetadata).scopes[-1]
    assert inner.layout.offset == 4


def test_companions_2_2_mesh_slice_past_its_axis_refused_not_clipped(tmp_path):
    text, path = refusal(tmp_path, MESH_SLICES, "Clipped", error=VerifyError)
    assert text == (f"{at(path, 'm[:12]')}: Mesh: slice bound 12 is outside axis 0 of extent 8; a "
                    "mesh slice names positions the axis has (it is not clipped): use bounds in "
                    "[-8, 8]")
