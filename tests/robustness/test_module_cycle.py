"""Issue 22 item 7: a Module that is its own descendant is refused naming the
cycle, instead of a walk that never ends."""
from __future__ import annotations

import pytest

from tilefoundry.cli.main import main

PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="g", topologies=(Topology("cta", 1),))
class B:
    @func
    def g(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            return x * x


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class A:
    inner = B.renamed("inner")

    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            return inner(x) + x


object.__setattr__(A.modules[0], "modules", (A,))  # hostile: A -> inner -> A
'''


@pytest.mark.parametrize("argv", [[], ["--compute-cost", "--memory"]])
def test_a_module_cycle_is_refused_naming_it(tmp_path, capsys, argv):
    source = tmp_path / "cycle.py"
    source.write_text(PROGRAM)
    code = main(["analyze", *argv, f"{source}:A"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.strip().endswith("Module 'A' is its own descendant (A -> inner -> A); a module tree has no "
                                "cycles: attach a fresh copy (Module.renamed) instead of an ancestor")
    assert len(err.strip().splitlines()) == 1
