"""authoring.md §2.4: without `from __future__ import annotations`, Python
evaluates parameter annotations at `def` time; layout sugar `N @ M.axis` over a
module-level Mesh must not fail there, and the parser still reads the AST."""
from __future__ import annotations

import textwrap

from tilefoundry.ir.shard import Mesh, MeshAxisRef, Topology, Split


def test_authoring_2_4_eager_sugar_annotation_loads(tmp_path):
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "eager_sugar.py"
    source.write_text(textwrap.dedent('''\
        from tilefoundry import module
        from tilefoundry.dsl import *
        from tilefoundry.target import CudaTarget
        M = Mesh((Topology("cta", 4),), (4,), ("c",))

        @module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
        class Eager:
            @func
            def f(x: Tensor[(16 @ M.c, 64), "f32"]) -> Tensor[(16 @ M.c, 64), "f32"]:
                return tf.exp(x)
        '''))
    _, function = load_selection(f"{source}:Eager")
    shard = function.params[0].type.layout
    assert shard.layout.shape == (4, 4, 64)
    assert shard.attrs == (Split(0),)


def test_shard_2_2_mesh_axis_attribute_access():
    mesh = Mesh((Topology("cta", 4),), (2, 2), ("a", "b"))
    assert mesh.b == MeshAxisRef(mesh, 1)
    unnamed = Mesh((Topology("cta", 4),), (4,))
    assert unnamed.x.index == 0
    try:
        mesh.nope
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("unknown mesh attribute must raise AttributeError")
