"""The house's rules (docs/architecture.md), checked on every module of the package.

- Rooms import one way: ir <- ops/semantics <- analysis <- render <- sweep <- cli,
  and nothing below the CLI imports the CLI or the Python facade
  (tilefoundry.api); the sweep room, which analyses through that facade, is one
  of the facades (only they import it).
- No circle anywhere, between rooms or inside one: the module graph, lazy imports
  inside functions and modules named to ``importlib.import_module`` (a command
  table, a Target's analyzer paths) included, has no cycle. (A parent package's ``__init__`` that re-exports its submodules
  is not an edge back: importing ``a.b`` runs ``a`` first by Python's rule, not
  by a choice of ours.)
- The packer is a room of its own: it imports nothing of ours but the
  package-root ``errors``, ``limits`` and ``text_input``.
- No two modules share a file name, other than ``__init__.py`` and the public
  re-export paths that the authoring surface fixes (authoring.md §1.1).
- A family folder holds more than one module; no file runs past ~600 lines.

Lazy imports count: a module that needs a higher floor is in the wrong room,
however it imports it.
"""
import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import tilefoundry

PACKAGE = Path(tilefoundry.__file__).resolve().parent
FLOOR = {"ir": 0, "packing": 0, "ops": 1, "semantics": 1, "analysis": 2, "execute": 2, "render": 3,
         "sweep": 4, "placer": 4, "cli": 5}
# __init__: the package root, a table of lazy names; sweep: it analyses through
# the Python API (so it may import api, and only a facade may import it), and
# stands on a floor of its own below cli (so it never imports a command);
# place searches through api and execution the same way, on sweep's floor
FACADES = {"cli", "api", "execution", "sweep", "placer", "__main__", "__init__"}
#: what the packer may import of ours (docs/architecture.md, "packing/")
PACKER_MAY_IMPORT = {"arguments", "errors", "limits", "text_input"}
#: rooms of one floor that must not read each other (docs/architecture.md):
#: a run must not depend on a cost model, nor an analysis on a run
APART = {("execute", "analysis"), ("analysis", "execute")}
#: paths fixed by the authoring surface (authoring.md §1.1): each only re-exports
#: the module of the same name beside it, so the two cannot hold different things
SURFACE_PATHS = {"ir/types/dim.py", "ir/types/shard.py", "ir/core/module.py", "dsl/storage.py"}
FAMILY_FOLDERS = ("analysis/memory", "analysis/performance", "analysis/collectives")
MAX_LINES = 620


def _room(path: Path, package: Path) -> str:
    return path.relative_to(package).parts[0].removesuffix(".py")


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_names(tree: ast.AST):
    """(dotted name, line) of every import of ours in ``tree``; for ``from a
    import b`` both ``a.b`` and ``a`` are offered (``b`` may be a module or a name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield (f"{node.module}.{alias.name}", node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield (alias.name,), node.lineno
    if any(isinstance(node, ast.Attribute) and node.attr == "import_module" for node in ast.walk(tree)):
        # a module that imports by name: each module it names in a string (a
        # command table, a Target's "module:ATTR" analyzer paths) is an edge
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.startswith("tilefoundry.") and " " not in node.value):
                yield (node.value.partition(":")[0],), node.lineno


def _graph(package: Path) -> tuple[dict, dict]:
    """module -> {imported module: first line}, and module -> path."""
    paths = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        edges: dict = {}
        for candidates, line in _imported_names(ast.parse(path.read_text(encoding="utf-8"))):
            target = next((c for c in candidates if c in paths), None)
            if target is None:  # `import a.b.c` of a name inside a.b: the nearest module
                target = candidates[-1]
                while target and target not in paths:
                    target = target.rpartition(".")[0]
            if target and target != name and target != package.name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph, paths


def _violations(package: Path = None) -> list[str]:
    package = package or PACKAGE
    graph, paths = _graph(package)
    found = []
    for name, edges in graph.items():
        path = paths[name]
        room = _room(path, package)
        for target, line in edges.items():
            into = target.split(".")[1]
            if into == room:
                continue
            upward = room in FLOOR and into in FLOOR and FLOOR[into] > FLOOR[room]
            facade = into in FACADES and room not in FACADES
            packer = room == "packing" and into not in PACKER_MAY_IMPORT
            apart = (room, into) in APART
            if upward or facade or packer or apart:
                found.append(f"{path.relative_to(package)}:{line}: {room} imports {into}")
    return found


def _circles(package: Path = None) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan,
    iterative: the package has hundreds of modules)."""
    graph, _ = _graph(package or PACKAGE)
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    circles = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_imports_run_one_way():
    assert _violations() == []


def test_no_import_circle_anywhere():
    assert _circles() == []


def _fake_package(tmp_path: Path, files: dict) -> Path:
    fake = tmp_path / "tilefoundry"
    for name, text in {"__init__.py": "", **files}.items():
        path = fake / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return fake


def test_the_check_sees_an_upward_import(tmp_path):
    """The scan must be able to fail: an analysis module importing render is caught."""
    fake = _fake_package(tmp_path, {
        "analysis/__init__.py": "", "render/__init__.py": "", "render/record_forms.py": "",
        "analysis/bad.py": "def f():\n    from tilefoundry.render.record_forms import form_of\n"})
    assert _violations(fake) == ["analysis/bad.py:2: analysis imports render"]


