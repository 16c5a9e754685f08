"""What a command's start is spared, answering as before: a command line that
names its command registers that command's parser alone (the others' modules
are not imported) and must answer exactly as the parser of every command does;
the collector runs less often while a command runs, and as before after it."""
from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import textwrap

import pytest

from tilefoundry.cli.main import _COMMAND_MODULES, FIRST_GENERATION, SECOND_GENERATION, build_parser, main

COMMANDS = [name.rsplit(".", 1)[1].removesuffix("_cmd") for name in _COMMAND_MODULES]


def _tree(parser, path=()):
    """(path of command words, parser) of ``parser`` and every parser below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _tree(child, path + (name,))


def test_a_named_command_registers_that_command_alone():
    for command in COMMANDS:
        words = {path[0] for path, _ in _tree(build_parser([command, "x"])) if path}
        assert words == {command}
    assert {path[0] for path, _ in _tree(build_parser(["--help"])) if path} == set(COMMANDS)
    assert {path[0] for path, _ in _tree(build_parser(["analyse"])) if path} == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_one_command_parser_gives_the_same_help(command):
    every = {path: p.format_help() for path, p in _tree(build_parser()) if path[:1] == (command,)}
    alone = {path: p.format_help() for path, p in _tree(build_parser([command])) if path}
    assert alone == every


@pytest.mark.parametrize("argv", [
    ["analyze", "--comp", "x.py"],
    ["analyze", "--dim"],
    ["target"],
    ["target", "shw"],
    ["intertile", "verify", "--bogus=1"],
    ["pack", "--help"],
])
def test_one_command_parser_gives_the_same_answer(argv, capsys, monkeypatch):
    def answer(parser_argv):
        monkeypatch.setattr("tilefoundry.cli.main.build_parser",
                            lambda _argv=None, real=build_parser: real(parser_argv))
        code = main(list(argv))
        return code, capsys.readouterr()

    assert answer(argv) == answer(None)


def test_analyze_imports_no_other_command():
    code = ("import sys; from tilefoundry.cli.main import build_parser; build_parser(['analyze']); "
            "print(sorted(m for m in sys.modules if m.endswith('_cmd')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['tilefoundry.cli.analyze_cmd']"


def test_a_command_runs_with_fewer_collections_and_restores_them(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr("tilefoundry.cli.analyze_cmd.run", lambda args: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    assert main(["analyze", "x.py"]) == 0
    assert seen == [(max(before[0], FIRST_GENERATION), max(before[1], SECOND_GENERATION), *before[2:])]
    assert gc.get_threshold() == before


def test_an_exiting_command_keeps_the_run_thresholds(monkeypatch):
    """``entry`` ends the process as soon as main returns: restoring the
    thresholds there would only make a pass over every object the run kept."""
    monkeypatch.setattr("tilefoundry.cli.analyze_cmd.run", lambda args: None)
    before = gc.get_threshold()
    try:
        assert main(["analyze", "x.py"], exiting=True) == 0
        assert gc.get_threshold() == (max(before[0], FIRST_GENERATION), max(before[1], SECOND_GENERATION),
                                      *before[2:])
    finally:
        gc.set_threshold(*before)


def test_entry_exits_with_the_code_of_main_and_leaves_the_collector_to_the_exit(tmp_path):
    code = ("import gc, os, sys; from tilefoundry.cli import main as m; "
            "exit_ = os._exit; os._exit = lambda c: (print(c, gc.get_threshold()[0]), sys.stdout.flush(), exit_(c)); "
            "sys.argv = ['tilefoundry', 'analyze', '--example']; m.entry()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"0 {FIRST_GENERATION}"


def test_islpy_version_is_read_from_its_dist_info_as_islpy_reads_it():
    """The command answers the import of islpy.version from the installed
    dist-info so that importlib.metadata is not imported: every name islpy's
    own module defines (VERSION_TEXT, VERSION_STATUS, VERSION) has the value
    islpy computes, and the finder is gone once asked."""
    code = textwrap.dedent("""
        import runpy, sys
        from tilefoundry.cli import main as m
        assert m._find_islpy_version_without_metadata()
        assert not m._find_islpy_version_without_metadata()  # there already
        import islpy
        assert "importlib.metadata" not in sys.modules
        assert not any(isinstance(f, m._IslpyVersionFinder) for f in sys.meta_path)
        seeded = sys.modules["islpy.version"]
        assert isinstance(seeded.__spec__.loader, m._NamesLoader)
        real = runpy.run_path(islpy.__path__[0] + "/version.py")
        for name in ("VERSION_TEXT", "VERSION_STATUS", "VERSION"):
            assert getattr(seeded, name) == real[name], name
        assert islpy.__version__ == real["VERSION_TEXT"]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_islpy_version_names_are_read_from_a_single_dist_info_only(tmp_path):
    from tilefoundry.cli.main import _islpy_version_names

    assert _islpy_version_names(str(tmp_path)) is None  # none
    info = tmp_path / "islpy-2026.2.2rc1.dist-info"
    info.mkdir()
    assert _islpy_version_names(str(tmp_path)) is None  # no METADATA
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: islpy\n", encoding="utf-8")
    assert _islpy_version_names(str(tmp_path)) is None  # no Version line
    (info / "METADATA").write_text("Name: islpy\nVersion: 2026.2.2rc1\n", encoding="utf-8")
    assert _islpy_version_names(str(tmp_path)) == {
        "VERSION_TEXT": "2026.2.2rc1", "VERSION_STATUS": "rc1", "VERSION": (2026, 2, 2)}
    (tmp_path / "islpy-2025.1.dist-info").mkdir()
    assert _islpy_version_names(str(tmp_path)) is None  # two: which one is imported is not known


def test_islpy_version_is_left_to_islpy_where_the_dist_info_does_not_state_it():
    code = textwrap.dedent("""
        import sys
        from tilefoundry.cli import main as m
        m._islpy_version_names = lambda site: None
        assert m._find_islpy_version_without_metadata()
        import islpy
        assert not isinstance(sys.modules["islpy.version"].__spec__.loader, m._NamesLoader)
        assert not any(isinstance(f, m._IslpyVersionFinder) for f in sys.meta_path)
        from importlib import metadata
        assert islpy.VERSION_TEXT == metadata.version("islpy")
        assert not m._find_islpy_version_without_metadata()  # islpy already imported: nothing to do
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
