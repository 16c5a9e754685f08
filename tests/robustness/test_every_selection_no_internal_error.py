"""Issue 9, "Bad input": no selection of any golden program gives an internal
error. Every selector a file offers (each root Module, each child copy, each
function of each) is printed as a typed program and analysed with each family
alone; a refusal must be a TileFoundryError (one clear line in the CLI), never
another exception."""
from __future__ import annotations

import os

import pytest

from tests.conftest import PROGRAMS, golden_manifest
from tilefoundry.errors import TileFoundryError

FAMILIES = ("compute-cost", "memory", "roofline", "performance")


def _dims_by_source() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for entry in golden_manifest()["valid"]:
        found.setdefault(entry["source"], {k: int(v) for k, v in entry["dims"].items()})
    return found


def _roots(text: str) -> list[str]:
    """Names a selector may start with: each ``@module`` class and each
    standalone ``@func(target=...)`` of the file."""
    import ast

    roots = []
    for node in ast.parse(text).body:
        for decorator in getattr(node, "decorator_list", ()):
            called = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = getattr(called, "id", getattr(called, "attr", None))
            if (isinstance(node, ast.ClassDef) and name == "module") or (
                    isinstance(node, ast.FunctionDef) and name == "func" and isinstance(decorator, ast.Call)):
                roots.append(node.name)
    return roots


def _selectors(source: str) -> list[str]:
    """Every selector of the file: roots, child copies, their functions."""
    from tilefoundry.dsl.loader import _load_for_root, resolve_selector

    found = []

    def walk(module, path):
        found.append(path)
        found.extend(f"{path}.{function.name}" for function in module.functions)
        for child in module.modules:
            walk(child, f"{path}.{child.name}")

    for root in _roots((PROGRAMS / source).read_text()):
        try:  # the tree itself, whether or not the root names an entry
            module = resolve_selector(_load_for_root(source, root), root)
        except TileFoundryError:
            found.append(root)  # refused whole: the case checks the refusal is clean
            continue
        walk(module, root)
    return found


def _cases():
    cases = []
    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        for source, dims in sorted(_dims_by_source().items()):
            for selector in _selectors(source):
                cases.append(pytest.param(source, selector, dims, id=f"{source[:3]}:{selector}"))
    finally:
        os.chdir(cwd)
    return cases


@pytest.mark.parametrize("source, selector, dims", _cases())
def test_selection_refuses_only_with_tilefoundry_errors(source, selector, dims, monkeypatch):
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    monkeypatch.chdir(PROGRAMS)
    try:
        module, function = load_selection(f"{source}:{selector}")
    except TileFoundryError:
        return
    attempts = [lambda: typed_program(module, function, dims or None)]
    attempts += [lambda family=family: render_analysis(analyze(module, function, analysis=family,
                                                               dims=dims or None))
                 for family in FAMILIES]
    for attempt in attempts:
        try:
            attempt()
        except TileFoundryError:
            pass
