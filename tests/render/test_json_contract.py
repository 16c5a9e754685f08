"""The JSON contract (issue 10 item 4, docs/json.md): every JSON document the
tool prints validates against the schema shipped in tilefoundry/schemas/, and
the analyze report's top-level keys do not depend on the families that ran."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from argparse import Namespace

import pytest

jsonschema = pytest.importorskip("jsonschema")  # the `test` extra pins it

from tests.conftest import DATA, PROGRAMS, REPO, golden_manifest  # noqa: E402
from tilefoundry.render.json_contract import SCHEMA_VERSION, SCHEMAS, load_schema  # noqa: E402

FAMILIES = ("compute-cost", "memory", "roofline", "performance")
ENTRIES = golden_manifest()["valid"]
KTIR_EXAMPLES = sorted((DATA / "intertile" / "examples").glob("*.mlir"))


def validator(kind: str):
    schema = load_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(kind: str, document: dict) -> None:
    errors = sorted(validator(kind).iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def _analyze_json(entry: dict, families: tuple) -> dict:
    """The JSON report of one golden entry, in-process, from the programs
    folder as the reference ran it (tests/golden/golden_runs.py)."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.api import typed_rendering
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        dims = {k: int(v) for k, v in entry["dims"].items()} or None
        module, function = load_selection(f"{entry['source']}:{entry['selector']}")
        if not families:
            return json.loads(typed_rendering(module, function, dims).json)
        return json.loads(render_analysis(analyze(module, function, analysis=families, dims=dims)).json)
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_each_schema_is_a_valid_draft_2020_12_schema(kind):
    schema = load_schema(kind)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["stem"] for e in ENTRIES])
def test_analyze_json_of_every_golden_program_validates(entry):
    data = _analyze_json(entry, tuple(entry["families_ran"]))
    assert_valid("analyze", data)
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["tool"]["name"] == "tilefoundry"
    for row in data["calls"] + data["loops"]:
        # the authored statement, in the program's own file (a call inlined
        # from a child Module keeps its statement's location)
        assert row["source"] is None or row["source"].startswith(entry["source"] + ":")


def test_top_level_keys_do_not_depend_on_families():
    entry = next(e for e in ENTRIES if e["stem"] == "p06_module_tree.MiniStack")
    runs = [(), ("compute-cost",), ("roofline",), FAMILIES]
    documents = [_analyze_json(entry, families) for families in runs]
    for data in documents:
        assert_valid("analyze", data)
    assert len({tuple(sorted(d)) for d in documents}) == 1
    typed, cost_only = documents[0], documents[1]
    assert typed["totals"] is None and typed["calls"] == [] and typed["function_records"] == {}
    assert cost_only["function_records"].keys() == {"compute-cost"}


def test_typed_json_holds_the_typed_program_and_each_value_type():
    entry = next(e for e in ENTRIES if e["stem"] == "p03_tiled_gemm.TiledGemm")
    data = _analyze_json(entry, ())
    from tests.golden.typed_text import function_part

    expected = (PROGRAMS / "expected" / f"{entry['stem']}.typed.py").read_text()
    assert function_part(data["program"]) == expected
    by_name = {v["name"]: v for v in data["values"]}
    assert by_name["a"] == {"kind": "param", "name": "a", "value": None, "source": None,
                            "type": 'Tensor[(512, 1024), "bf16"]'}
    assert by_name["kk"]["kind"] == "loop" and by_name["kk"]["source"] == "p03_tiled_gemm.py:34:13"


def test_inlined_child_call_keeps_its_authored_source():
    entry = next(e for e in ENTRIES if e["stem"] == "p06_module_tree.MiniStack")
    data = _analyze_json(entry, ("compute-cost",))
    sources = {row["source"] for row in data["calls"]}
    # the embedding lookup is authored at line 99; the blocks' calls in the
    # child Module's methods at lines 32-65 of the same file
    assert "p06_module_tree.py:99:20" in sources
    assert any(int(s.split(":")[1]) < 70 for s in sources)


def test_relayout_classify_json_validates():
    from tilefoundry.cli.relayout_cmd import _classify

    data = _capture_json(_classify, Namespace(tables=str(REPO / "examples" / "relayout_s74.json"),
                                              json=True))
    assert_valid("relayout-classify", data)
    assert data["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("path", KTIR_EXAMPLES, ids=[p.stem for p in KTIR_EXAMPLES])
def test_intertile_verify_json_validates(path):
    from tilefoundry.cli.intertile_cmd import _verify

    data = _capture_json(_verify, Namespace(file=str(path), tiles=None, function=None, json=True))
    assert_valid("intertile-verify", data)
    assert data["ok"] == all(f["ok"] for f in data["functions"])


def test_intertile_verify_json_cli_exit_code_follows_the_verdict():
    bad = DATA / "intertile" / "examples" / "e07_owner_transpose_routing.mlir"
    result = subprocess.run([sys.executable, "-m", "tilefoundry", "intertile", "verify", "--json",
                             str(bad)], capture_output=True, text=True)
    data = json.loads(result.stdout)
    assert_valid("intertile-verify", data)
    assert result.returncode == (0 if data["ok"] else 1)


def _capture_json(command, args) -> dict:
    """Run one CLI action in-process and read the JSON it printed."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        command(args)
    return json.loads(out.getvalue())


def test_validating_mode_refuses_a_document_that_breaks_its_schema(monkeypatch):
    """The suite's own guard (VALIDATE_ENV, set in tests/conftest.py) must be
    able to fail: a stamped document missing a required key is refused."""
    from tilefoundry.render.json_contract import VALIDATE_ENV, dumps, stamp

    monkeypatch.setenv(VALIDATE_ENV, "1")
    broken = stamp({"file": "x.mlir", "tiles": None, "functions": []}, "intertile-verify")  # no "ok"
    with pytest.raises(ValueError, match="'ok' is a required property"):
        dumps(broken)
    with pytest.raises(ValueError, match="names no kind"):
        dumps({"schema_version": SCHEMA_VERSION})
    monkeypatch.setenv(VALIDATE_ENV, "0")
    assert json.loads(dumps(broken))["kind"] == "intertile-verify"


def test_every_document_names_its_kind():
    from tilefoundry.render.json_contract import stamp

    for kind in SCHEMAS:
        assert stamp({}, kind)["kind"] == kind
    with pytest.raises(ValueError, match="unknown JSON document kind"):
        stamp({}, "sweep-of-nothing")
