"""Where a sweep's batches run: local worker processes (``--jobs N``), or the
workers of a Dask distributed cluster (``--scheduler ADDRESS``, the optional
``cluster`` extra). Both run ``worker.run_batch`` and hand back each
``BatchResult`` as it finishes; a worker that dies takes no row with it, since
its unfinished batches are run again elsewhere (the client keeps the first
row of each point, so a batch run twice adds nothing twice).
"""
from __future__ import annotations

import os

from tilefoundry.errors import TileFoundryError

__all__ = ["CLUSTER_HINT", "DaskCluster", "LocalPool", "SweepError"]

CLUSTER_HINT = "pip install 'tilefoundry[cluster]' (dask[distributed] and pyarrow)"
#: how often a local pool is restarted after a worker died, before the sweep stops
LOCAL_RESTARTS = 3
#: seconds --scheduler waits to reach the scheduler
CONNECT_TIMEOUT = 20.0


class SweepError(TileFoundryError):
    """A sweep cannot go on: its backend failed, not a point (exit 1)."""


def _worker_failure(exc: BaseException) -> SweepError:
    from tilefoundry.sweep.worker import SweepWorkerError

    if isinstance(exc, SweepWorkerError):
        return SweepError(str(exc))
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("tilefoundry"):
        return SweepError(f"a worker cannot import {exc.name}: install tilefoundry on every worker "
                          "(the version the client runs)")
    return SweepError(f"a worker failed a batch: {type(exc).__name__}: {exc}")


class LocalPool:
    """``jobs`` worker processes on this machine (spawned: each imports
    tilefoundry once and keeps the programs it loaded)."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.pool = None
        self.futures: dict = {}

    @property
    def workers(self) -> int:
        return self.jobs

    def describe(self) -> str:
        return f"{self.jobs} local worker{'s' if self.jobs != 1 else ''}"

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from tilefoundry.sweep.worker import ignore_interrupts

        # each worker dies with this process (worker.die_with), whatever kills it
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=ignore_interrupts, initargs=(os.getpid(),))

    def run(self, batches):
        """Each batch's result as it finishes. A dead worker breaks the
        pool: it is started again and every batch without a result is
        submitted again (up to LOCAL_RESTARTS times)."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        from tilefoundry.sweep.worker import run_batch

        pending = {batch.index: batch for batch in batches}
        restarts = 0
        while pending:
            self._start()
            self.futures = {self.pool.submit(run_batch, batch): index for index, batch in pending.items()}
            broken = False
            while self.futures and not broken:
                done, _ = wait(self.futures, return_when=FIRST_COMPLETED)
                for future in done:
                    index = self.futures.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    except Exception as exc:  # noqa: BLE001 -- the batch could not run at all
                        raise _worker_failure(exc) from None
                    pending.pop(index, None)
                    yield result
            self._stop()
            if broken and pending:
                restarts += 1
                if restarts > LOCAL_RESTARTS:
                    raise SweepError(f"local workers died {restarts} times ({len(pending)} batches "
                                     "unfinished; the first holds points of "
                                     f"{next(iter(pending.values())).selection}); the table keeps "
                                     "every finished row: --resume after fixing the cause")

    def _stop(self):
        if self.pool is None:
            return
        for future in self.futures:
            future.cancel()
        # a running batch is not waited for: its worker is ended (its rows were not written)
        processes = getattr(self.pool, "_processes", None) or {}
        for process in list(processes.values()):
            try:
                process.terminate()
            except (OSError, AttributeError):
                pass
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None
        self.futures = {}

    def close(self):
        self._stop()


class DaskCluster:
    """The workers of the Dask scheduler at ``address``: each batch is one
    task (a dead worker's tasks are run again by the scheduler)."""

    def __init__(self, address: str):
        try:
            import distributed
        except ImportError:
            raise SweepError(f"--scheduler needs dask.distributed: {CLUSTER_HINT}") from None
        self.distributed = distributed
        self.address = address
        try:
            self.client = distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except Exception as exc:  # noqa: BLE001 -- each comm scheme fails in its own way (TypeError for
            # tls:// without certificates, for ucx:// without ucx-py): all are one refusal
            raise SweepError(f"--scheduler {address}: cannot reach the Dask scheduler "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
                             f"{_scheme_hint(address, exc)}") from None
        self.futures: list = []
        import uuid

        self.run_id = uuid.uuid4().hex[:12]

    @property
    def workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def describe(self) -> str:
        count = len(self.client.scheduler_info().get("workers", {}))
        return f"{count} Dask worker{'s' if count != 1 else ''} at {self.address}"

    def run(self, batches):
        from concurrent.futures import CancelledError

        from tilefoundry.sweep.worker import run_batch

        batches = list(batches)
        self.futures = [self.client.submit(run_batch, batch, pure=False,
                                           key=f"tilefoundry-sweep-{self.run_id}-{batch.index}")
                        for batch in batches]
        for future in self.distributed.as_completed(self.futures, loop=self.client.loop):
            try:
                result = future.result()
            except CancelledError as exc:
                raise SweepError(f"the Dask scheduler cancelled a batch ({exc or 'no reason given'}); "
                                 "the table keeps every finished row: --resume") from None
            except Exception as exc:  # noqa: BLE001 -- KilledWorker, a worker that cannot import us...
                if type(exc).__name__ == "KilledWorker":
                    raise SweepError(f"Dask workers died running one batch again and again ({exc}); the "
                                     "table keeps every finished row: --resume after fixing the "
                                     "cause") from None
                raise _worker_failure(exc) from None
            future.release()
            yield result

    def close(self):
        try:
            if self.futures:
                self.client.cancel(self.futures)
        finally:
            self.futures = []
            self.client.close()


def _scheme_hint(address: str, exc: Exception) -> str:
    """What a scheme that needs more than an address needs, said after the
    refusal (not where the scheme's own setup went through and nothing answered)."""
    scheme = address.partition("://")[0].lower() if "://" in address else "tcp"
    if isinstance(exc, OSError):
        return ""
    if scheme in ("tls", "wss"):
        return ("; a tls:// or wss:// scheduler needs Dask's TLS settings (distributed.comm.tls: ca-file "
                "and the client's cert and key, in the Dask config or DASK_DISTRIBUTED__COMM__TLS__*)")
    if scheme == "ucx":
        return "; a ucx:// scheduler needs UCX's Python bindings (distributed-ucxx) on this machine"
    if scheme == "inproc":
        return "; inproc:// reaches a scheduler of this same process only: give tcp://HOST:PORT"
    return ""


def default_jobs() -> int:
    return os.cpu_count() or 1
