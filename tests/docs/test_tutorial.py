"""docs/tutorial.md is runnable (issue 10 item 2): every ```console / ```shell block
is a shell session whose `$ tilefoundry ...` commands are run, from the folder the
session has `cd`-ed into (starting at the repository root), and every output line the
tutorial shows must appear, in order, in what the command really prints (stdout, then
stderr). A line that is exactly `...` stands for any number of lines. A command whose
shown output has a `tilefoundry: error:` line must exit non-zero, any other must exit 0.
Every program under docs/tutorial/ must be run by some command of the tutorial, and a
```python block headed `# file: <path>` must equal that file. The README's `$ tilefoundry`
sessions (plain ``` blocks) are checked the same way, from the repository root."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
PROGRAMS = REPO / "docs" / "tutorial"

FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass
class Command:
    line: int          # line of the `$` in tutorial.md
    cwd: Path          # folder it runs from
    argv: list[str]    # after the `tilefoundry` word
    expected: list[str] = field(default_factory=list)


def fenced_blocks(text: str):
    """(language, first body line number, body lines) of every fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        start, body = i + 2, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        yield opened.group(1), start, body
        i += 1


def parse_sessions(text: str, root: Path, languages=("console", "shell")) -> list[Command]:
    """The commands of every block in `languages`, `cd` carried across blocks; a
    block with no `$ ` line is not a session (README's bare command listings)."""
    cwd, commands = root, []
    for language, start, body in fenced_blocks(text):
        if language not in languages or not any(line.startswith("$ ") for line in body):
            continue
        current = None
        for offset, raw in enumerate(body):
            if raw.startswith("$ "):
                words = shlex.split(raw[2:])
                if words[0] == "cd":
                    assert len(words) == 2, f"line {start + offset}: cd takes one folder"
                    cwd = (cwd / words[1]).resolve()
                    assert cwd.is_dir(), f"line {start + offset}: no folder {cwd}"
                    current = None
                    continue
                assert words[0] == "tilefoundry", (
                    f"line {start + offset}: only `tilefoundry` and `cd` commands "
                    f"are run; got {words[0]!r}")
                current = Command(start + offset, cwd, words[1:])
                commands.append(current)
            elif current is not None:
                current.expected.append(raw.rstrip())
            elif raw.strip():
                raise AssertionError(f"line {start + offset}: output line before any command")
    return commands


def run(command: Command) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("TILEFOUNDRY_DEBUG", None)
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "tilefoundry", *command.argv],
                          cwd=command.cwd, capture_output=True, text=True, timeout=300, env=env)


def mismatch(expected: list[str], actual: str) -> str | None:
    """None when every shown line appears, in order, as a whole line of `actual`
    (`...` skipping any number of lines, blank shown lines ignored); else why not."""
    got = [line.rstrip() for line in actual.splitlines()]
    at = 0
    for want in expected:
        if want.strip() in ("...", ""):
            continue
        try:
            at = got.index(want, at) + 1
        except ValueError:
            return f"line not printed (in this order): {want!r}"
    return None


def check(command: Command) -> None:
    result = run(command)
    where = f"line {command.line}: $ tilefoundry {shlex.join(command.argv)}"
    refusal = any(line.startswith("tilefoundry: error:") for line in command.expected)
    if refusal:
        assert result.returncode != 0, f"{where}: expected a refusal, exit 0"
    else:
        assert result.returncode == 0, f"{where}: exit {result.returncode}: {result.stderr}"
    problem = mismatch(command.expected, result.stdout + result.stderr)
    assert problem is None, f"{where}: {problem}\n--- actual output ---\n{result.stdout}{result.stderr}"


COMMANDS = parse_sessions(TUTORIAL.read_text(), REPO)
# The README's `$ tilefoundry` sessions (plain ``` blocks), run from the repository root.
README_COMMANDS = parse_sessions((REPO / "README.md").read_text(), REPO, languages=("", "console", "shell"))


def test_tutorial_has_commands_with_output():
    assert len(COMMANDS) >= 8 and len(README_COMMANDS) >= 5
    assert all(command.expected for command in COMMANDS + README_COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=[f"line{c.line}" for c in COMMANDS])
def test_tutorial_command_prints_what_the_tutorial_shows(command):
    check(command)


@pytest.mark.parametrize("command", README_COMMANDS, ids=[f"readme{c.line}" for c in README_COMMANDS])
def test_readme_session_prints_what_the_readme_shows(command):
    check(command)


def test_every_tutorial_program_is_run():
    ran = {(command.cwd / word).resolve() for command in COMMANDS for word in command.argv
           if word.split(":")[0].endswith(".py")
           for word in [word.split(":")[0]]}
    programs = set(PROGRAMS.glob("*.py"))
    assert programs, "docs/tutorial/ holds no program"
    assert programs <= ran, f"not run by the tutorial: {sorted(p.name for p in programs - ran)}"


def test_shown_program_sources_equal_the_files():
    shown = 0
    for language, start, body in fenced_blocks(TUTORIAL.read_text()):
        if language != "python" or not body or not body[0].startswith("# file: "):
            continue
        path = REPO / body[0][len("# file: "):].strip()
        assert path.is_file(), f"tutorial.md:{start}: no file {path}"
        assert "\n".join(body[1:]).strip() == path.read_text().strip(), (
            f"tutorial.md:{start}: the listing differs from {path.relative_to(REPO)}")
        shown += 1
    assert shown >= 4


# The checker itself must be able to fail.

def test_checker_refuses_a_wrong_output_line():
    [command] = parse_sessions(
        "```console\n$ cd docs/tutorial\n$ tilefoundry analyze --compute-cost step1_scale.py\n"
        "# compute-cost flops=f32:1@1\n```\n", REPO)
    with pytest.raises(AssertionError, match="line not printed"):
        check(command)


def test_checker_refuses_lines_out_of_order_and_a_wrong_exit():
    assert mismatch(["b", "...", "a"], "a\nb\n") is not None
    assert mismatch(["a", "...", "b"], "a\nx\nb\n") is None
    [command] = parse_sessions(
        "```console\n$ tilefoundry analyze docs/tutorial/step1_scale.py\n"
        "tilefoundry: error: nothing\n```\n", REPO)
    with pytest.raises(AssertionError, match="expected a refusal"):
        check(command)


def test_parser_refuses_untested_commands():
    with pytest.raises(AssertionError, match="only `tilefoundry` and `cd`"):
        parse_sessions("```shell\n$ rm -rf build\n```\n", REPO)
