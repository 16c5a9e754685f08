"""analysis §1 (constraints of the family framework) and §2 (check_program,
analyze) bullets not covered by test_analysis_api.py: one test per bullet,
named after its section."""
from __future__ import annotations

import dataclasses

import pytest

from tests.analysis.analysis_helpers import DIMMED, FLAT, LOOPY, load
from tests.conftest import PROGRAMS
from tilefoundry.analysis.analyze import AnalysisResult, analyze
from tilefoundry.analysis.check import check_program, check_program_view, iter_nodes
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.analysis.descriptor import Analyzer
from tilefoundry.analysis.dim_binding import select_variant
from tilefoundry.errors import AnalysisError, TileFoundryError
from tilefoundry.ir.expr import Call, GridRegionExpr, Var
from tilefoundry.ir.function import DimVarRangePat, Function
from tilefoundry.ir.metadata import BindingMetadata, IRMetadata
from tilefoundry.target.cpu import CpuTarget


def _calls(function):
    return [n for n in iter_nodes(function.body) if isinstance(n, Call)]


def _sum(records, field):
    total: dict = {}
    for record in records:
        for key, value in getattr(record, field):
            total[key] = total.get(key, 0) + value
    return total


def _program(body_target: str, topologies: str = "") -> str:
    return f"""
@module(entry="f", target={body_target}{topologies})
class Same:
    @func
    def f(x: Tensor[(16, 8), "f32"], i: Tensor[(16, 8), "i32"]):
        return tf.rsqrt(x * x + 1.0), i * i, x < 0.5
"""


# ---------------------------------------------------------------- §1 constraints


def test_analysis_1_record_type_means_one_quantity_at_every_attachment(tmp_path):
    """Loop-free, the Function record is exactly the sum of its Call records:
    the same quantity (logical work) at both attachment points."""
    module, function = load(tmp_path, FLAT, "Flat")
    result = analyze(module, function, analysis="compute-cost")
    calls = [c.get_metadata(ComputeCostMetadata) for c in _calls(result.function)]
    whole = result.function.get_metadata(ComputeCostMetadata)
    for field in ("flops", "flops_per_unit", "service", "service_per_unit"):
        assert dict(getattr(whole, field)) == _sum(calls, field)


def test_analysis_1_function_record_is_per_invocation_not_cached(programs_dir):
    """A Function record states what one analysis found for one invocation:
    the same authored Function analysed at two levels gets two answers, and the
    authored Function carries none."""
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(f"{PROGRAMS / 'p01_rownorm_mesh.py'}:RowNormTiles")
    cta = analyze(module, function, analysis="compute-cost")
    thread = analyze(module, function, analysis="compute-cost", level="thread")
    assert cta.function.get_metadata(ComputeCostMetadata).flops_per_unit == (
        ("bf16", 4096), ("f32", 8194))  # one row of 2048 per CTA
    assert thread.function.get_metadata(ComputeCostMetadata).flops_per_unit == (
        ("bf16", 32), ("f32", 66))  # 16 elements per thread; the (8, 1) rows only split on cta
    assert function.get_metadata(ComputeCostMetadata) is None


def test_analysis_1_logical_work_is_target_independent(tmp_path):
    cpu_module, cpu_fn = load(tmp_path, _program("CpuTarget()"), "Same")
    cuda_module, cuda_fn = load(tmp_path, _program('CudaTarget("nvidia.h200_sxm")'), "Same")
    cpu = analyze(cpu_module, cpu_fn, analysis="compute-cost")
    cuda = analyze(cuda_module, cuda_fn, analysis="compute-cost")
    assert [c.get_metadata(ComputeCostMetadata) for c in _calls(cpu.function)] == [
        c.get_metadata(ComputeCostMetadata) for c in _calls(cuda.function)]


def test_compute_cost_1_2_1_missing_geometry_not_replaced_by_target_capacity(tmp_path):
    """A CUDA target states SM counts, but a program with no topology has no
    unit: the level stays None and nothing divides (per-unit = whole)."""
    module, function = load(tmp_path, _program('CudaTarget("nvidia.h200_sxm")'), "Same")
    result = analyze(module, function, analysis="compute-cost")
    assert result.level is None
    whole = result.function.get_metadata(ComputeCostMetadata)
    assert whole.flops == whole.flops_per_unit == (("f32", 256),)
    assert whole.service == whole.service_per_unit == (
        ("integer", 128), ("predicate", 128), ("special", 128))


