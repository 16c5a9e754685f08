"""A sweep space (``SPACE.toml``): what `tilefoundry sweep` runs, read and
checked before any point is built (docs/views.md, "Sweeps").

The file names selections, dims, targets, topology levels, families and the
table. Every key is checked; anything else is one line naming the key and
its line (``space.toml:7: dims.seq: step is 0; ...``). The points are
counted before any is built and refused past ``TILEFOUNDRY_MAX_SWEEP_POINTS``,
the bound `analyze --dim` keeps.

A dim binds the selections whose program reaches a dimension of its name
(``ctx_len`` binds a zoo decoder layer, not its ``embed``); every other
selection runs once for the other coordinates, its column of that dim empty.
Finding which does means loading each program once here (no analysis runs).
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from itertools import product

from tilefoundry.errors import TileFoundryError, did_you_mean, one_line

__all__ = ["DEFAULT_FAMILIES", "KEY_COLUMNS", "Point", "Selection", "Space", "SpaceError", "extent_count",
           "load_space", "parse_space"]

#: the families a row states when the space names none (those of an analyze row)
DEFAULT_FAMILIES = ("compute-cost", "memory", "roofline", "performance")
#: a space's keys, in the order the refusal lists them
TOP_KEYS = ("selections", "dims", "targets", "topologies", "families", "table")
RANGE_KEYS = ("start", "stop", "step")
#: the key columns of every row, before the dims
KEY_COLUMNS = ("selection", "target", "topology")
#: columns a dim cannot be named after (the table's own; figure columns hold a '.' or '-')
RESERVED = KEY_COLUMNS + ("status", "waves")
TABLE_FORMATS = (".csv", ".parquet")


class SpaceError(TileFoundryError):
    """A sweep space that states no sweep (exit 1)."""


@dataclass(frozen=True)
class Selection:
    """One selection of the space.

    Attributes:
        name: its canonical key, the table's ``selection``: ``model:Root.child``
            for a zoo selection, the path as the space writes it (relative to
            the space's folder) and ``:Selector`` for a file.
        path: the source file, absolute.
        selector: ``Root[.child...][.function]``, or None (the file's only Module).
        fixed: the zoo's own bindings (``ctx_len=4096``), which a swept dim overrides.
        zoo: the zoo model's name (a worker reads its own installed copy), or None.
        digest: sha256 of the file's bytes: a worker that reads other bytes refuses.
        target: the one target a zoo placed root is built for (its points run
            there only), or None (every swept target).
    """

    name: str
    path: str
    selector: str | None
    fixed: tuple = ()
    zoo: str | None = None
    digest: str = ""
    target: str | None = None


@dataclass(frozen=True)
class Point:
    """One row to run: a selection, a target (None: the module's own), a
    topology level (None: the module's first) and the dims bound to it."""

    selection: Selection
    target: str | None
    topology: str | None
    dims: tuple  # ((name, extent), ...) in the space's dims order, only those it binds

    def key(self, dim_names: tuple) -> tuple:
        bound = dict(self.dims)
        return (self.selection.name, self.target, self.topology) + tuple(bound.get(n) for n in dim_names)


@dataclass(frozen=True)
class Space:
    path: str
    selections: tuple
    dims: dict  # name -> tuple or range of extents, in the file's order
    targets: tuple  # identities, or (None,): the module's own
    topologies: tuple  # levels, or (None,): the module's first
    families: object  # a tuple of family names, or "all"
    table: str | None  # the table the file names (absolute), or None
    binds: dict = field(default_factory=dict)  # selection name -> the dim names it binds

    @property
    def dim_names(self) -> tuple:
        return tuple(self.dims)

    def targets_of(self, selection: Selection) -> tuple:
        """The swept targets a selection runs on: a placed root its own only."""
        if selection.target is None:
            return self.targets
        return (selection.target,) if self.targets == (None,) else \
            tuple(t for t in self.targets if t == selection.target)

    def count_of(self, selection: Selection) -> int:
        count = len(self.targets_of(selection)) * len(self.topologies)
        for name in self.binds.get(selection.name, ()):
            count *= extent_count(self.dims[name])
        return count

    def count(self) -> int:
        return sum(self.count_of(s) for s in self.selections)

    def points(self):
        """Every point, in the table's order: selections as the file lists
        them (a zoo model's in `tilefoundry models` order), then targets,
        topology levels and the product of the bound dims in the file's order."""
        for selection in self.selections:
            names = self.binds.get(selection.name, ())
            for target in self.targets_of(selection):
                for topology in self.topologies:
                    for values in product(*(self.dims[n] for n in names)):
                        yield Point(selection, target, topology, tuple(zip(names, values)))

    def breakdown(self) -> str:
        """How the count is made, e.g. ``18 selections x 35 ctx_len values x 3
        targets + 38 selections x 3 targets``."""
        groups: dict = {}
        for selection in self.selections:
            key = (self.binds.get(selection.name, ()), len(self.targets_of(selection)))
            groups[key] = groups.get(key, 0) + 1
        terms = []
        for (names, targets), count in groups.items():
            factors = [f"{count} selection{'s' if count != 1 else ''}"]
            factors += [f"{extent_count(self.dims[n])} {n} values" for n in names]
            if self.targets != (None,):
                factors.append(f"{targets} target{'s' if targets != 1 else ''}")
            if self.topologies != (None,):
                factors.append(f"{len(self.topologies)} topologies")
            terms.append(" x ".join(factors))
        return " + ".join(terms)


def extent_count(values) -> int:
    """How many extents a dim lists, counted without building them: a range
    of more than 2**63 values is a number like any other (``len`` of such a
    range is an OverflowError)."""
    if isinstance(values, range):
        return max(0, -(-(values.stop - values.start) // values.step))
    return len(values)


def _digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


class _Lines:
    """Where a key is written in the file: best effort over the text (tomllib
    gives no positions). A ``[table]`` header sets the prefix of the keys
    below it; ``a.b = ...`` and ``"a" = ...`` are read as written."""

    _HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    _PART = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
    _KEY = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")

    def __init__(self, text: str):
        self.lines: dict = {}
        prefix: tuple = ()
        for number, line in enumerate(text.splitlines(), start=1):
            header = self._HEADER.match(line)
            if header:
                prefix = self._split(header.group(1))
                self.lines.setdefault(prefix, number)
                continue
            key = self._KEY.match(line)
            if key:
                self.lines.setdefault(prefix + self._split(key.group(1)), number)

    @staticmethod
    def _split(dotted: str) -> tuple:
        return tuple(part.strip().strip("\"'") for part in re.findall(r"""[^."']+|"[^"]*"|'[^']*'""", dotted)
                     if part.strip())

    def of(self, *key) -> int | None:
        for cut in range(len(key), 0, -1):
            if key[:cut] in self.lines:
                return self.lines[key[:cut]]
        return None


class _Reader:
    """The checks of one file, each refusal naming the key and its line."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.where = _Lines(text)

    def refuse(self, key: tuple, message: str) -> SpaceError:
        line = self.where.of(*[k for k in key if isinstance(k, str)])
        at = f"{self.path}:{line}" if line else self.path
        shown = "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(key))
        return SpaceError(f"{at}: {shown}: {message}" if key else f"{at}: {message}")

    def string_list(self, data: dict, key: str, what: str) -> tuple | None:
        """A non-empty list of distinct, non-empty strings, or None where absent."""
        if key not in data:
            return None
        value = data[key]
        if not isinstance(value, list):
            raise self.refuse((key,), f"give a list of {what}, got {_kind(value)}")
        if not value:
            raise self.refuse((key,), f"the list is empty; name at least one of {what}, or leave "
                                      f"'{key}' out")
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.refuse((key, index), f"each of {what} is a non-empty string, got "
                                                f"{_kind(item) if not isinstance(item, str) else repr(item)}")
            if item in value[:index]:
                raise self.refuse((key, index), f"'{item}' is listed twice; name each once")
        return tuple(value)


def _kind(value) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "a table"}
    shown = repr(value) if not isinstance(value, (list, dict)) else ""
    named = names.get(type(value), type(value).__name__)
    return f"{named} ({shown})" if shown and len(shown) < 40 else named


def _extent(reader: _Reader, key: tuple, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise reader.refuse(key, f"an extent is a whole number such as 128, got {_kind(value)}")
    if value < 0:
        raise reader.refuse(key, f"{value} is negative; an extent is a whole number 0 or more")
    return value


def _dim(reader: _Reader, name, value):
    key = ("dims", name)
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        raise reader.refuse(key, f"'{name}' is not a dimension name (a Python identifier, as the "
                                 "program's DimVar is named)")
    if name in RESERVED:
        raise reader.refuse(key, f"'{name}' names a column of the table ({', '.join(RESERVED)}); a "
                                 "DimVar of that name cannot be swept")
    if isinstance(value, list):
        if not value:
            raise reader.refuse(key, "the list is empty; give one or more extents, e.g. "
                                     f"{name} = [64, 128]")
        values = tuple(_extent(reader, key + (i,), v) for i, v in enumerate(value))
        repeated = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if repeated is not None:
            raise reader.refuse(key, f"{repeated} is listed twice; list each extent once")
        return values
    if isinstance(value, dict):
        unknown = [k for k in value if k not in RANGE_KEYS]
        if unknown:
            raise reader.refuse(key + (unknown[0],), f"'{unknown[0]}' is not a key of a range; a range is "
                                                     f"{{start, stop, step}}"
                                                     f"{did_you_mean(unknown[0], RANGE_KEYS)}")
        missing = [k for k in ("start", "stop") if k not in value]
        if missing:
            raise reader.refuse(key, f"a range needs '{missing[0]}': {{start = 64, stop = 1025, step = 64}} "
                                     "(stop excluded, step 1 when left out)")
        start, stop = (_extent(reader, key + (k,), value[k]) for k in ("start", "stop"))
        step = value.get("step", 1)
        if isinstance(step, bool) or not isinstance(step, int):
            raise reader.refuse(key + ("step",), f"step is a whole number, got {_kind(step)}")
        if step <= 0:
            raise reader.refuse(key + ("step",), f"step is {step}; a range counts up from start to below "
                                                 "stop by a positive step")
        if stop <= start:
            raise reader.refuse(key, f"the range from {start} to below {stop} is empty; stop is excluded, "
                                     f"so give stop > start (e.g. stop = {start + step})")
        return range(start, stop, step)
    raise reader.refuse(key, f"give a list of extents ({name} = [64, 128]) or a range "
                             f"({name} = {{start = 64, stop = 1025, step = 64}}), got {_kind(value)}")


def _selections(reader: _Reader, items: tuple, folder: str, targets=(None,)) -> tuple:
    from tilefoundry.dsl.loader import split_source
    from tilefoundry.dsl.zoo_names import zoo_model, zoo_selections

    found: list[Selection] = []
    for index, item in enumerate(items):
        key = ("selections", index)
        name, _, selector = item.partition(":")
        path, selector = (item, selector) if zoo_model(name) is not None else split_source(item)
        if path.endswith(".py"):
            absolute = os.path.abspath(os.path.join(folder, path))  # a Dask worker has its own cwd
            if not os.path.isfile(absolute):
                what = "no such file" if not os.path.exists(absolute) else "not a file"
                raise reader.refuse(key, f"{path}: {what} (read relative to the space's folder "
                                         f"{folder or '.'}); give 'file.py[:Selector]' or a zoo model")
            chosen = [Selection(item, absolute, selector)]
        else:
            # the one zoo resolver (dsl/zoo_names.py): a model name alone is the placed
            # roots of the swept targets, each run on its own target (issue 40 item 5)
            try:
                picked = zoo_selections(name, selector, targets)
            except TileFoundryError as exc:
                raise reader.refuse(key, one_line(str(exc)).replace(
                    "is no zoo model", "is neither a Python file (file.py[:Selector]) nor a zoo model")
                ) from None
            chosen = [Selection(p.name, p.path, p.selector, p.dims, p.zoo, target=p.target)
                      for p in picked]
        for selection in chosen:
            twice = next((s for s in found if s.name == selection.name), None)
            if twice is not None:
                raise reader.refuse(key, f"'{selection.name}' is named twice (directly or by its zoo "
                                         "model); name each selection once")
            found.append(selection)
    digests: dict = {}
    return tuple(Selection(s.name, s.path, s.selector, s.fixed, s.zoo,
                           digests.setdefault(s.path, _digest(s.path)), s.target) for s in found)


def _binds(reader: _Reader, selections: tuple, dims: dict) -> dict:
    """Which dims each selection binds: those its program reaches (each file
    run once, no analysis)."""
    if not dims:
        return {}
    from tilefoundry.analysis.dim_binding import reached_dimvars
    from tilefoundry.dsl.loader import selection_loader

    loaders: dict = {}
    binds: dict = {}
    reached_anywhere: set = set()
    for index, selection in enumerate(selections):
        load = loaders.setdefault(selection.path, selection_loader(selection.path))
        try:
            module, function = load(selection.selector)
            reached = reached_dimvars(module, function)[0]
        except TileFoundryError as exc:
            raise reader.refuse(("selections",), f"'{selection.name}' does not load: "
                                                 f"{one_line(str(exc))}") from None
        reached_anywhere.update(reached)
        binds[selection.name] = tuple(n for n in dims if n in reached)
    for name in dims:
        if not any(name in names for names in binds.values()):
            raise reader.refuse(("dims", name), f"no selection reaches a dimension named '{name}'; they "
                                                f"reach {', '.join(sorted(reached_anywhere)) or 'none'}"
                                                f"{did_you_mean(name, reached_anywhere)}")
    return binds


def parse_space(text: str, path: str) -> Space:
    """The space ``text`` (the contents of the file ``path``) states, checked
    and counted; each program it names is loaded once (no analysis runs)."""
    import tomllib

    from tilefoundry.api import families_of
    from tilefoundry.limits import check, limit, over, toml_nesting

    toml_nesting(text, path, SpaceError)  # tomllib recurses once per level
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = re.search(r"\(at line (\d+), column (\d+)\)$", message)
        where = f"{path}:{at.group(1)}:{at.group(2)}" if at else path
        raise SpaceError(f"{where}: not TOML: {message[:at.start()].strip() if at else message}") from None
    reader = _Reader(path, text)
    for key in data:
        if key not in TOP_KEYS:
            raise SpaceError(_unknown(reader, key))
    folder = os.path.dirname(path)
    items = reader.string_list(data, "selections", "'file.py[:Selector]' or zoo model names")
    if items is None:
        raise SpaceError(f"{path}: 'selections' is required: a list of 'file.py[:Selector]' (read "
                         "relative to the space's folder) or zoo model names (tilefoundry models)")
    dims_table = data.get("dims", {})
    if not isinstance(dims_table, dict):
        raise reader.refuse(("dims",), f"give a table of dimension -> extents ([dims] then seq = [64, "
                                       f"128]), got {_kind(dims_table)}")
    dims = {name: _dim(reader, name, value) for name, value in dims_table.items()}
    targets = reader.string_list(data, "targets", "target identities (tilefoundry target list)")
    if targets:
        from tilefoundry.target.catalog import resolve_identity

        for index, identity in enumerate(targets):
            try:
                resolve_identity(identity)
            except TileFoundryError as exc:
                raise reader.refuse(("targets", index), one_line(str(exc))) from None
    topologies = reader.string_list(data, "topologies", "topology levels")
    families = data.get("families", list(DEFAULT_FAMILIES))
    if families == []:
        raise reader.refuse(("families",), "the list is empty; leave 'families' out for the four of a "
                                           f"row ({', '.join(DEFAULT_FAMILIES)}), or name them")
    if not isinstance(families, (list, str)) or (isinstance(families, list) and
                                                 not all(isinstance(f, str) for f in families)):
        raise reader.refuse(("families",), f"give a list of family names or \"all\", got {_kind(families)}")
    try:
        families = families_of(families, "families")
    except TileFoundryError as exc:
        raise reader.refuse(("families",), one_line(str(exc)).removeprefix("families: ")) from None
    table = data.get("table")
    if table is not None:
        if not isinstance(table, str) or not table.lower().endswith(TABLE_FORMATS):
            raise reader.refuse(("table",), f"the table is a path ending .csv or .parquet, got "
                                            f"{_kind(table) if not isinstance(table, str) else repr(table)}")
        table = os.path.normpath(os.path.join(folder, table))
    selections = _selections(reader, items, folder, tuple(targets or (None,)))
    space = Space(path, selections, dims, targets or (None,), topologies or (None,),
                  families, table)
    # a lower bound first (every dim binding nothing): a hostile space costs no load
    least = sum(len(space.targets_of(s)) for s in selections) * len(space.topologies)
    if least > limit("SWEEP_POINTS"):
        factors = [f"{len(selections)} selections"]
        factors += [f"{len(space.targets)} targets"] if targets else []
        factors += [f"{len(space.topologies)} topologies"] if topologies else []
        raise over("SWEEP_POINTS", f"{path} asks for at least {least:,} points ({' x '.join(factors)}, "
                                   "before any dim)")
    binds = _binds(reader, selections, dims) if dims else {}
    space = Space(path, selections, dims, space.targets, space.topologies, families, table, binds)
    count = space.count()
    check("SWEEP_POINTS", count, f"{path} asks for {count:,} points ({space.breakdown()})")
    return space


def _unknown(reader: _Reader, key: str) -> str:
    line = reader.where.of(key)
    at = f"{reader.path}:{line}" if line else reader.path
    return (f"{at}: '{key}' is not a key of a sweep space; a space states "
            f"{', '.join(TOP_KEYS)}{did_you_mean(key, TOP_KEYS)}")


def load_space(path: str) -> Space:
    """The space the file ``path`` states (read as UTF-8)."""
    from tilefoundry.text_input import utf8_text

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SpaceError(f"cannot read {path}: {exc.strerror}") from None
    return parse_space(utf8_text(data, path, SpaceError), path)
