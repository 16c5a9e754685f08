"""An input's text: one UTF-8 rule, one line rule, one integer rule and one
JSON rule for every reader (the DSL loader, KTIR files, relayout tables,
buffer CSVs, ``--dim`` and the other integer flags, ``TILEFOUNDRY_MAX_*``).
At the package root, beside ``errors`` and ``limits``, so each room can use it.

- Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only, as Python and every editor
  count them: ``str.splitlines`` also breaks at a form feed, ``\\v``,
  ``\\x1c``-``\\x1e``, ``\\x85``, U+2028 and U+2029, so a refusal would name a
  line the file does not have.
- An integer is an optional minus, then ASCII digits 0-9, at most
  ``MAX_DIGITS`` of them: Python's ``int()`` also takes ``_`` separators, a
  ``+``, blanks and other scripts' digits, and ends in a ValueError past its
  own digit limit (4300).
- A JSON object names each key once (``json.loads`` keeps the last), and its
  numbers keep the integer rule; NaN and Infinity are not JSON.
- A CSV file (buffer files, sweep tables) is read by one reader with one cell
  limit (``CSV_CELL``): a longer cell, a NUL or a torn quote is refused at its line.
"""
from __future__ import annotations

import csv
import json
import re

__all__ = ["CSV_CELL", "MAX_DIGITS", "IntegerTextError", "JsonInputError", "char_column", "csv_rows",
           "file_lines", "shown_text", "json_document", "line_col", "read_integer", "utf8_text"]