def test_analysis_1_undeclared_target_is_not_defaulted(tmp_path):
    module, function = load(tmp_path, """
@module(entry="f")
class NoTarget:
    @func
    def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return x * x
""", "NoTarget")
    with pytest.raises(TileFoundryError, match="Module 'NoTarget': no target is declared"):
        analyze(module, function, analysis="compute-cost")


def test_analysis_1_rendering_is_not_a_field_of_the_result():
    names = [f.name for f in dataclasses.fields(AnalysisResult)]
    assert names == ["module", "function", "analyses", "level", "executed", "metadata_types", "refused"]


# ---------------------------------------------------------------- §2 check_program


def test_analysis_2_check_program_runs_no_analysis_and_attaches_nothing(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    view = check_program(module, function)
    for fn in (view, function):
        nodes = [fn, *fn.params, *iter_nodes(fn.body)]
        assert all(n.get_metadata(ComputeCostMetadata) is None for n in nodes)


def test_analysis_2_check_program_refuses_an_open_dimension(tmp_path):
    module, function = load(tmp_path, DIMMED, "Dimmed")
    with pytest.raises(AnalysisError) as info:
        check_program(module, function)
    assert str(info.value).startswith(
        "check_program: 'grow' is not concrete: parameter 'v' still has the open dimension(s) ['n']")


@pytest.mark.parametrize("topology, reason", [
    ('Topology("cta", 0)', "program topology level 'cta' with extent 0 is invalid: "),
    ('Topology("thread", 4096)', "program topology level 'thread' with extent 4096 is invalid: "),
    ('Topology("warp", 4)', "program topology level 'warp' with extent 4 is invalid: "),
])
def test_analysis_2_topology_rejection_names_level_extent_and_reason(tmp_path, topology, reason):
    module, function = load(tmp_path, f"""
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=({topology},))
class T:
    @func
    def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return x * x
""", "T")
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="compute-cost")
    message = str(info.value)
    # issue 40 item 7: led by where the level is declared, the target's reason follows
    where = info.value.location
    path, line, col = where.rsplit(":", 2)
    with open(path, encoding="utf-8") as source:
        declared = source.read().splitlines()[int(line) - 1]
    assert declared[int(col) - 1:].startswith(topology)
    assert message.startswith(f"{where}: {reason}") and len(message) > len(where) + len(reason) + 10
    assert "\n" not in message


HELPERS_IN_LOOP = """
@module(entry="run", target=CpuTarget())
class Inl:
    @func
    def twice(a: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return a + a

    @func
    def run(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        acc = x
        for i in range(3):
            acc = twice(acc)
        return twice(acc)
"""


def test_analysis_2_view_inlines_calls_and_keeps_each_loop(tmp_path):
    module, function = load(tmp_path, HELPERS_IN_LOOP, "Inl")
    authored_body = function.body
    view = check_program(module, function)
    nodes = list(iter_nodes(view.body))
    assert not any(isinstance(n, Call) and isinstance(n.op, Function) for n in nodes)
    loops = [n for n in nodes if isinstance(n, GridRegionExpr)]
    assert len(loops) == 1 and loops[0].trips == 3
    assert isinstance(loops[0].induction_var, Var) and all(isinstance(c, Var) for c in loops[0].carried)
    assert function.body is authored_body  # the authored Function is unchanged
    assert any(isinstance(n, Call) and isinstance(n.op, Function) for n in iter_nodes(function.body))


def test_analysis_2_promoted_weights_dotted_owner_before_children(programs_dir):
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(f"{PROGRAMS / 'p06_module_tree.py'}:MiniStack")
    view = check_program_view(module, function)
    names = [view.parameter_name(p) for p in view.function.params]
    assert names[:9] == ["token", "k0", "v0", "k1", "v1", "k2", "v2", "table", "w_vocab"]
    promoted = names[9:]
    # blk0's weights, then blk1's, then blk2's, each in declaration order
    assert promoted[:2] == ["blk0.gamma_attn", "blk0.w_q"]
    assert [n.split(".")[0] for n in promoted] == sorted(n.split(".")[0] for n in promoted)
    assert len(promoted) == len(set(promoted)) == 21


