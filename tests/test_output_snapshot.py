"""tools/output_snapshot.py, the proof that a move changes nothing a user sees:
its cases reach every golden program, and its comparison fails on a difference."""
import json
from pathlib import Path

from tests.conftest import load_tool


def _tool():
    return load_tool("output_snapshot")


def test_the_cases_reach_every_golden_and_invalid_program():
    tool = _tool()
    names = {name for name, *_ in tool._cases()}
    manifest = json.loads((tool.PROGRAMS / "expected" / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["valid"]:
        assert {f"golden/{entry['stem']}.{kind}" for kind in ("typed", "txt", "json")} <= names
    for entry in manifest["invalid"]:
        assert f"invalid/{Path(entry['source']).stem}" in names
    assert any(name.startswith("collectives/") for name in names)
    assert any(name.startswith("intertile/") for name in names)


def _write(directory: Path, files: dict) -> Path:
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


def test_compare_fails_on_a_changed_and_on_an_unpaired_case(tmp_path, capsys):
    tool = _tool()
    first = _write(tmp_path / "a", {"g/x.out": "exit 0\n1\n", "g/y.out": "same", "g/z.out": "only"})
    second = _write(tmp_path / "b", {"g/x.out": "exit 0\n2\n", "g/y.out": "same"})
    assert tool.compare(first, second) == 1
    printed = capsys.readouterr().out
    assert "differs: g/x.out" in printed and "only in first: g/z.out" in printed
    assert "g/y.out" not in printed


def test_compare_passes_equal_outputs_and_ignores_only_a_packings_seconds(tmp_path):
    tool = _tool()
    first = _write(tmp_path / "a", {"p.out": '{"nodes": 3, "seconds": 0.083}'})
    second = _write(tmp_path / "b", {"p.out": '{"nodes": 3, "seconds": 0.211}'})
    assert tool.compare(first, second) == 0
    third = _write(tmp_path / "c", {"p.out": '{"nodes": 4, "seconds": 0.083}'})
    assert tool.compare(first, third) == 1
