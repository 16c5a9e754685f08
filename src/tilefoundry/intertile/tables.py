"""Ownership tables (seed §7.1): reading, validating, and the regions they name.

Two input forms per side: a slice-index table {core: {axis: index}} (axis
absent = uncut, core absent = idle), or explicit boxes with their holders.
Both become a map box -> holders, boxes in integer coordinates: the tensor's
extents when given, else lcm of the two sides' cut counts per axis so that
every slice boundary is an integer.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from math import lcm
from pathlib import Path

from tilefoundry import limits
from tilefoundry.errors import VerifyError
from tilefoundry.text_input import (IntegerTextError, JsonInputError, json_document, line_col,
                                    read_integer, utf8_text)
from tilefoundry.intertile.boxes import first_overlap_within

Box = tuple[tuple[int, int], ...]


class TableError(VerifyError):
    """A malformed ownership table; one line naming the side, core or region."""


@dataclass
class Side:
    name: str
    regions: dict[Box, tuple[int, ...]]  # box -> sorted holder cores
    core_box: dict[int, Box]

    def starts(self, axis: int) -> list[int]:
        return sorted({box[axis][0] for box in self.regions})

    def intervals(self, axis: int) -> list[tuple[int, int]]:
        return sorted({box[axis] for box in self.regions})


@dataclass
class Tables:
    cores: int
    axes: tuple[str, ...]
    extents: tuple[int, ...]
    source: Side
    destination: Side
    where: str = "<tables>"

    def volume(self) -> int:
        v = 1
        for e in self.extents:
            v *= e
        return v


def load_tables(path: str | Path) -> Tables:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        from tilefoundry.errors import UsageError
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    text = utf8_text(raw, str(path), TableError)
    _check_json_nesting(text, str(path))
    try:
        data = json_document(text)  # a core named twice is refused, not last-entry-wins
    except JsonInputError as exc:
        raise TableError(f"{path}:{exc}") from None
    return parse_tables(data, str(path))


def _check_json_nesting(text: str, where: str) -> None:
    """Refuse arrays/objects nested past the nesting limit before json (which
    recurses) reads them; strings are blanked first so brackets in them do not count."""
    bound = limits.limit("NESTING")
    blanked = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: " " * len(m.group()), text)
    depth = 0
    for m in re.finditer(r"[\[\]{}]", blanked):
        depth += 1 if m.group() in "[{" else -1
        if depth > bound:
            line, col = line_col(text, m.start())
            raise TableError(str(limits.over(
                "NESTING", f"{where}:{line}:{col}: the JSON nests too deeply")))


def parse_tables(data: dict, where: str = "<tables>") -> Tables:
    if not isinstance(data, dict):
        raise TableError(f"{where}: expected a JSON object with cores, source, destination")
    cores = data.get("cores")
    if not isinstance(cores, int) or isinstance(cores, bool) or cores <= 0:
        raise TableError(f"{where}: 'cores' must be a positive integer, got {cores!r}")
    limits.check("CORES", cores, f"{where}: 'cores' is {cores:,}")
    tensor = data.get("tensor")
    if tensor is not None and not isinstance(tensor, dict):
        raise TableError(f"{where}: 'tensor' must map each axis to a positive extent")
    for axis, extent in (tensor or {}).items():
        if not _is_int(extent) or extent <= 0:  # `true` is JSON's boolean, not the extent 1
            raise TableError(f"{where}: 'tensor' axis '{axis}' has extent {json.dumps(extent)}; "
                             "give a positive integer")
    sides = {}
    for side in ("source", "destination"):
        has_idx, has_box = side in data, f"{side}_regions" in data
        if has_idx == has_box:
            raise TableError(f"{where}: give exactly one of '{side}' (slice indices) or "
                             f"'{side}_regions' (boxes)")
        if has_box and tensor is None:
            raise TableError(f"{where}: '{side}_regions' needs 'tensor' with the extent of "
                             "every axis")
        sides[side] = data[side] if has_idx else data[f"{side}_regions"]
    axes = list(tensor) if tensor else []
    for side in ("source", "destination"):
        for axis in _axes_named(sides[side], side in data, where, side):
            if axis not in axes:
                if tensor is not None:
                    raise TableError(f"{where}: {side} names axis '{axis}', which 'tensor' "
                                     f"does not list ({', '.join(axes)})")
                axes.append(axis)
    if not axes:
        axes = ["_whole"]  # nothing is cut anywhere: one uncut axis
    counts = {s: _cut_counts(sides[s], axes) for s in sides if s in data}
    extents = []
    for a, axis in enumerate(axes):
        if tensor:
            extents.append(tensor.get(axis, 1))
            for s, n in counts.items():
                if n[a] > tensor.get(axis, 1):
                    raise TableError(f"{where}: {s} slice index {n[a] - 1} on axis '{axis}' "
                                     f"is out of range for extent {tensor.get(axis, 1)}")
                if tensor.get(axis, 1) % n[a]:
                    raise TableError(f"{where}: {s} cuts axis '{axis}' into {n[a]} slices, "
                                     f"which does not divide its extent {tensor.get(axis, 1)}")
        else:
            extents.append(lcm(*(n[a] for n in counts.values()), 1))
    ext = tuple(extents)
    built = {}
    for s in ("source", "destination"):
        if s in data:
            built[s] = _index_side(s, sides[s], axes, ext, counts[s], cores, where)
        else:
            built[s] = _box_side(s, sides[s], axes, ext, cores, where)
    return Tables(cores, tuple(axes), ext, built["source"], built["destination"], where)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _axes_named(table, indexed: bool, where: str, side: str) -> list[str]:
    names: list[str] = []
    if indexed:
        if not isinstance(table, dict):
            raise TableError(f"{where}: '{side}' must map core ids to {{axis: slice index}}")
        entries = table.values()
    else:
        if not isinstance(table, list):
            raise TableError(f"{where}: '{side}_regions' must be a list of "
                             "{box, holders} objects")
        entries = [r.get("box", {}) if isinstance(r, dict) else {} for r in table]
    for entry in entries:
        if not isinstance(entry, dict):
            raise TableError(f"{where}: every {side} entry must be an object keyed by axis")
        names += [k for k in entry if k not in names]
    return names


def _core(key, cores: int, where: str, side: str) -> int:
    # a core id is an integer, or (as a JSON object key) its plain ASCII digits:
    # not true, 1.5, "1_0" or "٣", which Python's int() would take
    try:
        core = key if _is_int(key) else read_integer(key, signed=False)
    except IntegerTextError as exc:
        reason = "is not an integer" if not exc.too_long else str(exc)
        raise TableError(f"{where}: {side} core id {json.dumps(key)[:40]} {reason}; "
                         f"give a core id 0..{cores - 1}") from None
    if not 0 <= core < cores:
        raise TableError(f"{where}: {side} core {core} is out of range 0..{cores - 1}")
    return core


def _cut_counts(table: dict, axes: list[str]) -> list[int]:
    n = [1] * len(axes)
    for entry in table.values():
        for axis, idx in entry.items():
            if isinstance(idx, int) and idx >= 0:
                a = axes.index(axis)
                n[a] = max(n[a], idx + 1)
    return n


def _index_side(side, table, axes, extents, counts, cores, where) -> Side:
    regions: dict[Box, list[int]] = {}
    core_box: dict[int, Box] = {}
    for key, entry in table.items():
        core = _core(key, cores, where, side)
        if core in core_box:
            raise TableError(f"{where}: {side} core {core} appears twice; one entry per core")
        box = []
        for a, axis in enumerate(axes):
            idx = entry.get(axis, 0)
            if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
                raise TableError(f"{where}: {side} core {core} axis '{axis}' has slice index "
                                 f"{idx!r}; use an integer 0..n-1")
            n = counts[a] if axis in entry else 1
            if idx >= extents[a]:
                raise TableError(f"{where}: {side} core {core} axis '{axis}' slice index {idx} "
                                 f"is out of range for extent {extents[a]}")
            size = extents[a] // n
            box.append((idx * size, (idx + 1) * size))
        core_box[core] = tuple(box)
        regions.setdefault(tuple(box), []).append(core)
    boxes = list(regions)
    clash = first_overlap_within(boxes)
    if clash:
        ca, cb = regions[boxes[clash[0]]][0], regions[boxes[clash[1]]][0]
        raise TableError(f"{where}: {side} cores {ca} and {cb} own overlapping "
                         "regions (one leaves an axis uncut that the other cuts); "
                         "give every core an index on every cut axis")
    return Side(side, {b: tuple(sorted(h)) for b, h in regions.items()}, core_box)


def _box_side(side, table, axes, extents, cores, where) -> Side:
    regions: dict[Box, tuple[int, ...]] = {}
    core_box: dict[int, Box] = {}
    first_of: dict[int, int] = {}
    for k, region in enumerate(table):
        if not isinstance(region, dict) or "holders" not in region:
            raise TableError(f"{where}: {side} region #{k} needs 'box' and 'holders'")
        box = []
        spec = region.get("box", {})
        if not isinstance(spec, dict):
            raise TableError(f"{where}: {side} region #{k} 'box' must map axes to "
                             "[start, stop]")
        for a, axis in enumerate(axes):
            bound = spec.get(axis, [0, extents[a]])
            if not (isinstance(bound, list) and len(bound) == 2 and all(map(_is_int, bound))):
                raise TableError(f"{where}: {side} region #{k} axis '{axis}' bound "
                                 f"{json.dumps(bound)} is not [start, stop]; give two integers")
            lo, hi = bound
            if not 0 <= lo < hi <= extents[a]:
                raise TableError(f"{where}: {side} region #{k} axis '{axis}' range "
                                 f"[{lo}, {hi}] is out of range 0..{extents[a]}")
            box.append((lo, hi))
        box = tuple(box)
        holders = region["holders"]
        if not isinstance(holders, list) or not holders:
            raise TableError(f"{where}: {side} region #{k} needs a non-empty 'holders' list")
        hs = []
        for h in holders:
            core = _core(h, cores, where, side)
            if core in hs:
                raise TableError(f"{where}: {side} region #{k} lists holder {core} twice; "
                                 "name each holder once")
            if core in core_box:
                raise TableError(f"{where}: {side} core {core} holds two regions "
                                 f"(#{first_of[core]} and #{k}); a core holds one region "
                                 "per side")
            core_box[core], first_of[core] = box, k
            hs.append(core)
        if box in regions:
            raise TableError(f"{where}: {side} regions #{first_of[regions[box][0]]} and #{k} "
                             "are the same box; list all its holders on one region")
        regions[box] = tuple(sorted(hs))
    boxes = list(regions)
    clash = first_overlap_within(boxes)
    if clash:
        first, second = (first_of[regions[boxes[n]][0]] for n in clash)
        raise TableError(f"{where}: {side} regions #{first} and #{second} overlap; "
                         "regions of one side must be disjoint (list shared holders "
                         "on one region)")
    return Side(side, regions, core_box)


def from_divisions(src: dict[str, int], dst: dict[str, int], cores: int,
                   src_holders: list[list[int]] | None = None,
                   dst_holders: list[list[int]] | None = None) -> Tables:
    """Tables for a division pair; region k (row-major over the side's axes,
    first axis slowest) is held by src_holders[k] (default: core k) and
    dst_holders[k] (default: cores k*r .. k*r+r-1 with r = cores // regions)."""
    def side(div, holders, replicate):
        axes = list(div)
        n = 1
        for v in div.values():
            n *= v
        if holders is None:
            r = max(1, cores // n) if replicate else 1
            holders = [list(range(k * r, k * r + r)) for k in range(n)]
        table = {}
        for k, hs in enumerate(holders):
            idx, rest = {}, k
            for axis in reversed(axes):
                rest, idx[axis] = divmod(rest, div[axis])
            for c in hs:
                table[str(c)] = {a: idx[a] for a in axes}
        return table
    data = {"cores": cores, "source": side(src, src_holders, False),
            "destination": side(dst, dst_holders, True)}
    return parse_tables(data, "<divisions>")