def test_analysis_2_bindings_unique_and_deterministic(tmp_path):
    module, function = load(tmp_path, HELPERS_IN_LOOP, "Inl")

    def names():
        view = check_program(module, function)
        return [c.get_metadata(BindingMetadata).name for c in _calls(view)]

    first = names()
    assert first == names() and len(first) == len(set(first))
    assert all(n.startswith("v") for n in first)


def test_analysis_2_budget_refusal_states_exact_size_and_limit(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    size = check_program_view(module, function).node_count
    with pytest.raises(AnalysisError) as info:
        check_program(module, function, budget=size - 1)
    assert str(info.value) == (f"inlining 'step' produces {size} body nodes, exceeding the node "
                               f"budget {size - 1}")
    assert check_program(module, function, budget=size) is not None


def test_analysis_2_budget_counts_an_exponential_view_exactly(tmp_path):
    """f<k> calls f<k-1> twice: 2**16 multiplies after inlining. The refusal
    states that size without building it."""
    lines = ['@module(entry="f16", target=CpuTarget())', "class Blow:", "    @func",
             '    def f0(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:', "        return x * x"]
    for k in range(1, 17):
        lines += ["    @func", f'    def f{k}(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:',
                  f"        return f{k - 1}(f{k - 1}(x))"]
    module, function = load(tmp_path, "\n" + "\n".join(lines) + "\n", "Blow")
    with pytest.raises(AnalysisError, match=r"produces 65536 body nodes, exceeding the node budget 1000$"):
        check_program(module, function, budget=1000)


def test_analysis_2_where_constraint_is_measured_as_written(tmp_path):
    """A deferred placement states no distribution: the value contributes its
    whole figures to the per-unit total; a resolved layout still projects."""
    module, function = load(tmp_path, """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Deferred:
    @func
    def f(x: Tensor[(8, 16), "f32"]):
        y: where(layout=(8 @ cta, _)) = x * x
        with Mesh(("cta",), (4,), ("c",)) as m:
            z = tf.reshard(x, (8 @ m.c, 16), "gmem")
            return y, z * z
""", "Deferred")
    result = analyze(module, function, analysis="compute-cost")
    flops = [c.get_metadata(ComputeCostMetadata) for c in _calls(result.function)]
    assert [(r.flops, r.flops_per_unit) for r in flops if r.flops] == [
        ((("f32", 128),), (("f32", 128),)),  # deferred: whole
        ((("f32", 128),), (("f32", 32),)),  # resolved row split: 2 of 8 rows
    ]


# ---------------------------------------------------------------- §2 analyze


CHILD = """
@module(entry="inner", topologies=(Topology("cta", 2),))
class Child:
    @func
    def inner(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return x * x

@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Parent:
    kid = Child.renamed("kid")

    @func
    def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return BODY
"""


def test_analysis_2_reached_edges_share_one_execution_context(tmp_path):
    module, function = load(tmp_path, CHILD.replace("BODY", "kid(x)"), "Parent")
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="compute-cost")
    assert str(info.value).startswith("analyze: 'f' calls 'inner' across execution contexts: the "
                                      "caller's topology hierarchy is (cta=4) but Module 'kid' states (cta=2)")
    # an attached child no call reaches has no edge
    module, function = load(tmp_path, CHILD.replace("BODY", "x + x"), "Parent")
    assert analyze(module, function, analysis="compute-cost").level == "cta"


def test_analysis_2_result_function_is_the_record_bearing_view(tmp_path):
    module, function = load(tmp_path, LOOPY, "Loopy")
    result = analyze(module, function, analysis="compute-cost")
    assert result.module is module and result.function is not function
    assert result.function.get_metadata(ComputeCostMetadata) is not None