#: the line breaks of a text file
LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: digits an integer may have (Python's own int() stops at 4300)
MAX_DIGITS = 4000
_SIGNED = re.compile(r"-?[0-9]+")
_UNSIGNED = re.compile(r"[0-9]+")
#: characters one CSV cell may hold: the csv module's own field limit, stated
#: here so that every CSV reader refuses past the same number in the same words
CSV_CELL = 131_072


def file_lines(text: str) -> list[str]:
    """The file's own lines, without their breaks (a final break ends the
    last line, as ``str.splitlines`` has it, rather than starting an empty one)."""
    lines = LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def line_col(data, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``data`` (text, or bytes: the
    column then counts bytes), lines ending as ``file_lines`` ends them."""
    nl, cr = ("\n", "\r") if isinstance(data, str) else (b"\n", b"\r")
    head = data[:offset]
    line = head.count(nl) + head.count(cr) - head.count(cr + nl) + 1
    start = max(head.rfind(nl), head.rfind(cr)) + 1
    return line, offset - start + 1


def char_column(line: str, byte_offset: int) -> int:
    """The 1-based column, in characters, of the UTF-8 ``byte_offset`` into
    ``line``: Python's syntax tree and code positions count bytes, while an
    editor, Python's own SyntaxError and every compiler count characters (a
    tab is one). Without the line's text the bytes are all there is."""
    if not line or line.isascii():
        return byte_offset + 1
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1


def utf8_text(data: bytes, where: str, error: type[Exception],
              remedy: str = "save the file as UTF-8") -> str:
    """``data`` decoded as UTF-8, else ``error`` naming ``where:line:col`` and
    the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = line_col(data, exc.start)
        raise error(f"{where}:{line}:{col}: byte 0x{data[exc.start]:02x} is not UTF-8; "
                    f"{remedy}") from None


# ---------------------------------------------------------------- integers


class IntegerTextError(ValueError):
    """A text that is no integer of the one rule. ``str()`` is the reason, to
    follow the value's name (``--dim seq: the value has 5,000 digits, ...``);
    ``too_long`` tells a digit count past ``MAX_DIGITS`` from a malformed text."""

    def __init__(self, reason: str, too_long: bool):
        super().__init__(reason)
        self.too_long = too_long


def shown_text(text: str, width: int = 40) -> str:
    """``'text'`` quoted for a message, cut at ``width``, its escapes beside
    it when it is not ASCII (``'٣' ('\\u0663')``)."""
    cut = text if len(text) <= width else text[:width] + "..."
    return f"'{cut}'" if cut.isascii() and cut.isprintable() else f"'{cut}' ({ascii(cut)})"


def read_integer(text: str, *, signed: bool = True) -> int:
    """``text`` as an int: an optional minus (when ``signed``), then 1 to
    ``MAX_DIGITS`` ASCII digits; anything else raises IntegerTextError."""
    pattern = _SIGNED if signed else _UNSIGNED
    if not isinstance(text, str) or not pattern.fullmatch(text):
        sign = " (an optional leading minus)" if signed else ""
        shown = shown_text(text) if isinstance(text, str) else repr(text)
        raise IntegerTextError(f"{shown} is not an integer of ASCII digits 0-9{sign}", False)
    digits = len(text) - text.startswith("-")
    if digits > MAX_DIGITS:
        raise IntegerTextError(f"has {digits:,} digits, past the {MAX_DIGITS:,} an integer "
                               "may have", True)
    return int(text, 10)


# ---------------------------------------------------------------- JSON


class JsonInputError(ValueError):
    """A JSON text refused by the JSON rule: ``line``, ``col`` and ``reason``."""

    def __init__(self, line: int, col: int, reason: str):
        super().__init__(f"{line}:{col}: {reason}")
        self.line, self.col, self.reason = line, col, reason


class _Refused(Exception):
    """Raised from a json hook (which knows no position): what to look for."""

    def __init__(self, kind: str, token: str, reason: str):
        super().__init__(reason)
        self.kind, self.token, self.reason = kind, token, reason


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _json_integer(text: str) -> int:
    try:
        return read_integer(text)
    except IntegerTextError as exc:
        raise _Refused("number", text, f"the number {exc}") from None


def _json_constant(text: str):
    raise _Refused("number", text, f"{text} is not a JSON number (JSON has no NaN or Infinity)")


def _json_object(pairs: list) -> dict:
    found: dict = {}
    for key, value in pairs:
        if key in found:
            raise _Refused("key", key, f"the object names key {json.dumps(key)} twice; "
                                       "each key may appear once in an object")
        found[key] = value
    return found


def _position(text: str, refused: _Refused) -> int:
    """Where in ``text`` (valid JSON but for the refusal) the refused token is:
    the first such number, or the second naming of a key inside one object."""
    stack: list = []
    tokens = list(_JSON_TOKEN.finditer(text))
    for k, token in enumerate(tokens):
        word = token.group()
        if word in "{[":
            stack.append(set() if word == "{" else None)
        elif word in "}]":
            stack.pop()
        elif refused.kind == "number" and word == refused.token:
            return token.start()
        elif (refused.kind == "key" and word.startswith('"') and stack and stack[-1] is not None
              and k + 1 < len(tokens) and tokens[k + 1].group() == ":"):
            key = json.loads(word)
            if key == refused.token and key in stack[-1]:
                return token.start()
            stack[-1].add(key)
    return 0


def json_document(text: str):
    """``text`` parsed as JSON by the JSON rule above, else JsonInputError
    with the file's own line and column."""
    try:
        return json.loads(text, parse_int=_json_integer, parse_constant=_json_constant,
                          object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        raise JsonInputError(*line_col(text, exc.pos), f"not valid JSON ({exc.msg})") from None
    except _Refused as refused:
        raise JsonInputError(*line_col(text, _position(text, refused)), refused.reason) from None
    except RecursionError:
        raise JsonInputError(1, 1, "the JSON nests too deeply for this process") from None


# ---------------------------------------------------------------- CSV


def csv_rows(text: str, where: str, error: type[Exception], remedy: str):
    """(line, fields) of each row of the CSV ``text``, lines ending as
    ``file_lines`` ends them; the csv module's refusals (a cell past
    ``CSV_CELL`` characters, a NUL, a quote left open) are ``error`` at their
    line, ``where:LINE:1: what; remedy``."""
    if csv.field_size_limit() != CSV_CELL:  # another library of this process moved it
        csv.field_size_limit(CSV_CELL)
    rows = csv.reader(file_lines(text))
    while True:
        try:
            fields = next(rows, None)
        except csv.Error as exc:
            said = str(exc)
            if "field limit" in said:
                said = f"a cell holds more than {CSV_CELL:,} characters (the most one CSV cell may hold)"
            raise error(f"{where}:{rows.line_num}:1: {said}; {remedy}") from None
        if fields is None:
            return
        yield rows.line_num, fields
