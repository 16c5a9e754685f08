"""The table of a sweep: one row per point, as CSV or Parquet (the file's
extension says which; Parquet needs pyarrow, ``pip install 'tilefoundry[cluster]'``
or ``pip install pyarrow``).

Columns, in this order: ``selection``, ``target``, ``topology`` (empty: the
module's own target, its first level), one per dim (empty where the point's
program does not reach it), ``status`` (``ok``, or the refusal's one line),
then the figures of ``analyze``'s rows (docs/views.md): ``predicted-ns``,
``waves``, ``ideal-ns``, ``bound-by``, ``estimate-ns``, ``estimate-bound-by``
(when the space names the estimate family), ``flops.<dtype>``, ``service.<kind>``,
``traffic.<level>.read`` / ``.write`` (whole bytes), ``peak.<level>``; a
figure column exists when some row states it, empty elsewhere. Rows are in
the space's order (docs/views.md), whichever backend ran them, so two runs of
one space write the same bytes.

The table is rewritten whole, atomically (a temporary file beside it, then a
rename), as points finish: the file on disk is always a complete table of
every point finished by its last write, never a torn one, and Parquet needs no
footer repair after a kill. Rewrites are spaced so that they cost a small
share of the run (``Writer``).
"""
from __future__ import annotations

import csv
import io
import os
import time

from tilefoundry.errors import TileFoundryError

__all__ = ["Table", "TableError", "Writer", "figure_cells", "order_columns", "read_table", "table_format",
           "write_table"]

#: figure columns that hold text; every other figure, and every dim, is an integer
TEXT_COLUMNS = frozenset({"selection", "target", "topology", "status", "bound-by",
                          "estimate-bound-by"})
_HEAD = ("predicted-ns", "waves", "ideal-ns", "bound-by", "estimate-ns", "estimate-bound-by")
_GROUPS = ("flops.", "service.", "traffic.", "peak.")
INT64 = (1 << 63) - 1


class TableError(TileFoundryError):
    """A table that cannot be read or written as a sweep's (exit 1)."""


def table_format(path: str) -> str:
    extension = os.path.splitext(path)[1].lower()
    if extension == ".csv":
        return "csv"
    if extension == ".parquet":
        return "parquet"
    raise TableError(f"{path}: a sweep table is FILE.csv or FILE.parquet (its extension says which)")


def figure_cells(figures: dict) -> dict:
    """``tilefoundry.api.figures``' dict as the table's figure columns."""
    cells: dict = {}
    for key in ("predicted_ns", "waves", "ideal_ns", "bound_by", "estimate_ns", "estimate_bound_by"):
        if figures.get(key) is not None:
            cells[key.replace("_", "-")] = figures[key]
    for dtype, count in sorted((figures.get("flops") or {}).items()):
        cells[f"flops.{dtype}"] = count
    for kind, count in sorted((figures.get("service") or {}).items()):
        cells[f"service.{kind}"] = count
    for level, moved in sorted((figures.get("traffic") or {}).items()):
        cells[f"traffic.{level}.read"] = moved["read"]
        cells[f"traffic.{level}.write"] = moved["write"]
    for level, peak in sorted((figures.get("peak_bytes") or {}).items()):
        cells[f"peak.{level}"] = peak
    return cells


def order_columns(dim_names: tuple, seen) -> list[str]:
    """The table's columns: the keys, the dims, status, then each figure
    present in some row, in a fixed order (_HEAD, then each group sorted)."""
    fixed = ["selection", "target", "topology", *dim_names, "status"]
    rest = [c for c in dict.fromkeys(seen) if c not in fixed]

    def rank(column: str):
        if column in _HEAD:
            return (0, _HEAD.index(column), "")
        group = next((i for i, g in enumerate(_GROUPS) if column.startswith(g)), len(_GROUPS))
        return (1 + group, 0, column)

    return fixed + sorted(rest, key=rank)


class Table:
    """Rows (dicts column -> int, str or None) under their columns; ``dims``
    are the columns between ``topology`` and ``status``."""

    def __init__(self, columns: list[str], rows: list[dict]):
        self.columns = columns
        self.rows = rows

    @property
    def dims(self) -> tuple:
        return tuple(self.columns[3:self.columns.index("status")])

    def key(self, row: dict) -> tuple:
        return tuple(row.get(c) for c in self.columns[:self.columns.index("status")])


def _csv_bytes(columns: list[str], rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row[c] for c in columns])
    return out.getvalue().encode("utf-8")


def _parquet_table(columns: list[str], rows: list[dict]):
    pa = _pyarrow()[0]
    arrays = {}
    for column in columns:
        values = [row.get(column) for row in rows]
        if column in TEXT_COLUMNS:
            arrays[column] = pa.array(values, type=pa.string())
            continue
        # pyarrow casts a float to int64 by truncating it: a figure keeps its type or is refused
        other = next((v for v in values if v is not None and (isinstance(v, bool) or not isinstance(v, int))),
                     None)
        if other is not None:
            raise TableError(f"column {column} holds {other!r} ({type(other).__name__}), where a sweep "
                             "table's figures and dims are whole numbers")
        too_big = next((v for v in values if v is not None and not -INT64 - 1 <= v <= INT64), None)
        if too_big is not None:
            raise TableError(f"column {column} holds {too_big}, past Parquet's 64-bit integers; "
                             "write the table as .csv")
        arrays[column] = pa.array(values, type=pa.int64())
    return pa.table(arrays)


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise TableError("a .parquet table needs pyarrow: pip install 'tilefoundry[cluster]' (or "
                         "pip install pyarrow), or name the table FILE.csv") from None
    return pyarrow, pyarrow.parquet


