"""Issue 22 item 4: sizes real programs reach. A whole-model step inlines
thousands of dependent statements and a module tree nests as deep as its
author writes it, so every walk (the view's inlining, the printer, the
timeline, dimension collection, module copies and selectors) is iterative:
each program here is past Python's recursion limit, analysed by every family,
executed and checked participant by participant."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import tilefoundry
from tilefoundry import execution
from tests.robustness.large_programs import call_chain, module_chain, statement_chain

PAST_THE_STACK = sys.getrecursionlimit() + 200
ELEMENTS = 16 * 64


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("large")
    texts = {"chain.py": statement_chain(PAST_THE_STACK), "calls.py": call_chain(PAST_THE_STACK),
             "modules.py": module_chain(PAST_THE_STACK)}
    for name, text in texts.items():
        (folder / name).write_text(text)
    return folder


def _flops(analysis) -> int:
    return sum(analysis.figures()["flops"].values())


def test_a_chain_past_the_stack_analyses_with_every_family(programs):
    analysis = tilefoundry.analyze(str(programs / "chain.py"), families="all")
    # every statement after the first is one multiply and one add per element
    assert _flops(analysis) == 2 * ELEMENTS * (PAST_THE_STACK - 1)
    assert analysis.figures()["predicted_ns"] > 0
    assert analysis.summary().count("\n") > PAST_THE_STACK  # the whole body printed


def test_a_chain_past_the_stack_runs_to_the_closed_form(programs):
    outputs = execution.run(str(programs / "chain.py"))  # the same seed draws the same x
    (result,) = outputs.values()
    x = execution.prepare(str(programs / "chain.py")).by_name()["x"]
    expected = x.copy()
    for _ in range(PAST_THE_STACK - 1):
        expected = expected * np.float32(0.5) + x
    np.testing.assert_array_equal(result, expected)


def test_a_call_chain_past_the_stack_is_inlined_analysed_and_checked(programs):
    selection = str(programs / "calls.py")
    analysis = tilefoundry.analyze(selection, families="all")
    assert _flops(analysis) == ELEMENTS * (PAST_THE_STACK + 1)  # f0's add, one add a level
    (checked,) = execution.check(selection, placed=True)
    assert checked.passed


def test_a_module_chain_past_the_stack_promotes_every_weight(programs):
    selection = f"{programs / 'modules.py'}:M{PAST_THE_STACK}"
    analysis = tilefoundry.analyze(selection, families="all")
    # M0 multiplies, every level above adds its own weight
    assert _flops(analysis) == ELEMENTS * (PAST_THE_STACK + 1)
    names = [name for _, name, is_weight in execution.prepare(selection).names if is_weight]
    innermost = ".".join(f"M{i}" for i in range(PAST_THE_STACK - 1, -1, -1)) + ".w"
    assert len(names) == PAST_THE_STACK + 1 and names[0] == "w" and innermost in names
    (checked,) = execution.check(selection, placed=True)
    assert checked.passed


def test_selectors_reach_the_deepest_module_of_a_deep_tree(programs):
    from tilefoundry.ir.module import function_selectors

    loaded = tilefoundry.load(f"{programs / 'modules.py'}:M{PAST_THE_STACK}")
    selectors = [name for name, _ in function_selectors(loaded.module)]
    assert len(selectors) == PAST_THE_STACK + 1
    assert selectors[0] == "f" and selectors[-1].count(".") == PAST_THE_STACK
