"""Running a sweep: the points not yet in the table, in batches of one
selection each, on a backend; the table rewritten as batches finish.

- Batches: a selection's points in runs of at most ``BATCH_MOST`` (fewer when
  the space is small, so that every worker gets several): a worker loads the
  program once per batch's selection and keeps it for the next.
- Resume: the points whose key is already a row of the table are skipped; a
  row the space does not name is refused (the table is another space's).
- Interrupt: on Ctrl-C the pool stops and the table is written with every
  row that finished (``Interrupted`` says how many); ``--resume`` runs the
  rest, and the finished table is the one an uninterrupted run writes.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from tilefoundry.sweep.backends import SweepError
from tilefoundry.sweep.table import Table, Writer, order_columns, read_table

__all__ = ["BATCH_MOST", "Interrupted", "Outcome", "estimate", "pending", "plan", "run_sweep"]

#: the most points one batch holds
BATCH_MOST = 16


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep, after the table was written with what finished."""

    def __init__(self, written: int, total: int, table: str):
        super().__init__(f"interrupted: {written:,} of {total:,} points are in {table}; run the same "
                         "command with --resume to finish the space")
        self.written = written
        self.total = total
        self.table = table


@dataclass(frozen=True)
class Outcome:
    """What a run did: ``table`` the rows in the space's order."""

    table: Table
    path: str
    points: int  # the space's
    already: int  # rows the table held before (--resume)
    ran: int  # points analysed by this run
    seconds: float  # wall time of this run's analyses (planning excluded)
    busy: float  # worker time spent in batches
    backend: str  # what ran them, in words
    workers: int
    cpu: float = 0.0  # of ``busy``, CPU time (on a shared machine, less than busy)

    @property
    def ok(self) -> int:
        return sum(1 for row in self.table.rows if row.get("status") == "ok")


