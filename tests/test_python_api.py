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
    assert lines[3] == "acc:18 p03_tiled_gemm.py:33:15"
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
