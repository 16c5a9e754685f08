"""The MiniMalloc CSV format: a header ``id,lower,upper,size`` then one row
per buffer, live over [lower, upper) (lower inclusive, upper exclusive, as
MiniMalloc's sweep ends a buffer before one starting at the same time) and
needing ``size`` bytes. Ids are names (``b1`` or ``0``), unique in the file.

Every refusal is one line ``FILE:LINE:COL: what, the rule; the remedy``.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.errors import PackingInputError
from tilefoundry.text_input import IntegerTextError, csv_rows, read_integer, utf8_text
from tilefoundry.packing.problem import Buffer

__all__ = ["COLUMNS", "BufferRow", "read_buffers_csv", "parse_buffers_csv"]

COLUMNS = ("id", "lower", "upper", "size")
_REMEDY = "give a header id,lower,upper,size and one row per buffer"


@dataclass(frozen=True)
class BufferRow:
    """One buffer as the file names it, with the line it came from."""

    id: str
    buffer: Buffer
    line: int


def read_buffers_csv(path: str) -> list[BufferRow]:
    with open(path, "rb") as handle:
        data = handle.read()
    return parse_buffers_csv(data, path)


def parse_buffers_csv(data: bytes, path: str = "<buffers>") -> list[BufferRow]:
    text = utf8_text(data, path, PackingInputError,
                     remedy="a buffer file is UTF-8 text (save it as UTF-8)")
    if not text.strip():
        raise PackingInputError(f"{path}:1:1: the file is empty; {_REMEDY}")
    # the one CSV reader (text_input.csv_rows): the file's own lines (a form feed
    # or U+2028 inside a line breaks nothing), one cell limit, refusals at their line
    rows = csv_rows(text, path, PackingInputError, "a field is one id or integer (and a quoted field "
                                                   "ends on a later line only where its closing quote is)")
    header = [name.strip() for name in next(rows, (1, []))[1]]
    columns = _columns(header, path)
    seen: dict[str, int] = {}
    result = []
    for line, fields in rows:
        if not any(f.strip() for f in fields):
            continue  # a blank line separates nothing
        result.append(_row(fields, columns, line, path, seen))
    return result


def _columns(header, path) -> dict:
    unknown = [name for name in header if name not in COLUMNS]
    if unknown:
        col = _col(header, header.index(unknown[0]))
        raise PackingInputError(
            f"{path}:1:{col}: column '{unknown[0]}' is not one of id,lower,upper,size "
            "(alignment and gaps are not supported); remove it")
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise PackingInputError(
            f"{path}:1:1: the header lacks column '{missing[0]}' (header: {','.join(header)}); {_REMEDY}")
    return {name: header.index(name) for name in COLUMNS}


def _col(fields, index) -> int:
    """1-based character column of field ``index`` (fields joined by commas)."""
    return 1 + sum(len(f) + 1 for f in fields[:index])


def _row(fields, columns, line, path, seen) -> BufferRow:
    if len(fields) != len(columns):
        raise PackingInputError(
            f"{path}:{line}:1: {len(fields)} fields where the header has {len(columns)}; {_REMEDY}")
    ident = fields[columns["id"]].strip()
    if not ident:
        raise PackingInputError(f"{path}:{line}:{_col(fields, columns['id'])}: the id is empty; name every buffer")
    if ident in seen:
        raise PackingInputError(
            f"{path}:{line}:{_col(fields, columns['id'])}: id '{ident}' repeats the buffer of line "
            f"{seen[ident]}; ids must be unique (rename one)")
    seen[ident] = line
    lower, upper, size = (_integer(fields, columns, name, line, path) for name in ("lower", "upper", "size"))
    if size < 0:
        raise PackingInputError(
            f"{path}:{line}:{_col(fields, columns['size'])}: size {size} of buffer '{ident}' is negative; "
            "a size is a byte count >= 0")
    if lower >= upper:
        raise PackingInputError(
            f"{path}:{line}:{_col(fields, columns['upper'])}: buffer '{ident}' lives over [{lower}, {upper}), "
            "which is empty; upper is exclusive and must exceed lower")
    return BufferRow(ident, Buffer(lower, upper, size), line)


def _integer(fields, columns, name, line, path) -> int:
    """The one integer rule of every input (text_input.read_integer): an
    optional minus, then ASCII digits only, at most MAX_DIGITS of them."""
    raw = fields[columns[name]].strip()
    where = f"{path}:{line}:{_col(fields, columns[name])}"
    try:
        return read_integer(raw)
    except IntegerTextError as exc:
        if exc.too_long:
            raise PackingInputError(f"{where}: {name} {exc}; give {name} in fewer digits") from None
        shown = raw if raw.isascii() else f"{raw} ({ascii(raw)})"
        raise PackingInputError(f"{where}: {name} '{shown[:40]}' is not an integer; give {name} as "
                                "a base-10 integer of ASCII digits 0-9 (an optional leading minus)"
                                ) from None