def test_analysis_2_function_derived_by_specialising_is_refused(tmp_path):
    """A view a previous call derived is not one the Module owns."""
    module, function = load(tmp_path, DIMMED, "Dimmed")
    derived = analyze(module, function, analysis="compute-cost", dims={"n": 4}).function
    with pytest.raises(AnalysisError, match="function 'grow' is not owned by Module 'Dimmed'"):
        analyze(module, derived, analysis="compute-cost", dims={"n": 4})


def _prototype(*ranges):
    from tilefoundry.ir.tensor_type import TensorType

    proto = Function("act", (), None, TensorType((), "f32"))
    for lo, hi in ranges:
        proto.variants.append((DimVarRangePat("rows", lo, hi), Function(f"v{lo}", (), None, None)))
    return proto


def test_analysis_2_exactly_one_variant_must_cover(tmp_path):
    proto = _prototype((1, 64), (32, 128))
    assert select_variant(proto, {"rows": 10}).name == "v1"
    with pytest.raises(AnalysisError, match=r"'act' has 2 variants covering rows=40"):
        select_variant(proto, {"rows": 40})
    with pytest.raises(AnalysisError, match=r"'act' declares no variant covering rows=200"):
        select_variant(proto, {"rows": 200})
    with pytest.raises(AnalysisError, match=r"selects a variant on 'rows'; bind it"):
        select_variant(proto, {})


def test_analysis_2_dependencies_come_from_the_same_target_instance(tmp_path):
    asked: list = []

    class Counting(CpuTarget):
        analyzer_paths = {"op-count": Analyzer("op-count", lambda f, c: None, requires=("compute-cost",))}

        def get_analyzer(self, selector):
            asked.append((id(self), selector))
            return super().get_analyzer(selector)

        def __repr__(self):
            return "Counting()"

    module, function = load(tmp_path, FLAT, "Flat")
    object.__setattr__(module, "target", Counting())
    analyze(module, function, analysis="op-count")
    target_id = id(module.resolve_target())
    assert [s for _, s in asked][:2] == ["op-count", "compute-cost"]
    assert {i for i, _ in asked} == {target_id}


def test_analysis_2_rerun_refreshes_owned_records_and_leaves_others(tmp_path):
    @dataclasses.dataclass(frozen=True)
    class Foreign(IRMetadata):
        note: str = "kept"

    module, function = load(tmp_path, LOOPY, "Loopy")
    function.with_metadata(Foreign())
    first = analyze(module, function, analysis="compute-cost")
    second = analyze(module, function, analysis="compute-cost")
    a = first.function.get_metadata(ComputeCostMetadata)
    b = second.function.get_metadata(ComputeCostMetadata)
    assert a == b and a is not b  # recomputed, not served from a cache
    assert function.get_metadata(Foreign) == Foreign()


# ---------------------------------------------------------------- §2.2 contexts and checkers


def test_analysis_2_2_callable_receives_view_and_exact_context(tmp_path):
    seen: dict = {}

    def run(function, ctx):
        seen.update(function=function, ctx=ctx)

    class Capture(CpuTarget):
        analyzer_paths = {"capture": Analyzer("capture", run)}

        def __repr__(self):
            return "Capture()"

    module, function = load(tmp_path, FLAT, "Flat")
    target = Capture()
    object.__setattr__(module, "target", target)
    options = object()
    result = analyze(module, function, analysis="capture", options=options)
    ctx = seen["ctx"]
    assert seen["function"] is result.function
    assert ctx.module is module and ctx.target is target and ctx.options is options
    assert ctx.level is None and ctx.root is ctx.current and ctx.root.node is result.function


def test_analysis_2_2_input_checker_must_not_attach_metadata(tmp_path):
    class Marker:
        def check_target(self, ctx):
            return None

        def check_call(self, call, ctx):
            call.with_metadata(ComputeCostMetadata())

        def finish(self, function, ctx):
            return None

    written: list = []

    class Marking(CpuTarget):
        analyzer_paths = {"marking": Analyzer("marking", lambda f, c: written.append(1),
                                              input_checker=Marker())}

        def __repr__(self):
            return "Marking()"

    module, function = load(tmp_path, FLAT, "Flat")
    object.__setattr__(module, "target", Marking())
    with pytest.raises(AnalysisError, match="input checker changed ComputeCostMetadata Metadata"):
        analyze(module, function, analysis="marking")
    assert written == []
