"""The analysed view (companions §3.1; analysis §2 check_program): every call
inlined at its call site, each site elaborated under its own argument shapes."""
from __future__ import annotations

import textwrap

import pytest

from tilefoundry.errors import AnalysisError

HELPER = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

ROWS = DimVar("rows", 1, 65)
COLS = DimVar("cols", 1, 65)


@module(entry="main", target=CudaTarget("nvidia.h200_sxm"))
class HelperDims:
    @func
    def flatten(x: Tensor[(ROWS, 8), "f32"]) -> Tensor[(ROWS * 8,), "f32"]:
        return tf.reshape(tf.exp(x), (ROWS * 8,))

    @func
    def widen(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, COLS), "f32"]:
        return tf.zeros(Tensor[(4, COLS), "f32"])

    @func
    def main(a: Tensor[(4, 8), "f32"], b: Tensor[(16, 8), "f32"]):
        return flatten(a), flatten(b)

    @func
    def open_body(a: Tensor[(4, 8), "f32"]) -> Tensor[(4, COLS), "f32"]:
        return widen(a)
'''


def _typed(tmp_path, selector, dims=None):
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "helper_dims.py"
    source.write_text(textwrap.dedent(HELPER))
    module, function = load_selection(f"{source}:{selector}")
    return typed_program(module, function, dims)


def test_view_3_1_call_site_shapes_bind_the_callee_dims(tmp_path):
    text = _typed(tmp_path, "HelperDims")
    assert 'reshape(v0, new_shape=(32,))  # Tensor[(32,), "f32"]' in text
    assert 'reshape(v2, new_shape=(128,))  # Tensor[(128,), "f32"]' in text


def test_analysis_2_callee_dim_not_fixed_by_its_arguments_must_be_bound(tmp_path):
    with pytest.raises(AnalysisError, match=r"cols is declared as \[1, 65\)"):
        _typed(tmp_path, "HelperDims.open_body")
    assert 'Tensor[(4, 16), "f32"]' in _typed(tmp_path, "HelperDims.open_body", {"cols": 16})


def test_analysis_2_a_callee_signature_dim_may_be_stated(tmp_path):
    # it is reached through the function graph, so stating it is not an unknown name;
    # each call site still binds it from its own argument shapes
    text = _typed(tmp_path, "HelperDims", {"rows": 4})
    assert 'Tensor[(128,), "f32"]' in text


def test_view_3_1_inlined_view_leaves_authored_function_untouched(tmp_path):
    from tilefoundry.analysis.check import check_program
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "helper_dims.py"
    source.write_text(textwrap.dedent(HELPER))
    module, function = load_selection(f"{source}:HelperDims")
    body_before = function.body
    types_before = [f.type for f in function.body.fields]
    view = check_program(module, function)
    assert function.body is body_before
    assert [f.type for f in function.body.fields] == types_before
    assert view is not function and view.body is not function.body


def test_view_3_1_node_budget_names_size_and_limit(tmp_path):
    from tilefoundry.analysis.check import check_program
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "helper_dims.py"
    source.write_text(textwrap.dedent(HELPER))
    module, function = load_selection(f"{source}:HelperDims")
    with pytest.raises(AnalysisError, match=r"exceeding the node budget 3"):
        check_program(module, function, budget=3)


TREE = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="apply")
class Scale:
    @func
    def apply(x: Tensor[(4,), "f32"], w: ConstTensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x * w


@module(entry="main", target=CudaTarget("nvidia.h200_sxm"))
class Tree:
    first = Scale.renamed("first")
    second = Scale.renamed("second")

    @func
    def main(x: Tensor[(4,), "f32"], bias: ConstTensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return first(second(x)) + bias
'''


def test_analysis_2_promoted_weights_follow_the_tree_not_the_call_order(tmp_path):
    from tilefoundry.analysis.check import check_program_view
    from tilefoundry.dsl.loader import load_selection

    source = tmp_path / "tree.py"
    source.write_text(textwrap.dedent(TREE))
    module, function = load_selection(f"{source}:Tree")
    view = check_program_view(module, function)
    names = [view.parameter_name(p) for p in view.function.params]
    # entry parameters first, then declarations owner-before-children in tree order,
    # although `second` is called before `first`
    assert names == ["x", "bias", "first.w", "second.w"]
