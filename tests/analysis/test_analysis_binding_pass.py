"""One binding pass (analysis §2 check_program): a stated dims binds the types,
the Mesh geometry recorded on calls and the effective topology extents together,
and the inlined view never keeps an unbound mesh."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tilefoundry.errors import AnalysisError
from tilefoundry.ir.metadata import ExecutionDomainMetadata
from tilefoundry.ir.shard import ShardLayout, Topology
from tilefoundry.ir.substitute import collect_dimvars
from tilefoundry.ir.tensor_type import tensor_leaves

HEADER = (
    "from tilefoundry import module\n"
    "from tilefoundry.dsl import *\n"
    "from tilefoundry.target import CudaTarget\n"
)

# The CTA topology and the mesh layout are both ceildiv(tokens, 16).
TOKEN_TILES = """
TOKENS = DimVar("tokens", 1, 1025)
TILES = ceildiv(TOKENS, 16)


@module(entry="tile_silu", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", TILES),))
class TokenTiles:
    @func
    def tile_silu(x: Tensor[(TILES, 16, 64), "f32"]) -> Tensor[(TILES, 16, 64), "f32"]:
        with Mesh(("cta",), (TILES,), ("t",)) as grid:
            tiles = tf.reshard(x, (TILES @ grid.t, 16, 64), "gmem")
            return tf.silu(tiles)
"""

# A dimension written only in a `with Mesh` geometry: no type or op names it.
MESH_ONLY = """
UNITS = DimVar("units", 1, 9)


@module(entry="twice", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 8),))
class MeshOnly:
    @func
    def twice(x: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        with Mesh(("cta",), (UNITS,), ("u",)) as grid:
            return x * 2.0
"""


def write(tmp_path, body: str):
    path = tmp_path / "prog.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def load(tmp_path, body: str, root: str):
    from tilefoundry.dsl.loader import load_selection

    return load_selection(f"{write(tmp_path, body)}:{root}")


def view_meshes(function) -> list:
    from tilefoundry.analysis.check import iter_nodes

    meshes = []
    for node in iter_nodes(function.body):
        domain = node.get_metadata(ExecutionDomainMetadata)
        meshes.extend(domain.scopes if domain else ())
        meshes.extend(leaf.shard.mesh for leaf in tensor_leaves(node.type) if isinstance(leaf.shard, ShardLayout))
    return meshes


def test_analysis_2_dims_bind_types_meshes_and_topology_in_one_pass(tmp_path):
    from tilefoundry.analysis.analyze import analyze

    module, function = load(tmp_path, TOKEN_TILES, "TokenTiles")
    result = analyze(module, function, analysis="compute-cost", dims={"tokens": 100})
    assert result.function.params[0].type.shape == (7, 16, 64)
    meshes = view_meshes(result.function)
    assert meshes, "the view records the execution domain of its calls"
    for mesh in meshes:
        assert collect_dimvars(mesh, {}) == {}
        assert mesh.topologies == (Topology("cta", 7),)


def test_analysis_2_view_carries_the_topologies_bound_with_it(tmp_path):
    from tilefoundry.analysis.check import check_program_view

    module, function = load(tmp_path, TOKEN_TILES, "TokenTiles")
    view = check_program_view(module, function, bindings={"tokens": 100})
    assert view.topologies == (Topology("cta", 7),)
    # the authored program stays symbolic
    assert collect_dimvars(function.params[0].type, {}).keys() == {"tokens"}


def test_analysis_2_dim_reached_only_through_mesh_geometry(tmp_path):
    from tilefoundry.analysis.analyze import analyze

    module, function = load(tmp_path, MESH_ONLY, "MeshOnly")
    result = analyze(module, function, analysis="compute-cost", dims={"units": 8})
    assert all(mesh.layout.shape == (8,) for mesh in view_meshes(result.function))
    with pytest.raises(AnalysisError, match=r"open dimension: units is declared as \[1, 9\)"):
        analyze(module, function, analysis="compute-cost")


def test_analysis_2_cli_binds_mesh_geometry(tmp_path):
    path = write(tmp_path, TOKEN_TILES)
    result = subprocess.run(
        [sys.executable, "-m", "tilefoundry", "analyze", "--compute-cost", "--memory", "--roofline",
         "--performance", "--dim", "tokens=100", f"{path.name}:TokenTiles"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "# analysis target=nvidia.h200_sxm module=TokenTiles function=tile_silu topology=cta" in result.stdout
    assert 'Mesh((Topology("cta", 7),), Layout((7,), (1,))' in result.stdout
