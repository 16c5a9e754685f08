"""CLI conventions shared by every subcommand (issue 10 item 3): one exit-code
rule, one line for a malformed command line with the nearest flag or command,
selectors that list what exists, help with a description, an example and the
exit codes, and no message naming a command we do not have.

Messages are checked whole, line by line: stderr is exactly the expected line.
"""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from tilefoundry.cli.main import EXIT_CODES, build_parser, main

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "data" / "programs"
INTERTILE = REPO / "tests" / "data" / "intertile"
KTIR = "examples/e01_shared_sources_identical.mlir"
PYTHON_SOURCE = "a Python file: SOURCE is file.py[:Module[.child...][.function]]"
COMMANDS = "analyze, run, check, target, intertile, relayout, models, pack, sweep, place, diff"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(capsys, argv, code, line) -> None:
    """The command exits ``code`` with stdout empty and stderr exactly ``line``."""
    got, out, err = run(capsys, *argv)
    assert (got, err.splitlines()) == (code, [line]), err
    assert out == ""


def all_parsers(parser=None):
    parser = parser or build_parser()
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from all_parsers(child)


# ------------------------------------------------------------------ selectors

@pytest.mark.parametrize("selector, line", [
    ("p11_seq_variants.py:SeqPol",
     "tilefoundry: error: selector 'SeqPol' is not defined by the source; it defines the "
     "Module SeqPool; did you mean 'SeqPool'?"),
    ("p06_module_tree.py:MiniStak",
     "tilefoundry: error: selector 'MiniStak' is not defined by the source; it defines the "
     "Modules MiniBlock, MiniStack; did you mean 'MiniStack'?"),
    ("p06_module_tree.py:MiniStack.layer9",
     "tilefoundry: error: selector 'MiniStack.layer9': Module 'MiniStack' has no child module "
     "'layer9'; it has children blk0, blk1, blk2 and functions embed, lm_head, step"),
    ("p06_module_tree.py:MiniStack.blk1x",
     "tilefoundry: error: selector 'MiniStack.blk1x': Module 'MiniStack' has no child module "
     "'blk1x'; it has children blk0, blk1, blk2 and functions embed, lm_head, step; "
     "did you mean 'blk1'?"),
    ("p06_module_tree.py:MiniStack.blk0.blok",
     "tilefoundry: error: selector 'MiniStack.blk0.blok': Module 'blk0' has no child module "
     "'blok'; it has no children and functions attention, block, rms, swiglu_mlp; "
     "did you mean 'block'?"),
    ("p06_module_tree.py:MiniStack.layer9.block",
     "tilefoundry: error: selector 'MiniStack.layer9.block': Module 'MiniStack' has no child "
     "module 'layer9'; it has children blk0, blk1, blk2"),
])
def test_wrong_selector_lists_what_exists_and_the_nearest(selector, line, capsys, monkeypatch):
    monkeypatch.chdir(PROGRAMS)
    refused(capsys, ["analyze", selector], 1, line)


# -------------------------------------------------------------- unknown flags

def test_no_parser_takes_an_abbreviated_flag():
    lax = [p.prog for p in all_parsers() if p.allow_abbrev]
    assert lax == []


