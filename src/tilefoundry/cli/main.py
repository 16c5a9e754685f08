"""`tilefoundry` entry point: argument parsing and the one-line error contract.

Each subcommand lives in its own module exposing ``register(subparsers)``; the
handler it installs as ``func`` returns the process exit code. Heavy imports
happen inside handlers, never here, so ``tilefoundry --help`` stays instant.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

from tilefoundry.errors import TileFoundryError

# Subcommand modules, in help order. Each defines register(subparsers).
_COMMAND_MODULES = (
    "tilefoundry.cli.analyze_cmd",
    "tilefoundry.cli.target_cmd",
    "tilefoundry.cli.intertile_cmd",
    "tilefoundry.cli.relayout_cmd",
    "tilefoundry.cli.models_cmd",
)


_AT_LINE = re.compile(r"^\s+at (?P<where>\S+)(?: variable '(?P<name>[^']*)')?$")


def one_line(message: str) -> str:
    """The CLI's error line: a library message's trailing ``  at <file:line:col>
    variable '<x>'`` line (the reference's two-line form) leads the line instead."""
    lines = [line for line in message.splitlines() if line.strip()]
    if len(lines) == 2:
        located = _AT_LINE.match(lines[1])
        if located:
            name = f" (value '{located['name']}')" if located["name"] else ""
            return f"{located['where']}: {lines[0]}{name}"
    return " ".join(line.strip() for line in lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilefoundry",
        description="Static analysis of tile-level tensor programs.",
    )
    from tilefoundry import __version__

    parser.add_argument("--version", action="version", version=f"tilefoundry {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # a command whose module is not built yet is simply absent
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except TileFoundryError as exc:
        if os.environ.get("TILEFOUNDRY_DEBUG") == "1":
            raise
        print(f"tilefoundry: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
