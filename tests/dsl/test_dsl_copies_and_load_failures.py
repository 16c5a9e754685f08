"""Copies of Modules own their functions (authoring §2.2, §2.6, §2.8; analysis §2),
and a file that fails while loading reports its first failure (authoring §2.10)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tilefoundry.errors import TileFoundryError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.function import Function
from tests.dsl.dsl_helpers import needs_ops

pytestmark = needs_ops

HEADER = (
    "from tilefoundry import module\n"
    "from tilefoundry.dsl import *\n"
    "from tilefoundry.target import CudaTarget\n"
)

# Stage's kernels call siblings above them; the root holds two renamed copies of
# Stage and attaches Bias twice, under two names.
PIPELINE = """
LEVELS = (Topology("cta", 4),)


@module(entry="stage", topologies=LEVELS)
class Stage:
    @func
    def scale(x: Tensor[(16, 128), "f32"], w_scale: ConstTensor[(128,), "f32"]) -> Tensor[(16, 128), "f32"]:
        return x * w_scale

    @func
    def gate(x: Tensor[(16, 128), "f32"], w_scale: ConstTensor[(128,), "f32"]) -> Tensor[(16, 128), "f32"]:
        scaled = scale(x, w_scale)
        return tf.sigmoid(scaled) * scaled

    @func
    def stage(x: Tensor[(16, 128), "f32"], w_scale: ConstTensor[(128,), "f32"]) -> Tensor[(16, 128), "f32"]:
        return gate(x, w_scale) + x


@module(entry="shift", topologies=LEVELS)
class Bias:
    @func
    def shift(x: Tensor[(16, 128), "f32"], offset: ConstTensor[(128,), "f32"]) -> Tensor[(16, 128), "f32"]:
        return x + offset