@pytest.mark.parametrize("argv, line", [
    (["analyze", "--comp", "p06_module_tree.py:MiniStack"],
     "tilefoundry: error: unrecognized argument '--comp'; did you mean '--compute-cost'? "
     "(see tilefoundry analyze --help)"),
    (["analyze", "--dims", "seq=96", "p11_seq_variants.py:SeqPool"],
     "tilefoundry: error: unrecognized argument '--dims'; did you mean '--dim'? "
     "(see tilefoundry analyze --help)"),
    (["analyze", "--memroy=1", "p06_module_tree.py:MiniStack"],
     "tilefoundry: error: unrecognized argument '--memroy=1'; did you mean '--memory'? "
     "(see tilefoundry analyze --help)"),
    (["models", "--jsn"],
     "tilefoundry: error: unrecognized argument '--jsn'; did you mean '--json'? "
     "(see tilefoundry models --help)"),
    (["relayout", "classify", "--jsno", "t.json"],
     "tilefoundry: error: unrecognized argument '--jsno'; did you mean '--json'? "
     "(see tilefoundry relayout classify --help)"),
    (["intertile", "verify", "--tile", "4", KTIR],
     "tilefoundry: error: unrecognized argument '--tile'; did you mean '--tiles'? "
     "(see tilefoundry intertile verify --help)"),
    (["intertile", "run", "--func", "@f", KTIR],
     "tilefoundry: error: unrecognized argument '--func'; did you mean '--function'? "
     "(see tilefoundry intertile run --help)"),
    (["target", "list", "--frobnicate"],
     "tilefoundry: error: unrecognized argument '--frobnicate' (see tilefoundry target list --help)"),
    (["analyse", "x.py"],
     "tilefoundry: error: argument COMMAND: invalid choice: 'analyse' (choose from 'analyze', "
     "'run', 'check', 'target', 'intertile', 'relayout', 'models', 'pack', 'sweep', 'place', 'diff'); did you mean 'analyze'? (see tilefoundry --help)"),
    (["intertile", "verfy", KTIR],
     "tilefoundry: error: argument ACTION: invalid choice: 'verfy' (choose from 'verify', 'run'); "
     "did you mean 'verify'? (see tilefoundry intertile --help)"),
])
def test_unknown_flag_or_command_suggests_the_nearest(argv, line, capsys):
    refused(capsys, argv, 2, line)


# ----------------------------------------------------------------- exit codes

@pytest.mark.parametrize("argv, line", [
    ([], f"tilefoundry: error: a command is required: {COMMANDS} (see tilefoundry --help)"),
    (["analyze"], "tilefoundry: error: analyze: SOURCE is required (file.py[:Module[.child...]"
                  "[.function]]), or --example (see tilefoundry analyze --help)"),
    (["analyze", "a.py", "b.py"],
     "tilefoundry: error: unexpected argument 'b.py' (see tilefoundry analyze --help)"),
    (["target"], "tilefoundry: error: target needs an action: `tilefoundry target list` or "
                 "`tilefoundry target show ID` (see tilefoundry target --help)"),
    (["target", "show"], "tilefoundry: error: the following arguments are required: ID "
                         "(see tilefoundry target show --help)"),
    (["intertile"], "tilefoundry: error: the following arguments are required: ACTION "
                    "(verify, run) (see tilefoundry intertile --help)"),
    (["intertile", "verify"], "tilefoundry: error: the following arguments are required: FILE "
                              "(see tilefoundry intertile verify --help)"),
    (["intertile", "run", "--tiles", "x", KTIR],
     "tilefoundry: error: argument --tiles: invalid tile count 'x': write a positive integer "
     "in plain digits, e.g. --tiles 8 "
     "(see tilefoundry intertile run --help)"),
    (["intertile", "verify", "--tiles", "0", KTIR],
     "tilefoundry: error: --tiles must be a positive integer, got 0 "
     "(see tilefoundry intertile verify --help)"),
    (["relayout"], "tilefoundry: error: the following arguments are required: ACTION "
                   "(classify) (see tilefoundry relayout --help)"),
    (["relayout", "classify"], "tilefoundry: error: the following arguments are required: "
                               "TABLES.json (see tilefoundry relayout classify --help)"),
    (["models", "extra"], "tilefoundry: error: unexpected argument 'extra' "
                          "(see tilefoundry models --help)"),
])
def test_malformed_command_line_is_one_line_and_exit_2_everywhere(argv, line, capsys, monkeypatch):
    monkeypatch.chdir(INTERTILE)
    refused(capsys, argv, 2, line)


