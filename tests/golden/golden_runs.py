"""What the family golden tests share: running one family on every golden
program the reference ran it on, the stored outputs, and reading one family's
part of an equation's comment."""
from __future__ import annotations

import json
import os

from tests.conftest import PROGRAMS, golden_manifest


def entries_for(family: str) -> list[dict]:
    """Manifest entries whose reference run included ``family``."""
    return [e for e in golden_manifest()["valid"] if family in e.get("families_ran", [])]


class _Runs(dict):
    """stem -> rendering, each computed on first use and kept; a program that
    fails raises in the cases that read it alone, not in every case of the
    module (the fixture is module-scoped)."""

    def __init__(self, entries: list[dict], analysis: str):
        super().__init__()
        self._entries = {entry["stem"]: entry for entry in entries}
        self._analysis = analysis
        self._failures: dict[str, BaseException] = {}

    def __missing__(self, stem: str):
        if stem in self._failures:
            raise self._failures[stem]
        try:
            self[stem] = _render_one(self._entries[stem], self._analysis)
        except Exception as failure:  # noqa: BLE001 (re-raised in each case that reads it)
            self._failures[stem] = failure
            raise
        return self[stem]


def _render_one(entry: dict, analysis: str):
    """render_analysis of ``analysis`` on one entry, run from the programs
    folder as the reference's commands were."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        dims = {k: int(v) for k, v in entry["dims"].items()} or None
        module, function = load_selection(f"{entry['source']}:{entry['selector']}")
        return render_analysis(analyze(module, function, analysis=analysis, dims=dims))
    finally:
        os.chdir(cwd)


def render_runs(entries: list[dict], analysis: str) -> dict:
    """stem -> render_analysis of ``analysis`` on that entry (computed lazily)."""
    return _Runs(entries, analysis)


def expected_outputs(stem: str) -> tuple[str, dict]:
    """The reference's stored text report and JSON report of one entry."""
    text = (PROGRAMS / "expected" / f"{stem}.txt").read_text()
    data = json.loads((PROGRAMS / "expected" / f"{stem}.json").read_text())
    return text, data


def comment_part(line: str, family: str) -> str | None:
    """The ``family`` record of an equation's comment (bare or with keys)."""
    if "  # " not in line:
        return None
    for part in line.split("  # ", 1)[1].split("; "):
        if part == family or part.startswith(family + " ") or part.startswith(family + "="):
            return part
    return None


def reference_location(location: str) -> str:
    """``file:line:col`` of ours as the reference prints it.

    Ours is the file's own column; the reference counts a location inside an
    @func in that function's dedented source (authoring.md §7 of the design),
    so its column is ours less the indentation of the def the location lies
    in (4 for a kernel in a class body, 8 for one in a factory's class). A
    location outside every def (a module-level statement, a class-body
    member) is the file's column in both. The expected ``.err`` files are the
    reference's output, byte-equal to shared/ (tools/sync_shared.py), so the
    golden comparison maps our location onto the reference's convention here
    instead of editing them (docs/authoring.md, "Errors")."""
    import ast

    path, line, col = location.rsplit(":", 2)
    line, col = int(line), int(col)
    tree = ast.parse((PROGRAMS / path).read_text(encoding="utf-8"))
    shift = 0
    for node in ast.walk(tree):  # the innermost def whose span holds the line
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if first <= line <= node.end_lineno:
                shift = max(shift, node.col_offset)
    return f"{path}:{line}:{col - shift}"


def text_at(location: str, root=PROGRAMS) -> str:
    """The source text of the file from ``line:col`` (1-based, characters) to
    the end of that line: what a location points at."""
    path, line, col = location.rsplit(":", 2)
    lines = (root / path).read_text(encoding="utf-8").split("\n")
    return lines[int(line) - 1][int(col) - 1:]
