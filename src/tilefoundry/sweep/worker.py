"""What a sweep worker runs: a batch of points of one selection, in the
worker's process, through the Python API (``tilefoundry.api.figures``).

A worker process loads each program once (``dsl.loader.selection_loader``,
kept for the process's life, keyed by the file's path and digest) and
analyses every point of each batch it is given against it. A local pool's
workers and a Dask cluster's run this same function, so a row does not
depend on where it ran. One batch runs at a time per process: the analysis
keeps process-wide memos that are not made for threads, so a Dask worker with
several threads still analyses one point at a time (start workers with
``--nthreads 1`` and one process per core).
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass

__all__ = ["Batch", "BatchResult", "SweepWorkerError", "die_with", "ignore_interrupts", "load_batch", "run_batch"]

_LOCK = threading.Lock()
_LOADERS: dict = {}  # (path, digest) -> selector -> (module, function)
_DIGESTS: dict = {}  # path -> sha256 of the bytes this process read
_TARGETS: dict = {}  # identity -> Target
_LOADERS_KEPT = 32  # programs a worker keeps loaded at once (least recently used leave)


@dataclass(frozen=True)
class Batch:
    """Points of one selection. ``points``: (target, topology, dims) each,
    dims ((name, extent), ...); ``fixed`` the selection's own bindings, which
    a point's dims override."""

    index: int
    selection: str
    path: str  # the program as the client reads it
    zoo: str | None  # a zoo model's name: each worker reads its own installed copy
    selector: str | None
    digest: str
    version: str
    fixed: tuple
    families: object
    dim_names: tuple
    points: tuple


@dataclass(frozen=True)
class BatchResult:
    index: int
    rows: tuple  # one dict per point, in the batch's order
    seconds: float  # time spent in this batch, on the worker
    worker: str  # host:pid that ran it
    cpu: float = 0.0  # of it, CPU time of the thread that ran it (less: it waited for a core)


class SweepWorkerError(Exception):
    """A worker cannot run the batch as the client planned it (another
    program, another version of tilefoundry): the sweep stops, since its rows
    would not be the space's. Plain Exception, so that it pickles anywhere."""


def ignore_interrupts(parent: int | None = None) -> None:
    """A local worker's initializer: Ctrl-C is the client's to handle (it
    writes what has finished, then stops the workers), analyses print no
    warnings (stderr is the progress bar's), and the worker dies with its
    client ``parent`` (``die_with``)."""
    import signal
    import warnings

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.environ.get("TILEFOUNDRY_DEBUG") != "1":
        warnings.simplefilter("ignore")
    if parent is not None:
        die_with(parent)


#: prctl(2)'s option that sends a signal to a process when its parent dies
PR_SET_PDEATHSIG = 1
#: how often a worker without prctl looks whether its parent is alive
WATCH_SECONDS = 0.5


def die_with(parent: int) -> None:
    """End this process when ``parent`` does, however it ends (SIGTERM,
    SIGKILL): a worker left behind would keep running batches nobody reads,
    holding the client's stdout open so a pipeline never sees its end. On
    Linux the kernel sends SIGKILL at the parent's death (prctl
    PR_SET_PDEATHSIG); elsewhere a daemon thread watches the parent's pid.
    A parent already gone when this runs is caught by the pid check."""
    import signal
    import sys

    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch, args=(parent,), name="tilefoundry-parent-watch", daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)  # no cleanup to run: the client writes the table, never a worker


def _digest(path: str) -> str:
    if path not in _DIGESTS:
        try:
            with open(path, "rb") as handle:
                _DIGESTS[path] = hashlib.sha256(handle.read()).hexdigest()
        except OSError as exc:
            raise SweepWorkerError(f"worker {_where()} cannot read {path}: {exc.strerror}; every worker "
                                   "reads the space's programs at the paths the client does (a shared "
                                   "folder)") from None
    return _DIGESTS[path]


def _where() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def _local_path(batch: Batch) -> str:
    """Where this worker reads the batch's program: a zoo model from its own
    installed package (the same bytes, the digest says), a file where the
    client named it."""
    if batch.zoo is None:
        return batch.path
    from tilefoundry.models import model_named

    return str(model_named(batch.zoo).source)