def write_table(path: str, table: Table) -> None:
    """``table`` to ``path``, atomically: a temporary file in the same folder,
    then a rename over the old one."""
    kind = table_format(path)
    folder = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        if kind == "csv":
            with open(temporary, "wb") as handle:
                handle.write(_csv_bytes(table.columns, table.rows))
        else:
            _pyarrow()[1].write_table(_parquet_table(table.columns, table.rows), temporary)
        os.replace(temporary, path)
    except OSError as exc:
        raise TableError(f"cannot write the table {path}: {exc.strerror}") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def read_table(path: str) -> Table:
    """A table this module wrote (CSV or Parquet), values as they were written.
    Its schema is checked first: every column one a sweep writes (the keys,
    dims, status, the figures), each of its type (text, or whole numbers), so
    a table of another schema is refused by the column's name, never read
    with its values cast."""
    kind = table_format(path)
    try:
        if kind == "csv":
            columns, rows = _read_csv(path)
        else:
            columns, rows = _read_parquet(path)
    except OSError as exc:
        raise TableError(f"cannot read the table {path}: {exc.strerror}") from None
    except UnicodeDecodeError:  # a damaged Parquet file: Arrow checks UTF-8 only when a name or text is read
        raise TableError(f"{path}: a column name or text cell holds bytes that are not UTF-8: the table "
                         "is damaged; name another table, or remove it") from None
    return Table(columns, rows)


def _read_csv(path: str):
    from tilefoundry.text_input import csv_rows, utf8_text

    with open(path, "rb") as handle:
        text = utf8_text(handle.read(), path, TableError, remedy="a sweep table is UTF-8 text, as sweep "
                                                                 "writes it")
    lines = csv_rows(text, path, TableError, "the table was not written by tilefoundry sweep")
    header = next(lines, None)
    if header is None:
        raise TableError(f"{path} is empty: no sweep table (its header names selection, "
                         "target, topology, status)")
    columns = header[1]
    _check_columns(path, columns)
    rows = []
    for number, line in lines:
        if len(line) != len(columns):
            raise TableError(f"{path}:{number}: {len(line)} cells under {len(columns)} columns; "
                             "the table was not written by tilefoundry sweep")
        rows.append({c: _cell(path, number, c, v) for c, v in zip(columns, line)})
    return columns, rows


def _read_parquet(path: str):
    pyarrow, parquet = _pyarrow()
    try:
        data = parquet.read_table(path)
    except pyarrow.ArrowException as exc:
        raise TableError(f"{path} is no Parquet table: {' '.join(str(exc).split())[:200]}") from None
    columns = list(data.column_names)
    _check_columns(path, columns)
    for name, kind in zip(columns, data.schema.types):
        wanted = pyarrow.string() if name in TEXT_COLUMNS else pyarrow.int64()
        if kind != wanted:
            holds = "text (string)" if name in TEXT_COLUMNS else "whole numbers (int64)"
            raise TableError(f"{path}: column {name} is {kind}, where a sweep table's {name} holds "
                             f"{holds}: the table was not written by tilefoundry sweep; name another "
                             "table, or remove it")
    try:
        return columns, data.to_pylist()
    except pyarrow.ArrowException as exc:
        raise TableError(f"{path} is no Parquet table: {' '.join(str(exc).split())[:200]}") from None


def _is_figure(column: str) -> bool:
    return column in _HEAD or any(column.startswith(g) and len(column) > len(g) for g in _GROUPS)


def _check_columns(path: str, columns: list[str]) -> None:
    if columns[:3] != ["selection", "target", "topology"] or "status" not in columns:
        raise TableError(f"{path} is not a sweep table: its columns begin {', '.join(columns[:4])}, "
                         "not selection, target, topology (then the dims and status)")
    if len(set(columns)) != len(columns):
        raise TableError(f"{path} names a column twice: not a sweep table")
    status = columns.index("status")
    dim = next((c for c in columns[3:status] if not (c.isascii() and c.isidentifier())), None)
    if dim is not None:
        raise TableError(f"{path}: column '{dim}' stands where the dims do, but no dim is named so (a "
                         "dim is a Python identifier): not a sweep table")
    extra = next((c for c in columns[status + 1:] if not _is_figure(c)), None)
    if extra is not None:
        raise TableError(f"{path}: column '{extra}' is no figure a sweep writes ({', '.join(_HEAD)}, "
                         f"{', '.join(g + '*' for g in _GROUPS)}): the table was not written by "
                         "tilefoundry sweep; name another table, or remove it")


def _cell(path: str, number: int, column: str, text: str):
    if text == "":
        return None
    if column in TEXT_COLUMNS:
        return text
    try:
        return int(text)
    except ValueError:
        raise TableError(f"{path}:{number}: column {column} holds '{text}', not a whole number") from None


class Writer:
    """Rewrites the table as rows arrive, spaced: at most once per
    ``interval`` seconds, and never more often than ten times the last write
    took, so rewriting stays under a tenth of the run."""

    def __init__(self, path: str, interval: float = 2.0):
        self.path = path
        self.interval = interval
        self.last = None  # when the last write ended
        self.took = 0.0
        self.writes = 0

    def due(self) -> bool:
        if self.last is None:
            return True
        return time.monotonic() - self.last >= max(self.interval, 10 * self.took)

    def write(self, table: Table) -> None:
        start = time.monotonic()
        with _sigint_held():
            write_table(self.path, table)
        self.last = time.monotonic()
        self.took = self.last - start
        self.writes += 1


class _sigint_held:
    """Ctrl-C waits until the write in progress ends (then interrupts): a
    rename is never left half done."""

    def __enter__(self):
        import signal
        import threading

        self.held = False
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            self.held = True
        return self

    def __exit__(self, *exc):
        if self.held:
            import signal

            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return False
