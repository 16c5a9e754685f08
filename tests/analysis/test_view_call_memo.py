"""The view answers a primitive's type by identity (analysis §2: types are
inferred over the whole reachable graph while inlining): a call whose bound op,
scopes and operand types are the very objects of one built before takes that
call's type and Structure. Each must be what typeinfer itself answers."""
from __future__ import annotations

import textwrap

from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.view import build_view
from tilefoundry.dsl.loader import load_selection
from tilefoundry.ir.expr import Call
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import ExecutionDomainMetadata
from tilefoundry.semantics.typeinfer import build_call

PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = DimVar("rows", 1, 65)


@module(entry="main", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Repeated:
    @func
    def scaled(x: Tensor[(ROWS, 8), "f32"], y: Tensor[(ROWS, 8), "f32"]) -> Tensor[(ROWS, 8), "f32"]:
        with Mesh(("cta",), (4,), ("r",)) as g:
            s = tf.reshard(x, (ROWS, 8 @ g.r), "smem")
            return tf.reshard(tf.exp(s) * tf.reshard(y, (ROWS, 8 @ g.r), "smem"), (ROWS, 8), "gmem")

    @func
    def head(x: Tensor[(ROWS, 8), "f32"]) -> Tensor[(ROWS, 4), "f32"]:
        return x[:, 4:8]  # literal starts: a tuple operand, keyed by its values

    @func
    def main(a: Tensor[(4, 8), "f32"], b: Tensor[(16, 8), "f32"], c: Tensor[(4, 8), "f32"]):
        # the same shapes twice (answered by identity), another shape, and one
        # operand passed as both arguments
        return scaled(a, c), scaled(c, a), scaled(b, b), scaled(a, a), head(a), head(c), head(b)
'''


def _view(tmp_path):
    source = tmp_path / "repeated.py"
    source.write_text(textwrap.dedent(PROGRAM))
    module, function = load_selection(f"{source}:Repeated")
    return build_view(module, function, {})


def test_analysis_2_every_primitive_carries_the_type_and_structure_typeinfer_gives(tmp_path):
    view = _view(tmp_path)
    calls = [n for n in iter_nodes(view.function.body)
             if isinstance(n, Call) and not isinstance(n.op, Function)]
    assert len(calls) == 4 * 5 + 3  # every site inlined: two loads, exp, mul, store; a slice
    for call in calls:
        domain = call.get_metadata(ExecutionDomainMetadata)
        asked = build_call(call.op, call.args, scopes=domain.scopes if domain else ())
        assert call.type == asked.type, call
        assert call.structure is asked.structure, call


def test_analysis_2_sites_of_one_shape_share_types_and_others_keep_their_own(tmp_path):
    view = _view(tmp_path)
    exps = [n for n in iter_nodes(view.function.body)
            if isinstance(n, Call) and type(n.op).__name__ == "Unary"]
    shapes = [tuple(e.type.shape) for e in exps]
    assert shapes == [(4, 8), (4, 8), (16, 8), (4, 8)]
    assert exps[0].type is exps[1].type is exps[3].type  # one object per distinct type
    assert exps[0].structure is exps[1].structure
    assert exps[2].structure is not exps[0].structure
    slices = [n for n in iter_nodes(view.function.body)
              if isinstance(n, Call) and type(n.op).__name__ == "Slice"]
    assert [tuple(s.type.shape) for s in slices] == [(4, 4), (4, 4), (16, 4)]
    assert slices[0].structure is slices[1].structure is not slices[2].structure
