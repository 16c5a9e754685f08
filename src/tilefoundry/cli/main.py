"""`tilefoundry` entry point: argument parsing and the one-line error contract.

Each subcommand lives in its own module exposing ``register(subparsers)``; the
handler it installs as ``func`` returns the process exit code. Heavy imports
happen inside handlers, never here, so ``tilefoundry --help`` stays instant.

The conventions every subcommand shares live here: one exit-code rule
(``EXIT_CODES``) and one form for a malformed command line (``usage_line``); the
files a command reads and writes are checked in ``files`` (below every command
module, which all use it); the nearest-name suggestion is ``errors.did_you_mean``,
shared with the selector messages.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import re
import sys
import warnings

from tilefoundry.errors import TileFoundryError, UsageError, did_you_mean, one_line, spell_bindings
from tilefoundry.cli.files import check_output_flags

# Subcommand modules, in help order. Each defines register(subparsers) for the
# command named as the module less "_cmd" (tilefoundry.cli.analyze_cmd: analyze).
_COMMAND_MODULES = (
    "tilefoundry.cli.analyze_cmd",
    "tilefoundry.cli.run_cmd",
    "tilefoundry.cli.check_cmd",
    "tilefoundry.cli.target_cmd",
    "tilefoundry.cli.intertile_cmd",
    "tilefoundry.cli.relayout_cmd",
    "tilefoundry.cli.models_cmd",
    "tilefoundry.cli.pack_cmd",
    "tilefoundry.cli.sweep_cmd",
    "tilefoundry.cli.place_cmd",
    "tilefoundry.cli.diff_cmd",
)


EXIT_CODES = (
    "exit codes: 0 ok; 1 a program or input file rejected (a missing or "
    "unreadable file and any --dim error included); 2 a malformed command line."
)


def usage_line(prog: str, message: str) -> str:
    """The one stderr line of a malformed command line: the message, then where
    the command's help is (no usage block: the line is the whole answer)."""
    return f"tilefoundry: error: {message} (see {prog} --help)"


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps prose paragraphs but keeps a paragraph with indented lines (an
    example command) as written."""

    def _fill_text(self, text, width, indent):
        import textwrap  # help text only: a run never formats one

        paragraphs = []
        for paragraph in textwrap.dedent(text).strip().split("\n\n"):
            if any(line.startswith(" ") for line in paragraph.splitlines()):
                paragraphs.append(textwrap.indent(paragraph, indent))
            else:
                paragraphs.append(textwrap.fill(" ".join(paragraph.split()), width,
                                                initial_indent=indent, subsequent_indent=indent))
        return "\n\n".join(paragraphs)


class Parser(argparse.ArgumentParser):
    """Every tilefoundry parser and subparser: no abbreviated flags (``--comp``
    must not silently mean ``--compute-cost``) and one-line errors."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        print(usage_line(self.prog, message + self._suggestion(message)), file=sys.stderr)
        self.exit(2)

    def _suggestion(self, message: str) -> str:
        if "the following arguments are required: ACTION" in message:
            actions = ", ".join(child.prog.split()[-1] for child in _subparsers(self))
            return f" ({actions})"
        chosen = re.search(r"invalid choice: '([^']*)'", message)
        if not chosen:
            return ""
        choices = [c for action in self._actions if action.choices for c in action.choices]
        return did_you_mean(chosen.group(1), choices)

    def option_strings(self) -> list[str]:
        return [o for action in self._actions for o in action.option_strings]

    def reject_extras(self, extras: list[str]):
        """The first argument no parser took, as one line with the nearest flag."""
        word = extras[0]
        if word.startswith("-") and word != "-":
            flag = word.split("=", 1)[0]
            self.error(f"unrecognized argument '{word}'{did_you_mean(flag, self.option_strings())}")
        self.error(f"unexpected argument '{word}'")


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:  # argparse offers no public walk of its tree
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.values()


def _finish(parser: argparse.ArgumentParser) -> None:
    """Every parser in the tree records itself (the deepest one chosen is the
    one a late error speaks for) and ends its help with the exit codes."""
    parser.set_defaults(tf_parser=parser)
    parser.epilog = f"{parser.epilog}\n\n{EXIT_CODES}" if parser.epilog else EXIT_CODES
    for child in _subparsers(parser):
        _finish(child)


