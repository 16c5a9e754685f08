"""The rooms' one-way imports (docs/architecture.md): ir <- ops/semantics <-
analysis <- render <- cli, and nothing below the CLI imports the CLI or the
Python facade (tilefoundry.api). Lazy imports inside functions count: a
module that needs a higher floor is in the wrong room, however it imports it."""
import ast
from pathlib import Path

import tilefoundry

PACKAGE = Path(tilefoundry.__file__).resolve().parent
FLOOR = {"ir": 0, "ops": 1, "semantics": 1, "analysis": 2, "render": 3, "cli": 4}
FACADES = {"cli", "api", "__main__"}


def _room(path: Path) -> str:
    first = path.relative_to(PACKAGE).parts[0]
    return first.removesuffix(".py")


def _imported_rooms(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "tilefoundry" and len(parts) > 1:
                yield parts[1], node.lineno


def _violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        room = _room(path)
        for target, line in _imported_rooms(path):
            if target == room:
                continue
            upward = room in FLOOR and target in FLOOR and FLOOR[target] > FLOOR[room]
            facade = target in FACADES and room not in FACADES
            if upward or facade:
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {room} imports {target}")
    return found


def test_imports_run_one_way():
    assert _violations() == []


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The scan must be able to fail: an analysis module importing render is caught."""
    fake = tmp_path / "tilefoundry"
    (fake / "analysis").mkdir(parents=True)
    (fake / "analysis" / "bad.py").write_text(
        "def f():\n    from tilefoundry.render.record_forms import form_of\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert _violations() == ["analysis/bad.py:2: analysis imports render"]