@module(target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Pipeline:
    stages = tuple(Stage.renamed(f"stage{i}") for i in range(2))
    lo = Bias
    hi = Bias

    @func
    def both(x: Tensor[(16, 128), "f32"]) -> Tensor[(16, 128), "f32"]:
        return tf.maximum(lo(x), hi(x))
"""


def write(tmp_path, body: str, name: str = "prog.py"):
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def load(source):
    from tilefoundry.dsl.loader import load_selection

    return load_selection(str(source))


def namespace(path):
    from tilefoundry.dsl.loader import load_module_file

    return load_module_file(str(path)).__dict__


def function_calls(function: Function) -> list[Call]:
    from tilefoundry.analysis.check import iter_nodes

    return [n for n in iter_nodes(function.body) if isinstance(n, Call) and isinstance(n.op, Function)]


def line_of(path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# ---------------------------------------------------------------- copies


def test_authoring_2_6_renamed_copy_owns_its_functions_and_calls(tmp_path):
    names = namespace(write(tmp_path, PIPELINE))
    stage, root = names["Stage"], names["Pipeline"]
    first, second = root.stage0, root.stage1
    for copy in (first, second):
        for function in copy.functions:
            assert function.owner is copy
            assert all(function is not original for original in stage.functions)
        # gate's call of scale is rebuilt against the copy's own scale, with the
        # copy's own parameters as its arguments
        (call,) = function_calls(copy.gate)
        assert call.op is copy.scale
        assert call.args == copy.gate.params
        assert copy.gate.params[0].type is stage.gate.params[0].type  # immutable values shared
    assert first.gate is not second.gate
    # the original is unchanged
    (call,) = function_calls(stage.gate)
    assert call.op is stage.scale and stage.gate.owner is stage and stage.owner is None


def test_authoring_2_2_child_attached_twice_is_two_resources(tmp_path):
    names = namespace(write(tmp_path, PIPELINE))
    bias, root = names["Bias"], names["Pipeline"]
    lo, hi = root.lo, root.hi
    assert lo.shift is not hi.shift and lo.shift.owner is lo and hi.shift.owner is hi
    assert bias.shift.owner is bias and bias.owner is None  # the class-body value is untouched
    calls = function_calls(root.both)
    assert [c.op for c in calls] == [lo.shift, hi.shift]
    # each call passes its own copy's weight
    assert calls[0].args[1] is lo.shift.params[1]
    assert calls[1].args[1] is hi.shift.params[1]


def test_authoring_2_6_copy_of_a_tree_rebuilds_calls_into_its_children(tmp_path):
    names = namespace(write(tmp_path, PIPELINE + "\nCOPY = Pipeline.renamed('copy')\n"))
    root, duplicate = names["Pipeline"], names["COPY"]
    assert duplicate.name == "copy" and duplicate.owner is None
    assert duplicate.lo is not root.lo and duplicate.lo.owner is duplicate
    assert [c.op for c in function_calls(duplicate.both)] == [duplicate.lo.shift, duplicate.hi.shift]
    assert [c.op for c in function_calls(root.both)] == [root.lo.shift, root.hi.shift]


def test_authoring_2_6_copy_keeps_variants_pointing_at_the_copy(tmp_path):
    source = """
    ROWS = DimVar("rows", 1, 129)


    @module(entry="act")
    class Act:
        @func
        def act(x: Tensor[(ROWS, 8), "f32"]) -> Tensor[(ROWS, 8), "f32"]:
            pass

        @act.specialize(DimVarRangePat("rows", 1, 64))
        def act_small(x: Tensor[(ROWS, 8), "f32"]) -> Tensor[(ROWS, 8), "f32"]:
            return tf.exp(x)

        @act.specialize(DimVarRangePat("rows", 64, 129))
        def act_large(x: Tensor[(ROWS, 8), "f32"]) -> Tensor[(ROWS, 8), "f32"]:
            return tf.sigmoid(x)


    COPY = Act.renamed("copy")
    """
    names = namespace(write(tmp_path, source))
    original, duplicate = names["Act"].act, names["COPY"].act
    assert duplicate is not original
    for (pattern, variant), (old_pattern, old_variant) in zip(duplicate.variants, original.variants):
        assert pattern == old_pattern and variant is not old_variant
        assert variant.base is duplicate and old_variant.base is original


def test_analysis_2_child_copy_owns_its_siblings(tmp_path):
    from tilefoundry.analysis.analyze import analyze

    path = write(tmp_path, PIPELINE)
    module, function = load(f"{path}:Pipeline.stage1.stage")
    result = analyze(module, function, analysis="compute-cost")
    assert [p.name for p in result.function.params] == ["x", "w_scale"]
    # selecting did not re-parent the tree: the child still belongs to the root
    root = module.owner
    assert root.name == "Pipeline" and root.stage1.owner is root
    assert root.stage1.gate.owner is root.stage1


def test_analysis_2_separate_attachment_paths_stay_separate(tmp_path):
    from tilefoundry.analysis.analyze import analyze

    module, function = load(f"{write(tmp_path, PIPELINE)}:Pipeline.both")
    result = analyze(module, function, analysis="compute-cost")
    assert [p.name for p in result.function.params] == ["x", "lo.offset", "hi.offset"]


def test_analysis_2_callee_outside_the_selected_tree_is_refused(tmp_path):
    """The owner is answered within the supplied tree: a Module built by hand
    whose function calls one of another tree has no owner there."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.errors import AnalysisError
    from tilefoundry.ir.module import Module

    names = namespace(write(tmp_path, PIPELINE))
    stage = names["Pipeline"].stage0
    orphan = Module("orphan", (stage.gate,), "gate", (), names["Pipeline"].target, stage.effective_topologies())
    with pytest.raises(AnalysisError, match="function 'scale' is reached from 'gate' but no Module"):
        analyze(orphan, orphan.gate, analysis="compute-cost")


# ---------------------------------------------------------------- load failures

FAILING_CONSTANT = """
SETTINGS = {"eps": "1e-6f"}
EPS = float(SETTINGS["eps"])


@module(entry="norm")
class Layer:
    @func
    def norm(x: Tensor[(1, 64), "f32"]) -> Tensor[(1, 64), "f32"]:
        return x + EPS


@module(target=CudaTarget("nvidia.h200_sxm"))
class Norms:
    layer = Layer
"""


def test_authoring_2_10_first_load_failure_reported(tmp_path):
    path = write(tmp_path, FAILING_CONSTANT)
    line = line_of(path, "EPS = float")
    with pytest.raises(TileFoundryError) as info:
        load(f"{path}:Norms.layer.norm")
    message = str(info.value)
    assert message == f"{path}:{line}:7: ValueError: could not convert string to float: '1e-6f'"
    assert "not defined" not in message


def test_authoring_2_10_root_refused_for_its_own_rule_reports_that_rule(tmp_path):
    """An unrelated earlier failure is set aside; the root's own refusal wins."""
    source = """
    BROKEN = 1 // 0


    @module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
    class Root:
        @func
        def f(x: Tensor[(4,), "f99"]) -> Tensor[(4,), "f99"]:
            return x
    """
    with pytest.raises(TileFoundryError) as info:
        load(f"{write(tmp_path, source)}:Root")
    assert "f99" in str(info.value) and "ZeroDivisionError" not in str(info.value)


def test_authoring_2_10_unrelated_failure_is_set_aside(tmp_path):
    source = """
    BROKEN = 1 // 0


    @module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
    class Root:
        @func
        def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
            return x
    """
    module, function = load(f"{write(tmp_path, source)}:Root")
    assert module.name == "Root" and function.name == "f"


MISSING = "tilefoundry_missing_package_xyz"


@pytest.mark.parametrize("importing, use", [
    (f"import {MISSING} as pkg", "x * pkg.SCALE"),
    (f"from {MISSING} import helper", "helper(x)"),
    (f"from {MISSING} import *", "x * SCALE_FROM_PACKAGE"),
], ids=["module", "name", "star"])
def test_authoring_2_10_missing_package_names_module_and_importing_line(tmp_path, importing, use):
    source = f"""
    {importing}


    @module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
    class Root:
        @func
        def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
            return {use}
    """
    path = write(tmp_path, source)
    line = line_of(path, MISSING)
    expected = f"{path}:{line}:1: ModuleNotFoundError: No module named '{MISSING}'"
    for selection in (f"{path}:Root", str(path)):
        with pytest.raises(TileFoundryError) as info:
            load(selection)
        assert str(info.value) == expected


def test_authoring_2_10_missing_package_in_a_child_is_reported_through_the_root(tmp_path):
    source = f"""
    import {MISSING}


    @module(entry="f")
    class Leaf:
        @func
        def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
            return x * {MISSING}.SCALE


    @module(target=CudaTarget("nvidia.h200_sxm"))
    class Root:
        leaf = Leaf
    """
    path = write(tmp_path, source)
    with pytest.raises(TileFoundryError, match=rf"^{path}:{line_of(path, MISSING)}:1: ModuleNotFoundError"):
        load(f"{path}:Root.leaf.f")


def tf(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tilefoundry", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("body, needle, rule", [
    (FAILING_CONSTANT, "EPS = float", "ValueError: could not convert string to float: '1e-6f'"),
    (f"import {MISSING}\n" + FAILING_CONSTANT.replace('float(SETTINGS["eps"])', f"{MISSING}.EPS"),
     f"import {MISSING}", f"ModuleNotFoundError: No module named '{MISSING}'"),
], ids=["constant", "package"])
def test_authoring_2_10_cli_reports_first_failure_on_one_line(tmp_path, body, needle, rule):
    path = write(tmp_path, body)
    result = tf("analyze", f"{path.name}:Norms.layer.norm", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"tilefoundry: error: {path.name}:{line_of(path, needle)}:")
    assert result.stderr.rstrip().endswith(rule) and "not defined" not in result.stderr
