"""The files a command reads and writes: one check of an input path, one of an
output path, and one way to write a view's text. Every command module and the
entry point use them, so they live below all of them (no command imports another).
"""
from __future__ import annotations

import os
import stat
import sys

from tilefoundry.errors import AnalysisError, TileFoundryError

__all__ = ["InputFileError", "input_file", "output_file", "write_file"]


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


def input_file(path: str, expected: str) -> str:
    """``path`` when it is a readable regular file, else an ``InputFileError``
    saying what the path is instead. ``expected`` names the file the command
    reads (``a .mlir file``), for the remedy."""
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


def output_file(path: str) -> str:
    """``path`` when writing it cannot block or clobber something that is not
    a file: absent (it will be created) or a regular file. A FIFO would block
    the run forever, a directory or device is refused by name."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise InputFileError(f"cannot write --output {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise InputFileError(f"--output {path} is {_file_kind(mode)}, not a file; "
                             "give a file path to write the report to")
    return path


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
