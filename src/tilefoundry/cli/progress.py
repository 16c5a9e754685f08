"""A progress bar for long commands (`analyze`, `check --placed`): on a
terminal a tqdm bar on stderr names the stage running and the time spent
(refreshed twice a second, so a stage of minutes still shows it is alive);
anywhere else (a pipe, a file, a test) nothing at all (issue 40 item 4).
"""
from __future__ import annotations

import contextlib
import sys
import threading

__all__ = ["stages"]

_REFRESH_S = 0.5


class _Silent:
    def __call__(self, name: str, done: int = 0, total: int | None = None) -> None:
        return None


@contextlib.contextmanager
def stages(what: str, stream=None):
    """Yield ``step(name, done, total)``: the work says which stage it starts
    (``done`` of ``total`` finished). Silent unless ``stream`` (stderr) is a
    terminal; the bar is gone from the terminal when the block ends."""
    stream = sys.stderr if stream is None else stream
    if stream is None or not getattr(stream, "isatty", lambda: False)():
        yield _Silent()
        return
    from tqdm import tqdm

    bar = tqdm(desc=what, file=stream, leave=False, total=None,
               bar_format="{desc} [{elapsed}]")
    lock = threading.Lock()
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(_REFRESH_S):
            with lock:
                bar.refresh()

    ticker = threading.Thread(target=refresh, name="tilefoundry-progress", daemon=True)
    ticker.start()

    def step(name: str, done: int = 0, total: int | None = None) -> None:
        with lock:
            shown = f"{name} ({done + 1}/{total})" if total else name
            bar.set_description_str(f"{what}: {shown}", refresh=True)

    try:
        yield step
    finally:
        stop.set()
        ticker.join()
        bar.close()