def plan(space, points: list, workers: int) -> list:
    """``points`` as batches of one selection each, in the space's order."""
    from tilefoundry import __version__
    from tilefoundry.sweep.worker import Batch

    size = max(1, min(BATCH_MOST, -(-len(points) // max(1, 4 * workers))))
    batches: list = []
    run: list = []

    def close():
        if run:
            selection = run[0].selection
            batches.append(Batch(len(batches), selection.name, selection.path, selection.zoo,
                                 selection.selector,
                                 selection.digest, __version__, selection.fixed, space.families,
                                 space.dim_names,
                                 tuple((p.target, p.topology, p.dims) for p in run)))
            run.clear()

    for point in points:
        if run and (run[0].selection is not point.selection or len(run) == size):
            close()
        run.append(point)
    close()
    return batches


def _resumed(space, path: str, resume: bool, order: dict) -> dict:
    """key -> row of the table already on disk (only with ``resume``)."""
    if not os.path.exists(path):
        return {}
    if not resume:
        raise SweepError(f"{path} exists: give --resume to run only the points it lacks, or remove it "
                         "(or name another table with --output)")
    table = read_table(path)
    dims = space.dim_names
    if table.dims != dims:
        raise SweepError(f"{path} has the dims {', '.join(table.dims) or 'none'}, this space "
                         f"{', '.join(dims) or 'none'}: the table is another space's; name another "
                         "table, or remove it")
    found: dict = {}
    for row in table.rows:
        key = table.key(row)
        if key not in order:
            raise SweepError(f"{path} holds a row this space does not name ({_shown(key, dims)}): the "
                             "table is another space's; name another table, or remove it")
        found.setdefault(key, row)
    return found


def pending(space, path: str, resume: bool) -> list:
    """The points a run would analyse: all of them, or with ``resume`` those
    the table at ``path`` lacks (checked as the run checks it)."""
    points = list(space.points())
    if not resume or not os.path.exists(path):
        return points
    order = {point.key(space.dim_names): index for index, point in enumerate(points)}
    done = _resumed(space, path, resume, order)
    return [point for point in points if point.key(space.dim_names) not in done]


def estimate(space, points: list, samples: int = 5) -> tuple[float, int]:
    """(seconds an analysis takes a point, how many were timed): ``samples``
    points spread over ``points`` analysed here, each program loaded first
    (a worker loads it once for many points) and one more point analysed
    before them, untimed, to warm this process's imports."""
    from tilefoundry.sweep.worker import load_batch, run_batch

    if not points:
        return 0.0, 0
    count = min(len(points), samples + 1)
    chosen = sorted({round(i * (len(points) - 1) / max(1, count - 1)) for i in range(count)})
    batches = [plan(space, [points[index]], 1)[0] for index in chosen]
    run_batch(batches[0])
    timed = batches[1:] or batches
    for batch in timed:
        load_batch(batch)
    seconds = [run_batch(batch).seconds for batch in timed]
    return sum(seconds) / len(seconds), len(seconds)


def _shown(key: tuple, dims: tuple) -> str:
    parts = [f"selection={key[0]}"]
    parts += [f"{name}={value}" for name, value in zip(("target", "topology") + dims, key[1:])
              if value is not None]
    return " ".join(parts)


def _backend(space, todo: list, jobs: int | None, scheduler: str | None):
    """(backend, batches): a Dask cluster's batches are sized by its workers."""
    from tilefoundry.sweep.backends import DaskCluster, LocalPool, default_jobs

    if scheduler is not None:
        cluster = DaskCluster(scheduler)
        return cluster, plan(space, todo, cluster.workers)
    wanted = jobs or default_jobs()
    batches = plan(space, todo, wanted)
    return LocalPool(max(1, min(wanted, len(batches)))), batches


def _progress(total: int, initial: int, shown: bool):
    if not shown or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, file=sys.stderr, unit="point", desc="sweep",
                dynamic_ncols=True, smoothing=0.05, leave=False)


def run_sweep(space, path: str, *, jobs: int | None = None, scheduler: str | None = None,
              resume: bool = False, progress: bool = True, on_batch=None) -> Outcome:
    """Run every point of ``space`` that the table at ``path`` lacks and
    write the table. ``jobs``: local worker processes (default: the cores);
    ``scheduler``: a Dask scheduler's address instead. ``on_batch(rows so
    far, total)`` is called after each batch is taken in (a test's hook)."""
    points = list(space.points())
    dim_names = space.dim_names
    order = {point.key(dim_names): index for index, point in enumerate(points)}
    rows = _resumed(space, path, resume, order)
    already = len(rows)
    todo = [point for point in points if point.key(dim_names) not in rows]
    seen: dict = {}
    for row in rows.values():
        seen.update((c, None) for c, v in row.items() if v is not None)
    writer = Writer(path)

    def table() -> Table:
        ordered = sorted(rows.values(), key=lambda row: order[_key(row, dim_names)])
        return Table(order_columns(dim_names, seen), ordered)

    start = time.perf_counter()
    busy = cpu = 0.0
    backend = bar = None
    workers, describe = 0, "no worker (nothing to run)"
    try:
        if todo:
            backend, batches = _backend(space, todo, jobs, scheduler)
            workers, describe = backend.workers, backend.describe()
            bar = _progress(len(points), already, progress)
            for result in backend.run(batches):
                busy += result.seconds
                cpu += result.cpu
                fresh = 0
                for row in result.rows:
                    key = _key(row, dim_names)
                    if key in rows:  # a batch run twice (a worker died after sending it)
                        continue
                    rows[key] = row
                    seen.update((c, None) for c, v in row.items() if v is not None)
                    fresh += 1
                if bar is not None:
                    bar.update(fresh)
                if writer.due():
                    writer.write(table())
                if on_batch is not None:
                    on_batch(len(rows), len(points))
    except BaseException as exc:
        # whatever stops the run (Ctrl-C, a backend that failed), every row
        # that finished is written first; a run with no row to keep (a
        # scheduler that does not answer, workers that cannot start) writes
        # no table at all, so that the same command can simply be run again
        # (a header alone would be refused as "exists")
        _finish(backend, bar)
        backend = bar = None
        if rows:
            writer.write(table())
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            raise Interrupted(len(rows), len(points), path) from None
        raise
    finally:
        _finish(backend, bar)
    writer.write(table())
    return Outcome(table(), path, len(points), already, len(rows) - already,
                   time.perf_counter() - start, busy, describe, workers, cpu)


def _finish(backend, bar) -> None:
    if bar is not None:
        bar.close()
    if backend is not None:
        backend.close()


def _key(row: dict, dim_names: tuple) -> tuple:
    return (row.get("selection"), row.get("target"), row.get("topology")) + \
        tuple(row.get(name) for name in dim_names)