@pytest.mark.parametrize("argv, line", [
    (["analyze", "absent.py"], f"tilefoundry: error: source file not found: {INTERTILE}/absent.py"),
    (["analyze", "absent.py:Root"], f"tilefoundry: error: source file not found: {INTERTILE}/absent.py"),
    (["intertile", "verify", "absent.mlir"],
     "tilefoundry: error: absent.mlir: no such file; give a .mlir file in KTIR syntax"),
    (["intertile", "run", "absent.mlir"],
     "tilefoundry: error: absent.mlir: no such file; give a .mlir file in KTIR syntax"),
    (["relayout", "classify", "absent.json"],
     'tilefoundry: error: absent.json: no such file; give a JSON file {"cores": N, '
     '"source": {...}, "destination": {...}}'),
    (["intertile", "verify", "examples"],
     "tilefoundry: error: examples is a directory, not a file; give a .mlir file in KTIR syntax"),
    (["relayout", "classify", "/dev/null"],
     'tilefoundry: error: /dev/null is a character device, not a file; give a JSON file '
     '{"cores": N, "source": {...}, "destination": {...}}'),
])
def test_missing_or_unusable_input_file_exits_1_everywhere(argv, line, capsys, monkeypatch):
    monkeypatch.chdir(INTERTILE)
    refused(capsys, argv, 1, line)


def test_unreadable_input_file_exits_1(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked.mlir"
    locked.write_text("")
    locked.chmod(0)
    try:
        if locked.open("rb"):  # root reads anything: nothing to check then
            pytest.skip("running as a user who can read a mode-0 file")
    except PermissionError:
        pass
    monkeypatch.chdir(tmp_path)
    refused(capsys, ["intertile", "verify", "locked.mlir"], 1,
            "tilefoundry: error: cannot read locked.mlir: permission denied; "
            "give a .mlir file in KTIR syntax")


@pytest.mark.parametrize("argv", [
    ["analyze", "--compute-cost", "p06_module_tree.py:MiniStack"],
    ["target", "list"], ["models"],
])
def test_success_exits_0_with_empty_stderr(argv, capsys, monkeypatch):
    monkeypatch.chdir(PROGRAMS)
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "") and out


# ------------------------------------------------ analyze on what is no program

def test_analyze_given_ktir_points_to_intertile(capsys, monkeypatch):
    monkeypatch.chdir(INTERTILE)
    refused(capsys, ["analyze", KTIR], 1,
            f"tilefoundry: error: {KTIR} is a KTIR file, not a Python program: check it with "
            f"`tilefoundry intertile verify {KTIR}` (or `intertile run`)")


@pytest.mark.parametrize("source, what", [
    ("examples", "examples is a directory"),
    ("examples:Root", "examples is a directory"),
    ("/dev/null", "/dev/null is a character device"),
])
def test_analyze_on_a_directory_or_device_says_what_it_is(source, what, capsys, monkeypatch):
    monkeypatch.chdir(INTERTILE)
    refused(capsys, ["analyze", source], 1,
            f"tilefoundry: error: {what}, not a file; give {PYTHON_SOURCE}")


# --------------------------------------------- messages name only real commands

@pytest.mark.parametrize("argv, line, advised", [
    (["--dim", "seq=1024", "--dim", "seq=96"],
     "tilefoundry: error: --dim seq was given twice (seq=1024, then seq=96); list its values "
     "once: --dim seq=1024,96", ["--dim", "seq=1024,96"]),
    (["--dim", "seq"],
     "tilefoundry: error: --dim takes NAME=EXTENT or NAME=V1,V2,... (e.g. --dim seq=128 or "
     "--dim seq=64,128), got 'seq'", ["--dim", "seq=64,128"]),
    (["--dim", "seq=1_024"],
     "tilefoundry: error: --dim seq: every value must be an integer, got '1_024'; write each "
     "EXTENT in ASCII digits 0-9 only (e.g. --dim seq=96 or --dim seq=64,128)", ["--dim", "seq=96"]),
])
def test_dim_messages_advise_only_a_form_that_is_accepted(argv, line, advised, capsys, monkeypatch):
    monkeypatch.chdir(PROGRAMS)
    refused(capsys, ["analyze", *argv, "p11_seq_variants.py:SeqPool"], 1, line)  # companions §8.3
    # the form each message advises is accepted
    code, _, err = run(capsys, "analyze", "--roofline", *advised, "p11_seq_variants.py:SeqPool")
    assert (code, err) == (0, "")


CLI_SOURCES = sorted((REPO / "src" / "tilefoundry" / "cli").glob("*.py")) + [
    REPO / "src" / "tilefoundry" / "dsl" / "loader.py"]


