"""analysis §1.2.1: the loops a node transitively reads. ``loop_dependence``
solves each loop by a fixpoint that forgets, per trip, only what that trip
answered; here every answer is checked against the definition itself, a
least fixpoint over every node of the view at once (Kleene iteration from the
empty set), on nested loops whose inner body reads an outer loop's variable,
the golden loop programs and a placed zoo layer."""
from __future__ import annotations

import pytest

from tests.analysis.analysis_helpers import load
from tests.dsl.dsl_helpers import PROGRAMS
from tests.models.zoo_cache import namespace
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import check_program_view
from tilefoundry.analysis.dim_binding import resolve_dims
from tilefoundry.analysis.recomputation import _loop_dependence
from tilefoundry.analysis.view import CallSite
from tilefoundry.dsl.loader import load_selection, resolve_selector
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var

# a loop nest over `acc`, then a sibling loop; {nest} is the nest
PROGRAM = """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Nest:
    @func
    def f(x: Tensor[(4, 8), "f32"], y: Tensor[(3, 8), "f32"]) -> Tensor[(1, 8), "f32"]:
{nest}
        for k in range(2):
            acc = acc + x[k:k + 1, :]
        return acc
"""

# the inner body's operands read the outer variable alone and the inner alone
NESTED = PROGRAM.format(nest="""\
        acc = tf.zeros(Tensor[(1, 8), "f32"])
        for i in range(4):
            inner = acc
            for j in range(3):
                inner = inner + x[i:i + 1, :] + y[j:j + 1, :]
            acc = inner * 2.0""")

# three deep: the middle and inner bodies read the outer variable their inits
# do not, so each needs a second trip; the inner `acc * 2.0` reads only the
# middle loop's carried value, whose loops grow on the middle loop's second trip
THREE_DEEP = PROGRAM.format(nest="""\
        total = tf.zeros(Tensor[(1, 8), "f32"])
        for o in range(2):
            acc = tf.zeros(Tensor[(1, 8), "f32"])
            for i in range(4):
                inner = acc
                for j in range(3):
                    inner = inner + acc * 2.0 + x[o:o + 1, :]
                acc = inner + x[o:o + 1, :]
            total = total + acc
        acc = total""")


def _children(node, call_sites):
    if isinstance(node, Call):
        site = call_sites.get(id(node))
        return node.args + ((site,) if site is not None else ())
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, CallSite):
        return node.args + ((node.outer,) if node.outer is not None else ())
    if isinstance(node, GridRegionExpr):
        return node.inits + node.yields
    return ()


def _definition(function, call_sites) -> dict:
    """id(node) -> the loops it reads, by the definition's equations solved
    together: a loop's induction variable reads the loop; a carried value reads
    the loop, its inits and what its yields read besides the loop; a loop's
    result reads its inits and its yields' loops but itself; any other node
    the union of its operands' (and its call site's)."""
    nodes, seen, stack = [], set(), [function.body]
    owner: dict = {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        if isinstance(node, GridRegionExpr):
            owner[id(node.induction_var)] = (node, "induction")
            for var in node.carried:
                owner[id(var)] = (node, "carried")
        stack.extend(_children(node, call_sites))
    deps = {id(n): frozenset() for n in nodes}
    union = lambda values: frozenset().union(*(deps.get(id(v), frozenset()) for v in values))  # noqa: E731
    changed = True
    while changed:
        changed = False
        for node in nodes:
            if isinstance(node, Constant):
                found = frozenset()
            elif isinstance(node, Var):
                loop, how = owner.get(id(node), (None, None))
                if loop is None:
                    found = frozenset()
                elif how == "induction":
                    found = frozenset((loop,))
                else:
                    found = frozenset((loop,)) | union(loop.inits) | (union(loop.yields) - {loop})
            elif isinstance(node, GridRegionExpr):
                found = union(node.inits) | (union(node.yields) - {node})
            else:
                found = union(_children(node, call_sites))
            if found != deps[id(node)]:
                deps[id(node)], changed = found, True
    return deps


def _assert_matches(function, call_sites):
    solved = _loop_dependence(function, call_sites)
    expected = _definition(function, call_sites)
    assert any(expected.values()), "the program reads no loop: the check would prove nothing"
    assert {key: solved.get(key) for key in expected} == expected


def _view(module, function, dims=None):
    result = analyze(module, function, analysis=("compute-cost",), dims=dims)
    # the gate takes resolved bindings: a dim's declared default (the zoo's kv_len) included
    bindings = resolve_dims(module, function, dims)[0] if dims else {}
    view = check_program_view(module, function, level=result.level, analyzers=(),
                              bindings=bindings, target=module.resolve_target())
    return result.function, view


def test_1_2_1_nested_loops_read_by_the_definition(tmp_path):
    module, function = load(tmp_path, NESTED, "Nest")
    view_function, _ = _view(module, function)
    _assert_matches(view_function, {})
    solved = _loop_dependence(view_function, {})
    # the inner body's x[i] window reads the outer loop alone, y[j] the inner alone
    windows = [n for n in _nodes(view_function) if isinstance(n, Call)
               and getattr(n.op, "name", "") == "slice" and isinstance(n.args[1], Tuple)
               and isinstance(n.args[1].fields[0], Var)]
    read = {n.args[1].fields[0].name: {loop.induction_var.name for loop in solved[id(n)]} for n in windows}
    assert read == {"i": {"i"}, "j": {"j"}, "k": {"k"}}


def test_1_2_1_three_deep_loops_read_by_the_definition(tmp_path):
    module, function = load(tmp_path, THREE_DEEP, "Nest")
    view_function, _ = _view(module, function)
    _assert_matches(view_function, {})


def _nodes(function):
    from tilefoundry.analysis.check import iter_nodes

    return list(iter_nodes(function.body))


@pytest.mark.parametrize("stem, dims", [("p03_tiled_gemm", None), ("p05_gqa_decode_online", {"ctx": 4096})])
def test_1_2_1_golden_loops_read_by_the_definition(stem, dims):
    module, function = load_selection(str(PROGRAMS / f"{stem}.py"))
    view_function, _ = _view(module, function, dims)
    _assert_matches(view_function, {})


def test_1_2_1_placed_layer_with_call_sites_read_by_the_definition():
    module = resolve_selector(namespace("llama3_8b.py"), "Llama3_8B_H200.layer0")
    function = module.entry_function()
    dims = {"ctx_len": 1024}
    view_function, view = _view(module, function, dims)
    _assert_matches(view.function, view.call_sites)
    _assert_matches(view_function, {})
