"""The files a command reads and writes: one check of an input path, one of an
output path, and one way to write a view's text. Every command module and the
entry point use them, so they live below all of them (no command imports another).
"""
from __future__ import annotations

import os
import stat
import sys

from tilefoundry.errors import AnalysisError, TileFoundryError

__all__ = ["InputFileError", "input_file", "output_file", "check_output_flags", "write_file"]


class InputFileError(TileFoundryError):
    """An input file named on the command line cannot be used (exit 1)."""


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _no_nul(path: str, verb: str, expected: str) -> None:
    """A path holding a NUL names no file (the system cannot take it; a
    shell cannot pass one, a Python caller of main() can)."""
    if "\0" in path:
        raise InputFileError(f"cannot {verb} {ascii(path)}: a path cannot hold a NUL "
                             f"character; give {expected}")


def input_file(path: str, expected: str) -> str:
    """``path`` when it is a readable regular file, else an ``InputFileError``
    saying what the path is instead. ``expected`` names the file the command
    reads (``a .mlir file``), for the remedy."""
    _no_nul(path, "read", expected)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file; give {expected}") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror}; give {expected}") from None
    if not stat.S_ISREG(mode):
        raise InputFileError(f"{path} is {_file_kind(mode)}, not a file; give {expected}")
    if not os.access(path, os.R_OK):
        raise InputFileError(f"cannot read {path}: permission denied; give {expected}")
    return path


def output_file(path: str, flag: str = "--output") -> str:
    """``path`` when writing it cannot block or clobber something that is not
    a file: absent in an existing folder (it will be created) or a regular
    file. A FIFO would block the run forever, a directory or device is refused
    by name, an empty path or a missing folder likewise: decided before the
    work, never after it."""
    if path == "":
        raise InputFileError(f"{flag} names no file (an empty path); give a file path")
    _no_nul(path, f"write {flag}", "a file path")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InputFileError(f"cannot write {flag} {path}: its folder {folder} does not exist; "
                                 "create it or give a path in an existing folder") from None
        return path
    except OSError as exc:
        raise InputFileError(f"cannot write {flag} {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise InputFileError(f"{flag} {path} is {_file_kind(mode)}, not a file; "
                             "give a file path to write to")
    return path


#: every flag that names a file a command writes (checked before the work)
OUTPUT_FLAGS = (("output", "--output"), ("trace", "--trace"), ("html", "--html"),
                ("plot", "--plot"), ("save", "--save"))


def check_output_flags(args) -> None:
    """Each output path of a command line is writable, and no two name one file."""
    seen: dict = {}
    for attribute, flag in OUTPUT_FLAGS:
        path = getattr(args, attribute, None)
        if path is None:
            continue
        output_file(path, flag)
        key = os.path.realpath(path)
        if key in seen:
            raise InputFileError(f"{seen[key]} and {flag} both name {path}; one would overwrite the "
                                 "other: give each its own file")
        seen[key] = flag


def write_file(text: str | bytes, path: str | None, flag: str) -> None:
    """``text`` (or the bytes of a PNG / PDF) to ``path`` (stdout when None);
    an unwritable path is one line naming the flag."""
    if path:
        try:
            if isinstance(text, bytes):
                with open(path, "wb") as handle:
                    handle.write(text)
                return
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise AnalysisError(f"cannot write {flag} {path}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