@pytest.mark.parametrize("path", CLI_SOURCES, ids=lambda p: p.name)
def test_cli_messages_name_only_commands_that_exist(path):
    commands = set(COMMANDS.split(", "))
    # a command is named in backticks, an indented example, or after "rule: "
    named = set(re.findall(r"(?:`|  |: )tilefoundry ([a-z][a-z-]*)", path.read_text()))
    assert named - commands == set(), path


# ----------------------------------------------------------------------- help

@pytest.mark.parametrize("prog", [p.prog for p in all_parsers()])
def test_every_help_has_a_description_an_example_and_the_exit_codes(prog, capsys):
    parser = next(p for p in all_parsers() if p.prog == prog)
    code, out, err = run(capsys, *prog.split()[1:], "--help")
    assert (code, err) == (0, "")
    assert parser.description and " ".join(parser.description.split()[:4]) in " ".join(out.split())
    assert re.search(r"^examples?( \(from [^)]*\))?:\n  tilefoundry ", out, re.M), out
    assert " ".join(EXIT_CODES.split()) in " ".join(out.split())


NOWHERE = "(no directory)"  # an example whose help names none runs from an empty one


def _examples(parser):
    """(cwd, argv) of every example line in a parser's epilog: the directory
    its ``examples (from DIR):`` header names (``the repository root`` is the
    checkout), or NOWHERE when the header names none."""
    cwd = NOWHERE
    for line in (parser.epilog or "").splitlines():
        if re.match(r"examples?( \(from [^)]*\))?:", line):
            where = re.match(r"examples? \(from ([^)]*)\):", line)
            named = where.group(1) if where else None
            cwd = NOWHERE if named is None else str(REPO if named == "the repository root"
                                                    else REPO / named)
        if line.startswith("  tilefoundry "):
            yield cwd, shlex.split(line)[1:]


EXAMPLES = sorted({(cwd, tuple(argv)) for p in all_parsers() for cwd, argv in _examples(p)})


@pytest.mark.parametrize("cwd, argv", EXAMPLES, ids=[" ".join(a) for _, a in EXAMPLES])
def test_every_help_example_runs(cwd, argv, capsys, monkeypatch, tmp_path):
    """From the directory its help names, or from an empty one where it names
    none (so an example reading a relative path must name where it is)."""
    assert cwd == NOWHERE or Path(cwd).is_dir(), f"the help names a directory that is not: {cwd}"
    monkeypatch.chdir(tmp_path if cwd == NOWHERE else cwd)
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "") and out


@pytest.mark.parametrize("prog", [p.prog for p in all_parsers()][1:])
def test_every_command_and_action_has_a_help_example(prog):
    """Every command (run and check included) and every action is shown by at
    least one example some help gives, so the test above runs each of them."""
    words = tuple(prog.split()[1:])
    shown = [argv for _, argv in EXAMPLES if argv[:len(words)] == words]
    assert shown, f"no --help example runs `{prog}`"


def test_example_collection_reads_every_header_form():
    """The collector can fail: a header without a directory runs nowhere, a
    named one from there, and a later header resets the earlier one."""
    parser = argparse.ArgumentParser(epilog="examples (from tests/data/programs):\n"
                                            "  tilefoundry run a.py\n\nexample:\n  tilefoundry models\n"
                                            "example (from the repository root):\n  tilefoundry x")
    assert list(_examples(parser)) == [(str(PROGRAMS), ["run", "a.py"]), (NOWHERE, ["models"]),
                                       (str(REPO), ["x"])]


def test_intertile_help_points_to_the_ktir_syntax_reference(capsys):
    for argv in (["intertile"], ["intertile", "verify"], ["intertile", "run"]):
        code, out, _ = run(capsys, *argv, "--help")
        assert code == 0 and "docs/ktir-syntax.md" in out, argv


def test_readme_states_the_exit_code_rule():
    readme = " ".join((REPO / "README.md").read_text().split())
    assert ("Exit codes, the same for every subcommand: 0 ok; 1 a program or input file "
            "rejected, a missing or unreadable file and any `--dim` error included") in readme
    assert "2 a malformed command line" in readme