def test_the_sweep_room_sits_between_render_and_cli(tmp_path):
    """The sweep room may read the Python API; no analysis or render module
    may read it, and it may not read a command."""
    fake = _fake_package(tmp_path, {
        "api.py": "", "render/__init__.py": "", "cli/__init__.py": "", "cli/files.py": "",
        "sweep/__init__.py": "", "sweep/worker.py": "from tilefoundry import api\n",
        "sweep/bad.py": "from tilefoundry.cli import files\n",
        "render/bad.py": "from tilefoundry.sweep import worker\n"})
    assert _violations(fake) == ["render/bad.py:1: render imports sweep", "sweep/bad.py:1: sweep imports cli"]


def test_execute_and_analysis_stay_apart(tmp_path):
    """The scan catches an executor reading the analyses (same floor, apart)."""
    fake = _fake_package(tmp_path, {
        "analysis/__init__.py": "", "execute/__init__.py": "",
        "execute/bad.py": "from tilefoundry.analysis import check\n"})
    assert _violations(fake) == ["execute/bad.py:1: execute imports analysis"]


def test_the_check_sees_the_packer_leave_its_room(tmp_path):
    fake = _fake_package(tmp_path, {
        "packing/__init__.py": "", "ir/__init__.py": "", "ir/dim.py": "",
        "packing/solve.py": "from tilefoundry.errors import X\nfrom tilefoundry.ir.dim import Y\n",
        "errors.py": ""})
    assert _violations(fake) == ["packing/solve.py:2: packing imports ir"]


def test_the_check_sees_a_circle_lazy_or_by_name(tmp_path):
    """A lazy import closing a loop is a circle, and so is a module named to
    importlib (the way a command table loads its commands)."""
    fake = _fake_package(tmp_path, {
        "cli/__init__.py": "",
        "cli/main.py": "import importlib\nimportlib.import_module('tilefoundry.cli.pack_cmd')\n",
        "cli/pack_cmd.py": "def run():\n    from tilefoundry.cli.main import input_file\n",
        "cli/files.py": "", "cli/other.py": "from tilefoundry.cli import files\n"})
    assert _circles(fake) == [["tilefoundry.cli.main", "tilefoundry.cli.pack_cmd"]]


def test_module_file_names_are_unique():
    """Two modules of one name (two `api.py` once) send a reader to the wrong one."""
    names = Counter(p.name for p in PACKAGE.rglob("*.py")
                    if p.name != "__init__.py" and p.relative_to(PACKAGE).as_posix() not in SURFACE_PATHS)
    assert [name for name, count in names.items() if count > 1] == []


def test_surface_paths_only_re_export():
    """The exempted paths hold no definitions of their own: each re-exports."""
    for relative in SURFACE_PATHS:
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        defined = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert defined == [], relative


def test_every_family_folder_holds_more_than_one_module():
    for folder in FAMILY_FOLDERS:
        modules = [p for p in (PACKAGE / folder).glob("*.py") if p.name != "__init__.py"]
        assert modules, f"{folder} holds only its __init__: make it a module"


def test_no_module_runs_past_the_line_limit():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_import_tilefoundry_leaves_every_op_registered():
    """The registry never imports the ops; every way in through the package
    root (the DSL names, load, analyze) still finds the whole op set, and each
    op registered with its typeinfer and access relation."""
    script = (
        "import tilefoundry, sys\n"
        "assert 'tilefoundry.ops' not in sys.modules  # the root stays light\n"
        "from tilefoundry.dsl import tf\n"
        "tf.add\n"
        "from tilefoundry.semantics import op_registry as r\n"
        "classes = {n.op_class for n in r.TF_NAMES.values()}\n"
        "assert len(r.TF_NAMES) >= 72, len(r.TF_NAMES)\n"
        "missing = [c.__name__ for c in classes if c not in r.TYPEINFER or c not in r.ACCESS_RELATIONS]\n"
        "assert not missing, missing\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_op_registry_does_not_know_the_ops():
    tree = ast.parse((PACKAGE / "semantics" / "op_registry.py").read_text(encoding="utf-8"))
    assert not [name for name, _ in _imported_names(tree) if name[0].startswith("tilefoundry.ops")]


def _resolves(path: str) -> bool:
    """``a.b.c`` or ``a.b:c``: the longest importable module prefix, then attributes."""
    import importlib

    dotted, _, attribute = path.partition(":")
    parts = dotted.split(".") + ([attribute] if attribute else [])
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                value = getattr(value, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_import_path_the_docs_name_resolves():
    """A move keeps the paths users read (README, docs/): each one named there imports."""
    import re

    root = PACKAGE.parents[1]
    texts = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    named = {m for path in texts if path.exists()
             for m in re.findall(r"tilefoundry(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?",
                                 path.read_text(encoding="utf-8"))}
    assert len(named) > 10  # the docs do name paths: the scan found them
    assert sorted(p for p in named if not _resolves(p)) == []
    assert not _resolves("tilefoundry.analysis.api")  # and the check can fail


def test_no_program_file_is_named_after_a_standard_module():
    """The loader puts a program's directory first on sys.path (so a program
    imports its siblings): a bench or test program named ``copy.py`` would then
    shadow the standard ``copy`` for everything imported later in that process
    and its spawned workers (a Dask nanny failed on it)."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    tracked = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True,
                             cwd=repo).stdout.split()
    assert tracked, "the repository's Python files are listed by git"
    shadowing = [f for f in tracked if not f.startswith("src/")
                 and f.rsplit("/", 1)[-1][:-3] in sys.stdlib_module_names]
    assert shadowing == []
