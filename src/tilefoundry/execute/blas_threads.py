"""One BLAS thread while a run's numpy arithmetic runs (``check``, ``run``).

Why: the products of a run (a layer's GEMVs, the bound rules' products of
magnitudes) are small or memory-bound, and OpenBLAS, numpy's BLAS, hands each
to all its threads, which spin while they wait for one another. On a machine
whose cores are shared with other work a waiting thread is descheduled and
its peers spin on: the same placed DeepSeek-V3 decoder-layer check took 14.6 s
of wall time on one thread and 39.7 s on two (CPU time 14 s against 28 s) on
2 cores with another job running, which is where check's run-to-run variance
came from (docs/execution.md "Bounds", speed). A product's sum may be split
otherwise on one thread than on two, so a last bit may differ; the derived
bound holds for any order of a sum (gamma_n bounds every order), so no verdict
depends on the thread count.

The thread count is set through the OpenBLAS library numpy has loaded (found
in the process's own map of loaded libraries) and restored afterwards; where
there is none (another BLAS, no ``/proc``), nothing is changed.
"""
from __future__ import annotations

import contextlib
import ctypes
import os

__all__ = ["one_blas_thread", "blas_threads"]

#: (getter, setter) symbol pairs OpenBLAS builds export: numpy's wheels bundle
#: scipy-openblas (64-bit integers, prefixed), a system OpenBLAS has the plain names
_SYMBOLS = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
            ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
            ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
            ("openblas_get_num_threads", "openblas_set_num_threads"))

_found: list | None = None


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries this process has loaded (Linux: /proc/self/maps)."""
    import numpy  # noqa: F401  (loads numpy's BLAS first)

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths = {line.split(None, 5)[-1] for line in lines if len(line.split(None, 5)) == 6}
    return sorted(p for p in paths if "openblas" in os.path.basename(p).lower() and os.path.isfile(p))


def _controls() -> list:
    """(get, set) ctypes functions of each loaded OpenBLAS, found once."""
    global _found
    if _found is None:
        _found = []
        for path in _loaded_openblas():
            try:
                library = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
            except OSError:
                continue
            for get_name, set_name in _SYMBOLS:
                get, set_ = getattr(library, get_name, None), getattr(library, set_name, None)
                if get is not None and set_ is not None:
                    get.restype, get.argtypes = ctypes.c_int, []
                    set_.restype, set_.argtypes = None, [ctypes.c_int]
                    _found.append((get, set_))
                    break
    return _found


def blas_threads() -> list[int]:
    """The thread count of each loaded OpenBLAS (empty where none is found)."""
    return [get() for get, _ in _controls()]


@contextlib.contextmanager
def one_blas_thread():
    """Within: every loaded OpenBLAS on one thread; after: as it was."""
    controls = _controls()
    before = [get() for get, _ in controls]
    for _, set_ in controls:
        set_(1)
    try:
        yield
    finally:
        for (_, set_), count in zip(controls, before):
            set_(count)
