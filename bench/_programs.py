"""Helpers shared by the bench scripts: where the golden programs live."""
from __future__ import annotations

import json
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "data" / "programs"


def largest_program() -> tuple[Path, str, dict]:
    """(source path, selector, dims) of the largest valid golden program by lines."""
    manifest = json.loads((PROGRAMS / "expected" / "manifest.json").read_text())
    entries = manifest["valid"]
    entry = max(entries, key=lambda e: len((PROGRAMS / e["source"]).read_text().splitlines()))
    return PROGRAMS / entry["source"], entry["selector"], entry["dims"]


def manifest() -> dict:
    """The golden manifest: every command, binding and family the reference ran."""
    return json.loads((PROGRAMS / "expected" / "manifest.json").read_text())
