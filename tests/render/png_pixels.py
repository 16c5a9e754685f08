"""A tiny PNG reader for screenshot checks: 8-bit RGB/RGBA, not interlaced
(what Chromium writes), decoded with zlib and the five PNG row filters."""
from __future__ import annotations

import struct
import zlib


def _chunks(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at = 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        yield kind, data[at + 8:at + 8 + length]
        at += 12 + length


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, row: bytearray, prior: bytes, step: int) -> bytearray:
    for i in range(len(row)):
        left = row[i - step] if i >= step else 0
        up = prior[i]
        corner = prior[i - step] if i >= step else 0
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 2:
            row[i] = (row[i] + up) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            row[i] = (row[i] + _paeth(left, up, corner)) & 0xFF
    return row


def read_png(data: bytes) -> tuple[int, int, list[bytes], int]:
    """(width, height, rows of raw pixel bytes, bytes per pixel)."""
    header, idat = None, b""
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    step = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * step
    rows, prior = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = _unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prior, step)
        rows.append(bytes(row))
        prior = row
    return width, height, rows, step


def colours_in(data: bytes, box: tuple[int, int, int, int]) -> dict:
    """RGB colour -> pixel count inside ``box`` = (left, top, right, bottom)."""
    width, height, rows, step = read_png(data)
    left, top, right, bottom = box
    found: dict = {}
    for y in range(max(top, 0), min(bottom, height)):
        row = rows[y]
        for x in range(max(left, 0), min(right, width)):
            colour = row[x * step:x * step + 3]
            found[colour] = found.get(colour, 0) + 1
    return found