def _command_modules(argv: list[str] | None) -> tuple[str, ...]:
    """The command modules to register for ``argv``: when its first word names
    a command, that command's alone (its parser answers everything that
    command line can ask, and the others' imports are not paid for); else
    every one (the top-level help, a missing or misspelt command)."""
    if argv:
        named = f"tilefoundry.cli.{argv[0]}_cmd"
        if named in _COMMAND_MODULES:
            return (named,)
    return _COMMAND_MODULES


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``argv``'s command only (see
    ``_command_modules``)."""
    parser = Parser(
        prog="tilefoundry",
        description="Static analysis of tile-level tensor programs.",
        epilog="examples (from tests/data/programs):\n  tilefoundry analyze --compute-cost --memory p06_module_tree.py:MiniStack\n"
               "  tilefoundry analyze --example\n\n"
               "Run `tilefoundry COMMAND --help` for one command.",
    )
    from tilefoundry import __version__

    parser.add_argument("--version", action="version", version=f"tilefoundry {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _command_modules(argv):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # a command whose module is not built yet is simply absent
        module.register(subparsers)
    _finish(parser)
    return parser


def _parse(parser: Parser, argv: list[str] | None) -> argparse.Namespace:
    args, extras = parser.parse_known_args(argv)
    if extras:
        args.tf_parser.reject_extras(extras)
    if not getattr(args, "func", None):
        commands = ", ".join(child.prog.split()[-1] for child in _subparsers(parser))
        parser.error(f"a command is required: {commands}")
    return args


def _escape_what_cannot_be_encoded() -> None:
    """A report naming a non-ASCII identifier, written to a stream whose
    encoding cannot hold it (PYTHONIOENCODING=ascii, a C locale), is written
    with backslash escapes (``\\xfc``), as Python's stderr already does, not
    an internal error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a detached or closed stream: leave it
                pass


class StdoutError(TileFoundryError):
    """The report could not be written to standard output (a full device, a
    closed terminal): one line, exit 1, like an output file that cannot be."""


class _GuardedStdout:
    """stdout, whose write errors (but a reader gone away: a BrokenPipeError,
    which is no error of the run) become a StdoutError."""

    def __init__(self, stream):
        self._stream = stream

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(f"cannot write the report to standard output: "
                              f"{exc.strerror or exc}; redirect it to a file that can be "
                              "written") from None

    def write(self, text):
        return self._guarded(self._stream.write, text)

    def flush(self):
        return self._guarded(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)


#: The first generation's threshold while a command runs. A run builds its
#: objects (modules, the program, the analysis) and keeps nearly all of them
#: to its end, so a collector pass finds almost nothing to free, yet it walks
#: every object allocated since the last: memory-bound work that an
#: instruction count hides (two passes at 100,000 were 50-80 ms of a
#: whole-model decode step's ~1 s, which allocates a quarter of a million).
#: At this many a run of that size makes none; a garbage cycle still waits for
#: at most this many allocations (a few tens of MB), and the run's peak
#: resident memory grew by 5 MB (70 -> 75 MB).
FIRST_GENERATION = 1_000_000
#: The second generation's: a pass over it walks every survivor so far (about
#: 80 ms on a whole-model decode step, which the default 10 made at its tenth
#: first-generation pass); garbage cycles die young, in the first generation.
SECOND_GENERATION = 50


@contextlib.contextmanager
def _fewer_collections(restore: bool = True):
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], FIRST_GENERATION), max(thresholds[1], SECOND_GENERATION), *thresholds[2:])
    try:
        yield
    finally:
        if restore:
            gc.set_threshold(*thresholds)


class _IslpyVersionFinder:
    """A meta path finder answering the import of ``islpy.version`` alone,
    from islpy's installed ``.dist-info``: islpy's own version module asks
    ``importlib.metadata``, whose import (zipfile, email, urllib, ...) is
    ~20 ms of every command that reads a relation (a small golden program
    runs in ~0.1 s). It is asked at islpy's first import, so a command that
    never imports islpy pays nothing; it leaves ``sys.meta_path`` when asked.
    The module it makes holds what islpy's defines, by its rule; where the
    version cannot be read so plainly (no single dist-info, no Version line),
    it answers nothing and islpy reads the version its own way."""

    def find_spec(self, name, path=None, target=None):
        if name != "islpy.version":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        names = _islpy_version_names(os.path.dirname(path[0])) if path else None
        if names is None:
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, _NamesLoader(names))


