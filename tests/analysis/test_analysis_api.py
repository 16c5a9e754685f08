"""analysis §2 (check_program, analyze, dims) and §2.2 (Analyzer descriptors)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.analysis.analysis_helpers import DIMMED, FLAT, LOOPY, load
from tilefoundry.analysis.analyze import AnalysisResult, analyze, resolve_closure
from tilefoundry.analysis.check import check_program
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.descriptor import NO_INPUT_CHECK, Analyzer
from tilefoundry.errors import AnalysisError
from tilefoundry.ir.expr import Call
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.target.cpu import CpuTarget


@dataclass(frozen=True)
class AMeta(IRMetadata):
    value: int = 0


@dataclass(frozen=True)
class BMeta(IRMetadata):
    value: int = 0


def _noop(function, ctx):
    return None


def _target(table):
    """A CpuTarget subclass carrying ``table`` as its analyzer overrides."""
    return type("TableTarget", (CpuTarget,), {"analyzer_paths": dict(table), "__repr__": lambda s: "T()"})


def _with_target(module, target):
    object.__setattr__(module, "target", target)
    return module


# ---------------------------------------------------------------- §2.2 declarations


def test_analysis_2_2_declaration_requires_itself_rejected():
    with pytest.raises(AnalysisError, match="requires itself"):
        Analyzer("a", _noop, requires=("a",))


def test_analysis_2_2_declaration_repeated_dependency_rejected():
    with pytest.raises(AnalysisError, match="repeats the dependency 'b'"):
        Analyzer("a", _noop, requires=("b", "b"))


def test_analysis_2_2_declaration_duplicate_produces_rejected():
    with pytest.raises(AnalysisError, match="produces AMeta twice"):
        Analyzer("a", _noop, produces=(AMeta, AMeta))


def test_analysis_2_2_declaration_non_metadata_produces_rejected():
    with pytest.raises(AnalysisError, match="not an IRMetadata subclass"):
        Analyzer("a", _noop, produces=(int,))


def test_analysis_2_2_input_checker_defaults_to_no_op():
    analyzer = Analyzer("a", _noop)
    assert analyzer.input_checker is NO_INPUT_CHECK
    assert analyzer.input_checker.check_target(None) is None


def test_analysis_2_2_target_subclass_inherits_overrides_and_refuses():
    sub = _target({"compute-cost": None, "extra": Analyzer("extra", _noop)})()
    assert sub.get_analyzer("extra").selector == "extra"
    assert CpuTarget().get_analyzer("compute-cost").selector == "compute-cost"
    with pytest.raises(AnalysisError, match="refuses analyzer 'compute-cost'"):
        sub.get_analyzer("compute-cost")


# ---------------------------------------------------------------- §2 closure


def _closure_target():
    return _target({
        "a": Analyzer("a", _noop, requires=("b", "c")),
        "b": Analyzer("b", _noop, requires=("c",)),
        "c": Analyzer("c", _noop),
        "d": Analyzer("d", _noop, requires=("c",)),
        "x": Analyzer("x", _noop, requires=("y",)),
        "y": Analyzer("y", _noop, requires=("z",)),
        "z": Analyzer("z", _noop, requires=("x",)),
        "broken": Analyzer("broken", _noop, requires=("nowhere",)),
    })()


def test_analysis_2_union_closure_dependency_order_each_once():
    order = [a.selector for a in resolve_closure(_closure_target(), ("d", "a"))]
    assert order == ["c", "d", "b", "a"]


def test_analysis_2_cycle_names_path():
    with pytest.raises(AnalysisError) as info:
        resolve_closure(_closure_target(), ("x",))
    assert str(info.value) == "analysis dependency cycle: x -> y -> z -> x"


def test_analysis_2_missing_root_and_missing_dependency_differ():
    with pytest.raises(AnalysisError) as root:
        resolve_closure(_closure_target(), ("nope",))
    with pytest.raises(AnalysisError) as dep:
        resolve_closure(_closure_target(), ("broken",))
    assert str(root.value).startswith("unknown analysis selector 'nope'")
    assert str(dep.value).startswith("'broken' depends on 'nowhere', which is not registered")


def test_analysis_2_roots_first_occurrence_order(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    result = analyze(module, function, analysis=["compute-cost", "compute-cost"])
    assert isinstance(result, AnalysisResult)
    assert result.analyses == ("compute-cost",)
    assert result.executed == ("compute-cost",)
    assert result.metadata_types == (ComputeCostMetadata,)


def test_analysis_2_empty_selection_refused(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    with pytest.raises(AnalysisError, match="select at least one analysis"):
        analyze(module, function, analysis=[])


# ---------------------------------------------------------------- §2 level


def test_analysis_2_level_defaults_to_coarsest(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    assert analyze(module, function, analysis="compute-cost").level == "cta"


def test_analysis_2_level_none_without_topology(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    assert analyze(module, function, analysis="compute-cost").level is None


def test_analysis_2_bad_level_names_effective_levels(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="compute-cost", level="warp")
    assert str(info.value) == ("program topology level 'warp' is invalid: Module 'Loopy': no topology "
                               "named 'warp'; effective topology levels are ['cta']")


# ---------------------------------------------------------------- §2 dims


def test_analysis_2_dims_bind_and_record_extents(tmp_path):
    module, function = load(tmp_path, DIMMED, "Dimmed")
    result = analyze(module, function, analysis="compute-cost", dims={"n": 5})
    assert result.function.params[0].type.shape == (5, 8)
    assert result.function.get_metadata(ComputeCostMetadata).flops == (("f32", 40),)
    assert result.module is module


@pytest.mark.parametrize("dims, message", [
    ({}, "dims was stated but is empty"),
    ({"m": 3}, "analyze: 'grow' has no dimension named ['m']; it states ['n']"),
    ({"n": 65}, "analyze: dimension 'n' was declared over [1, 65) and cannot take 65"),
    ({"n": "4"}, "needs an integer extent"),
])
def test_analysis_2_dims_errors(tmp_path, dims, message):
    module, function = load(tmp_path, DIMMED, "Dimmed")
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="compute-cost", dims=dims)
    assert message in str(info.value)


def test_analysis_2_open_dimension_must_be_bound(tmp_path):
    module, function = load(tmp_path, DIMMED, "Dimmed")
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="compute-cost")
    assert str(info.value) == ("analyze needs one EXTENT for every open dimension: n is declared as "
                               '[1, 65); bind it with dims={"n": EXTENT} (try 1, 2, 33, 64)')


def test_analysis_2_dims_stated_without_ranges_not_ignored(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    with pytest.raises(AnalysisError, match="has no dimension named"):
        analyze(module, function, analysis="compute-cost", dims={"n": 3})


# ---------------------------------------------------------------- §2 ownership


def test_analysis_2_function_not_owned_refused(tmp_path):
    module, _ = load(tmp_path, FLAT, "Flat")
    _, other = load(tmp_path, LOOPY, "Loopy")
    with pytest.raises(AnalysisError, match="is not owned by Module 'Flat'"):
        analyze(module, other, analysis="compute-cost")


def test_analysis_2_derived_function_refused(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    derived = Function(function.name, function.params, function.body, function.return_type)
    with pytest.raises(AnalysisError, match="not owned"):
        analyze(module, derived, analysis="compute-cost")


# ---------------------------------------------------------------- §2 results and records


def test_analysis_2_authored_ir_unchanged_and_no_cross_call_cache(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    first = analyze(module, function, analysis="compute-cost")
    second = analyze(module, function, analysis="compute-cost")
    assert first.function is not second.function
    assert function.get_metadata(ComputeCostMetadata) is None
    assert first.function.get_metadata(ComputeCostMetadata) == second.function.get_metadata(ComputeCostMetadata)


def _ownership_target(run):
    return _target({
        "first": Analyzer("first", _write_a, produces=(AMeta,)),
        "second": Analyzer("second", run, requires=("first",), produces=(BMeta,)),
    })()


def _write_a(function, ctx):
    function.with_metadata(AMeta(1))


def _add_foreign(function, ctx):
    for node in _calls(function):
        node.with_metadata(AMeta(2))
        return


def _replace_foreign(function, ctx):
    function.with_metadata(AMeta(5))


def _equal_overwrite(function, ctx):
    function.with_metadata(AMeta(1))  # equal value, new record


def _remove_foreign(function, ctx):
    del function._metadata[AMeta]


def _calls(function):
    from tilefoundry.analysis.check import iter_nodes

    return [n for n in iter_nodes(function.body) if isinstance(n, Call)]


@pytest.mark.parametrize("run, how", [
    (_add_foreign, "added"), (_replace_foreign, "replaced"),
    (_equal_overwrite, "replaced"), (_remove_foreign, "removed"),
])
def test_analysis_2_2_metadata_ownership_enforced(tmp_path, run, how):
    module, function = load(tmp_path, FLAT, "Flat")
    _with_target(module, _ownership_target(run))
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="second")
    assert str(info.value).startswith(f"analysis 'second' {how} a AMeta record on ")
    assert "produces=('BMeta',)" in str(info.value)


def test_analysis_2_metadata_types_only_written(tmp_path):
    module, function = load(tmp_path, FLAT, "Flat")
    _with_target(module, _target({
        "first": Analyzer("first", _write_a, produces=(AMeta,)),
        "quiet": Analyzer("quiet", _noop, requires=("first",), produces=(BMeta,)),
    })())
    result = analyze(module, function, analysis="quiet")
    assert result.executed == ("first", "quiet")
    assert result.metadata_types == (AMeta,)


# ---------------------------------------------------------------- §2 input checkers


class _Recorder:
    def __init__(self, log, name, refuse=None):
        self.log, self.name, self.refuse = log, name, refuse

    def check_target(self, ctx):
        self.log.append((self.name, "target", ctx.level))

    def check_call(self, call, ctx):
        self.log.append((self.name, "call", id(call)))
        if self.refuse == "call":
            raise AnalysisError(f"{self.name}: refused a call")

    def finish(self, function, ctx):
        self.log.append((self.name, "finish"))


def test_analysis_2_checkers_closure_order_one_traversal(tmp_path):
    log: list = []
    module, function = load(tmp_path, FLAT, "Flat")
    _with_target(module, _target({
        "first": Analyzer("first", _write_a, produces=(AMeta,), input_checker=_Recorder(log, "first")),
        "second": Analyzer("second", _noop, requires=("first",), input_checker=_Recorder(log, "second")),
    })())
    analyze(module, function, analysis="second")
    kinds = [(n, k) for n, k, *_ in log]
    calls = [entry for entry in log if entry[1] == "call"]
    assert kinds[:2] == [("first", "target"), ("second", "target")]
    assert kinds[-2:] == [("first", "finish"), ("second", "finish")]
    # one traversal: each call is asked of every checker before the next call
    assert [c[0] for c in calls[:2]] == ["first", "second"] and calls[0][2] == calls[1][2]


def test_analysis_2_first_refusal_stops_before_any_write(tmp_path):
    log: list = []
    module, function = load(tmp_path, FLAT, "Flat")
    written = []
    _with_target(module, _target({
        "first": Analyzer("first", lambda f, c: written.append(1), produces=(AMeta,)),
        "second": Analyzer("second", _noop, requires=("first",),
                           input_checker=_Recorder(log, "second", refuse="call")),
    })())
    with pytest.raises(AnalysisError, match="second: refused a call"):
        analyze(module, function, analysis="second")
    assert written == []


def test_analysis_2_check_program_returns_inlined_view(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    view = check_program(module, function)
    assert isinstance(view, Function) and view is not function
    assert [p.name for p in view.params] == ["x", "w"]


def test_analysis_2_budget_exceeded_names_size_and_limit(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    with pytest.raises(AnalysisError) as info:
        check_program(module, function, budget=2)
    assert "exceeding the node budget 2" in str(info.value)
    with pytest.raises(AnalysisError, match="non-negative integer"):
        check_program(module, function, budget=-1)


# ---------------------------------------------------------------- a family slots in


def test_analysis_2_2_family_slots_in_via_target_subclass(tmp_path):
    from tests.analysis.toy_family import OpCountMetadata, ToyTarget
    from tilefoundry.render.report import render_analysis

    module, function = load(tmp_path, FLAT, "Flat")
    _with_target(module, ToyTarget())
    result = analyze(module, function, analysis="op-count")
    assert result.executed == ("compute-cost", "op-count")
    assert result.metadata_types == (ComputeCostMetadata, OpCountMetadata)
    assert result.function.get_metadata(OpCountMetadata).total == 256
    rendering = render_analysis(result)
    lines = rendering.text.splitlines()
    assert lines[2] == "# op-count=256"
    assert "# compute-cost" not in rendering.text  # only what was requested
    assert "compute-cost flops" not in rendering.text
    assert "; op-count=128" in rendering.text
    assert rendering.report["function_records"] == {"op-count": {"total": 256}}
