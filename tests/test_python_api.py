"""The Python API (issue 10 item 5, docs/api.md): the documented example runs
and prints what its comments say; the result's text and JSON are the CLI's;
records are frozen dataclasses; `import tilefoundry` stays light."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import PROGRAMS, REPO

API_DOC = REPO / "docs" / "api.md"


@pytest.fixture
def in_programs():
    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        yield PROGRAMS
    finally:
        os.chdir(cwd)


def _example() -> str:
    return re.search(r"```python\n(.*?)```", API_DOC.read_text(), re.S).group(1)


def test_api_doc_example_runs_and_prints_what_it_says(in_programs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example(), str(API_DOC), "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "TiledGemm gemm"
    assert lines[1].startswith("# compute-cost flops=")
    assert lines[2] == "{'bf16': 196608, 'f32': 406716416}"
    assert lines[3] == "acc:18 p03_tiled_gemm.py:33:19"
    from tilefoundry.render.json_contract import SCHEMA_VERSION

    assert lines[4].startswith(f"{SCHEMA_VERSION} {{'bf16': 196608")
    assert lines[5] == "class SeqPool:"


def test_summary_and_json_are_the_cli_outputs(in_programs):
    import tilefoundry

    families = ["compute-cost", "memory", "roofline", "performance"]
    result = tilefoundry.analyze("p06_module_tree.py:MiniStack", families=families)
    flags = [f"--{f}" for f in families]
    cli = [sys.executable, "-m", "tilefoundry", "analyze", *flags, "p06_module_tree.py:MiniStack"]
    text = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    data = subprocess.run(cli + ["--json"], capture_output=True, text=True, check=True).stdout
    assert result.summary() == text
    assert result.to_json() == data


def test_no_family_is_the_typed_program(in_programs):
    import tilefoundry

    result = tilefoundry.analyze("p03_tiled_gemm.py:TiledGemm")
    from tests.golden.typed_text import function_part

    # the reference's text, then the Module our printer adds (tests/golden/typed_text.py)
    expected = (PROGRAMS / "expected" / "p03_tiled_gemm.TiledGemm.typed.py").read_text()
    assert function_part(result.summary()) == expected
    assert result.records == {} and result.calls() == [] and result.result is None
    assert json.loads(result.to_json())["program"] == result.summary()


def test_records_are_frozen_dataclasses(in_programs):
    import tilefoundry

    result = tilefoundry.analyze("p03_tiled_gemm.py:TiledGemm", families=["compute-cost", "memory"])
    records = list(result.records.values()) + [r for c in result.calls() for r in c.records.values()]
    assert records
    for record in records:
        assert dataclasses.is_dataclass(record) and type(record).__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.records["compute-cost"].flops = ()


def test_load_gives_module_and_function_and_feeds_analyze(in_programs):
    import tilefoundry

    loaded = tilefoundry.load("p03_tiled_gemm.py:TiledGemm")
    assert (loaded.module.name, loaded.function.name) == ("TiledGemm", "gemm")
    result = tilefoundry.analyze(loaded, families=["compute-cost"])
    assert result.records["compute-cost"] is not None


def test_target_by_identity_replaces_the_module_target(in_programs):
    import tilefoundry

    result = tilefoundry.analyze("p03_tiled_gemm.py:TiledGemm", families=["compute-cost"],
                                 target="nvidia.h100_sxm")
    assert json.loads(result.to_json())["target"] == "nvidia.h100_sxm"  # the file declares h200


def test_import_tilefoundry_stays_light():
    code = ("import sys, tilefoundry; heavy = [m for m in ('islpy', 'ortools', 'numpy', "
            "'tilefoundry.api', 'tilefoundry.analysis') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_py_typed_ships():
    from importlib.resources import files

    assert files("tilefoundry").joinpath("py.typed").is_file()


def test_target_override_leaves_a_held_selection_unchanged(in_programs):
    import tilefoundry

    loaded = tilefoundry.load("p03_tiled_gemm.py:TiledGemm")
    result = tilefoundry.analyze(loaded, families=["compute-cost"], target="nvidia.h100_sxm")
    assert json.loads(result.to_json())["target"] == "nvidia.h100_sxm"
    assert loaded.module.resolve_target().identity == "nvidia.h200_sxm"


# ------------------------------------------------ issue 21 item 9: what analyze takes

def test_a_module_object_is_a_selection_of_its_entry(in_programs):
    """A Module, what `@module` makes of a class, analyses as its file selection does."""
    import tilefoundry
    from tilefoundry.dsl.loader import load_module_file

    gemm = load_module_file("p03_tiled_gemm.py").TiledGemm  # the @module class, as defined
    families = ["compute-cost", "memory"]
    by_class = tilefoundry.analyze(gemm, families=families)
    assert by_class.summary() == tilefoundry.analyze("p03_tiled_gemm.py:TiledGemm",
                                                     families=families).summary()
    assert (by_class.module.name, by_class.function.name) == ("TiledGemm", "gemm")
    from tests.golden.typed_text import function_part

    assert function_part(tilefoundry.analyze(gemm).summary()) == \
        (PROGRAMS / "expected" / "p03_tiled_gemm.TiledGemm.typed.py").read_text()
    ran = tilefoundry.run(gemm, seed=1)  # run and check take it too
    assert set(ran) == {"output"} and ran["output"].shape == (512, 384)


@pytest.mark.parametrize("selection, line", [
    (42, "tilefoundry.analyze: a selection is 'file.py[:Module[.child...][.function]]', a Module "
         "(a @module class) or a (module, function) pair, got int"),
    (dict, "tilefoundry.analyze: class 'dict' is not a @module class, so it states no program; "
           "decorate it with @tilefoundry.module(entry=..., target=..., topologies=...)"),
])
def test_what_is_no_selection_is_refused_in_one_line(selection, line):
    import tilefoundry
    from tilefoundry.errors import SelectionError

    with pytest.raises(SelectionError) as info:
        tilefoundry.analyze(selection)
    assert str(info.value) == line


def test_a_bare_function_is_refused_naming_the_module_to_pass(in_programs):
    import tilefoundry
    from tilefoundry.errors import SelectionError

    gemm = tilefoundry.load("p03_tiled_gemm.py:TiledGemm").function
    with pytest.raises(SelectionError) as info:
        tilefoundry.analyze(gemm, families="compute-cost")
    assert str(info.value) == (
        "tilefoundry.analyze: 'gemm' is a bare @func, which has no target or topology; pass the "
        "@module class that declares it, or write @func(target=..., topologies=...)")


def test_families_takes_one_name_or_a_list(in_programs):
    import tilefoundry

    one = tilefoundry.analyze("p03_tiled_gemm.py", families="memory")
    listed = tilefoundry.analyze("p03_tiled_gemm.py", families=["memory"])
    assert one.families == listed.families == ("memory",)
    assert one.to_json() == listed.to_json()


@pytest.mark.parametrize("families, line", [
    ("memroy", "tilefoundry.analyze: 'memroy' is not an analysis family; the families are "
               "compute-cost, memory, roofline, performance, collectives, estimate (or 'all'); "
               "did you mean 'memory'?"),
    (["compute-cost", "perf"], "tilefoundry.analyze: 'perf' is not an analysis family; the "
                               "families are compute-cost, memory, roofline, performance, "
                               "collectives, estimate (or 'all'); did you mean 'performance'?"),
    (["zzz"], "tilefoundry.analyze: 'zzz' is not an analysis family; the families are "
              "compute-cost, memory, roofline, performance, collectives, estimate (or 'all')"),
    ([3], "tilefoundry.analyze: 3 (int) is not an analysis family; the families are "
          "compute-cost, memory, roofline, performance, collectives, estimate (or 'all')"),
    (7, "tilefoundry.analyze: families is a family name or a list of them, got int; "
        "e.g. families=['compute-cost', 'memory']"),
    (["all", "memory"], "tilefoundry.analyze: families='all' stands alone (every family the "
                        "target serves); drop it from ['all', 'memory'] or pass families='all'"),
])
def test_a_bad_family_is_one_line_with_the_nearest(families, line, in_programs):
    import tilefoundry
    from tilefoundry.errors import ArgumentError

    with pytest.raises(ArgumentError) as info:  # issue 40 item 7: an argument, not an analysis
        tilefoundry.analyze("p03_tiled_gemm.py", families=families)
    assert str(info.value) == line  # refused before the file is even loaded
    assert "\n" not in line


@pytest.mark.parametrize("source, ran", [
    ("p04_split_k_partial.py", ("compute-cost", "memory", "roofline", "performance", "collectives",
                                "estimate")),
    # the CPU target publishes no memory hierarchy: memory and what reads it are left out
    ("p15_cpu_host_scale.py", ("compute-cost", "collectives")),
    # the AMX target publishes no performance service rates
    ("p14_amx_core_gemm.py", ("compute-cost", "memory", "roofline", "collectives")),
])
def test_all_families_are_those_the_target_serves(source, ran, in_programs):
    import tilefoundry

    result = tilefoundry.analyze(source, families="all")
    assert result.families == ran
    assert result.to_dict()["requested"] == list(ran)


# ------------------------------------------------ issue 21 item 9: the flat figures

def test_figures_are_the_records_flat(in_programs):
    import tilefoundry
    from tilefoundry.api import FIGURES

    result = tilefoundry.analyze("p03_tiled_gemm.py",
                                 families=["compute-cost", "memory", "roofline", "performance"])
    figures = result.figures()
    records, report = result.records, result.to_dict()["function_records"]
    timeline = records["performance"].timeline
    assert tuple(figures) == FIGURES
    assert figures["predicted_ns"] == timeline.end_ns - timeline.start_ns == 63766
    assert figures["waves"] == 1
    assert (figures["ideal_ns"], figures["bound_by"]) == (6072, "compute")
    assert figures["flops"] == dict(records["compute-cost"].flops) == {"bf16": 196608,
                                                                       "f32": 406716416}
    assert figures["service"] == {}
    assert figures["traffic"] == report["traffic"]["whole"]
    assert figures["traffic"]["gmem"] == {"read": 1835008, "write": 393216}
    assert figures["peak_bytes"] == {"gmem": 2228224, "rmem": 98304, "smem": 106496}
    figures["flops"]["bf16"] = 0  # a fresh dict each call
    assert result.figures()["flops"]["bf16"] == 196608


def test_figures_are_none_where_a_family_did_not_run(in_programs):
    import tilefoundry

    cost = tilefoundry.analyze("p03_tiled_gemm.py", families="compute-cost").figures()
    assert cost["flops"] == {"bf16": 196608, "f32": 406716416}
    assert {k for k, v in cost.items() if v is None} == {
        "predicted_ns", "waves", "ideal_ns", "bound_by", "traffic", "peak_bytes", "estimate_ns",
        "estimate_bound_by"}
    typed = tilefoundry.analyze("p03_tiled_gemm.py").figures()
    assert set(typed.values()) == {None}


# ------------------------------------------------ issue 21 item 9: notebooks and the REPL

CELL = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="double", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Doubler:
    @func
    def double(a: Tensor[(128, 64), "f32"]) -> Tensor[(128, 64), "f32"]:
        with Mesh(("cta",), (4,), ("c",)) as grid:
            x = tf.reshard(a, (128 @ grid.c, 64), "smem")
            return tf.reshard(x + x, (128 @ grid.c, 64), "gmem")
'''


def _cell(filename: str, cached: bool) -> dict:
    """Run CELL as a notebook does: compiled under ``filename``, its source kept
    only in linecache (IPython's and ipykernel's own way), never in a file."""
    import linecache

    assert not os.path.exists(filename)
    if cached:
        linecache.cache[filename] = (len(CELL), None, CELL.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(CELL, filename, "exec"), namespace)
    finally:
        linecache.cache.pop(filename, None)
    return namespace


@pytest.mark.parametrize("filename", ["<ipython-input-7-0123456789ab>",
                                      "/tmp/ipykernel_424242/2718281828.py"])
def test_a_program_in_a_notebook_cell_analyses(filename):
    import tilefoundry

    doubler = _cell(filename, cached=True)["Doubler"]
    result = tilefoundry.analyze(doubler, families=["compute-cost", "memory"])
    assert result.figures()["flops"] == {"f32": 8192}
    sources = [call.source for call in result.calls()]
    assert sources and all(s.startswith(f"{filename}:") for s in sources)
    assert f"{filename}:13:" in " ".join(sources)  # the cell's own line numbers


def test_a_program_typed_at_a_plain_prompt_says_use_a_file_or_a_notebook():
    from tilefoundry.errors import VerifyError

    with pytest.raises(VerifyError) as info:
        _cell("<stdin>", cached=False)  # what the plain REPL compiles with, keeping nothing
    assert str(info.value) == (
        "@tilefoundry.func 'double': its source cannot be read: it was defined in <stdin>, which "
        "keeps no source (a plain Python prompt, or exec of a string); the parser reads every "
        "@func from its source, so define it in a .py file (tilefoundry.analyze('file.py:Module')) "
        "or in a Jupyter/IPython notebook cell")


def test_a_program_in_a_real_ipython_cell_analyses(tmp_path):
    """The same through IPython itself, where it is installed: each cell its own source."""
    pytest.importorskip("IPython")
    script = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        f"cell = {CELL!r}\n"
        "assert shell.run_cell(cell).success\n"
        "result = shell.run_cell('import tilefoundry\\n'\n"
        "    'print(tilefoundry.analyze(Doubler, families=\"compute-cost\").figures()[\"flops\"])')\n"
        "assert result.success\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), IPYTHONDIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1] == "{'f32': 8192}"


def test_check_takes_a_module_as_selection_and_as_twin(in_programs):
    import tilefoundry
    from tilefoundry.dsl.loader import load_module_file

    split_k = load_module_file("p04_split_k_partial.py").SplitKGemm
    results = tilefoundry.check(split_k, against=split_k, seed=2)
    assert [r.passed for r in results] == [True]
    assert [v.passed for v in results[0].verdicts] and all(v.passed for v in results[0].verdicts)