def _loader(batch: Batch):
    from tilefoundry import __version__
    from tilefoundry.dsl.loader import selection_loader

    if batch.version != __version__:
        raise SweepWorkerError(f"worker {_where()} runs tilefoundry {__version__}, the client "
                               f"{batch.version}: install one version everywhere")
    path = _local_path(batch)
    if _digest(path) != batch.digest:
        raise SweepWorkerError(f"worker {_where()} reads other bytes at {path} than the client "
                               f"did at {batch.path}; every worker must see the same program")
    key = (path, batch.digest)
    load = _LOADERS.pop(key, None) or selection_loader(path)
    _LOADERS[key] = load  # most recently used last
    while len(_LOADERS) > _LOADERS_KEPT:
        _LOADERS.pop(next(iter(_LOADERS)))
    return load


def load_batch(batch: Batch) -> None:
    """Load the batch's program into this process's cache (a dry run's
    estimate times the analyses alone); a program that fails to load is left
    for the batch's rows to say."""
    try:
        _loader(batch)(batch.selector)
    except Exception:  # noqa: BLE001 -- the rows state it
        pass


def _target(identity: str | None):
    if identity is None:
        return None
    if identity not in _TARGETS:
        from tilefoundry.target.catalog import resolve_identity

        _TARGETS[identity] = resolve_identity(identity)
    return _TARGETS[identity]


def _refusal(exc: BaseException) -> str:
    from tilefoundry.errors import TileFoundryError, one_line

    if isinstance(exc, TileFoundryError):
        return one_line(str(exc))
    if isinstance(exc, (RecursionError, MemoryError)):
        return (f"the input is too large or too deeply nested for this process ({type(exc).__name__}); "
                "keep the TILEFOUNDRY_MAX_* limits at their defaults (README, Limits) or split the input")
    return f"internal error: {type(exc).__name__}: {one_line(str(exc))}"


def run_batch(batch: Batch) -> BatchResult:
    """Every point of ``batch``: a row each, ``ok`` with its figures or the
    refusal's one line (a refused point never stops the batch)."""
    import warnings

    with _LOCK, warnings.catch_warnings():
        if os.environ.get("TILEFOUNDRY_DEBUG") != "1":
            warnings.simplefilter("ignore")
        start, cpu = time.perf_counter(), time.thread_time()
        rows = _rows(batch)
        return BatchResult(batch.index, tuple(rows), time.perf_counter() - start, _where(),
                           time.thread_time() - cpu)


def _rows(batch: Batch) -> list[dict]:
    from tilefoundry.api import figures
    from tilefoundry.sweep.table import figure_cells

    load = _loader(batch)
    local = _local_path(batch)

    def refusal(exc: BaseException) -> str:
        # a refusal names the program where the client reads it, wherever it ran
        from tilefoundry.text_input import CSV_CELL

        line = _refusal(exc)
        line = line.replace(local, batch.path) if local != batch.path else line
        # a status is a cell the table's reader takes back (one limit for every CSV cell)
        return line if len(line) <= CSV_CELL else line[:CSV_CELL - 3] + "..."

    try:
        module, function = load(batch.selector)
        failed = None
    except Exception as exc:  # noqa: BLE001 -- a program that fails to load: each point's row says so
        failed = refusal(exc)
    rows = []
    for target, topology, dims in batch.points:
        bound = dict(dims)
        row = {"selection": batch.selection, "target": target, "topology": topology,
               **{name: bound.get(name) for name in batch.dim_names}}
        if failed is not None:
            row["status"] = failed
            rows.append(row)
            continue
        try:
            found = figures((module, function), dims={**dict(batch.fixed), **bound} or None,
                            families=batch.families, target=_target(target), topology=topology)
        except Exception as exc:  # noqa: BLE001 -- a refused point is a row, never a crash of the sweep
            row["status"] = refusal(exc)
        else:
            row["status"] = "ok"
            row.update(figure_cells(found))
        rows.append(row)
    return rows