class _NamesLoader:
    """Loads a module that holds ``names`` and nothing else."""

    def __init__(self, names: dict):
        self.names = names

    def create_module(self, spec):
        return None  # the default module

    def exec_module(self, module):
        module.__dict__.update(self.names)


def _islpy_version_names(site: str) -> dict | None:
    """islpy.version's names, read from the single islpy dist-info in ``site``."""
    try:
        infos = [n for n in os.listdir(site) if n.startswith("islpy-") and n.endswith(".dist-info")]
        if len(infos) != 1:
            return None
        with open(os.path.join(site, infos[0], "METADATA"), encoding="utf-8") as metadata:
            text = next((line[len("Version:"):].strip() for line in metadata
                         if line.startswith("Version:")), None)
    except (OSError, ValueError):
        return None
    found = re.match(r"^([0-9.]+)([a-z0-9]*?)$", text or "")
    if found is None:
        return None
    return {"VERSION_TEXT": text, "VERSION_STATUS": found.group(2),
            "VERSION": tuple(int(part) for part in found.group(1).split("."))}


def _find_islpy_version_without_metadata() -> bool:
    """Put ``_IslpyVersionFinder`` first on ``sys.meta_path`` unless islpy is
    imported already or the finder is there; True when it was put there."""
    if "islpy" in sys.modules or any(isinstance(f, _IslpyVersionFinder) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _IslpyVersionFinder())
    return True


def main(argv: list[str] | None = None, *, exiting: bool = False) -> int:
    """The command line ``argv`` run in this process; its exit code.
    ``exiting``: the process ends as soon as this returns (``entry``), so the
    collector keeps the run's thresholds: restored, the next allocation would
    make a first-generation pass over every object the run built and kept
    (a quarter of a million on a whole-model decode step, ~70 ms), freeing
    nothing the exit does not."""
    _escape_what_cannot_be_encoded()
    _find_islpy_version_without_metadata()
    stream = sys.stdout
    if stream is not None:
        sys.stdout = _GuardedStdout(stream)
    form = spell_bindings("cli")  # refusals say --dim NAME=EXTENT, not dims={...}
    try:
        with _fewer_collections(restore=not exiting):
            return _main(argv)
    finally:
        sys.stdout = stream
        spell_bindings(form)


def _main(argv: list[str] | None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    try:
        args = _parse(parser, argv)
        sys.stdout.flush()  # --help and --version are written here
    except SystemExit as exc:  # --help, --version, or a malformed command line
        try:
            sys.stdout.flush()
        except StdoutError as error:
            print(f"tilefoundry: error: {error}", file=sys.stderr)
            return 1
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    except StdoutError as exc:
        print(f"tilefoundry: error: {exc}", file=sys.stderr)
        return 1
    try:
        check_output_flags(args)  # every file a command writes, before any work
        with warnings.catch_warnings():
            if os.environ.get("TILEFOUNDRY_DEBUG") != "1":
                warnings.simplefilter("ignore")  # stderr is a refusal's one line, or nothing
            code = int(args.func(args) or 0)
            sys.stdout.flush()  # a full device says so now, as one line
            return code
    except UsageError as exc:  # a malformed command line found after parsing
        print(usage_line(args.tf_parser.prog, one_line(str(exc))), file=sys.stderr)
        return exc.exit_code
    except TileFoundryError as exc:
        if os.environ.get("TILEFOUNDRY_DEBUG") == "1":
            raise
        print(f"tilefoundry: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except (RecursionError, MemoryError) as exc:  # past a limit raised by the user
        if os.environ.get("TILEFOUNDRY_DEBUG") == "1":
            raise
        print(f"tilefoundry: error: the input is too large or too deeply nested for this "
              f"process ({type(exc).__name__}); keep the TILEFOUNDRY_MAX_* limits at their "
              "defaults (README, Limits) or split the input", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader went away (`| head`): not an error of the program analysed
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass  # no real descriptor behind stdout: nothing left to flush
        return 0
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        if os.environ.get("TILEFOUNDRY_DEBUG") == "1":
            raise
        print(
            f"tilefoundry: internal error: {type(exc).__name__}: {exc} "
            "(set TILEFOUNDRY_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


def entry() -> None:
    """The ``tilefoundry`` command: ``main``, then exit at once. A loaded program
    may start a non-daemon thread; the report is done, so the process ends
    with it rather than waiting on the program's threads."""
    code = main(exiting=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
