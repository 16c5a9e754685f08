"""An input file's bytes read as text: one UTF-8 rule and one location form
for every reader (the DSL loader, KTIR files, relayout tables, buffer CSVs).
At the package root, beside ``errors`` and ``limits``, so each room can use it."""
from __future__ import annotations

__all__ = ["char_column", "line_col", "utf8_text"]


def line_col(data, offset: int, newline="\n") -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``data`` (text, or bytes with
    ``newline=b"\\n"``)."""
    start = data.rfind(newline, 0, offset) + 1
    return data.count(newline, 0, offset) + 1, offset - start + 1


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
        line, col = line_col(data, exc.start, b"\n")
        raise error(f"{where}:{line}:{col}: byte 0x{data[exc.start]:02x} is not UTF-8; "
                    f"{remedy}") from None
