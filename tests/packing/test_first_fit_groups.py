"""packing.greedy.first_fit places a buffer at the lowest address where it
meets no placed buffer live at the same time, largest first. It finds the
buffers beside one by time slot (short lifetimes) or by a numpy pass over
all placed (long or empty ones, the only pass that imports numpy); these
tests hold both against a brute-force first fit."""
import random
from types import SimpleNamespace

import pytest

from tests.fresh_process import assert_passes_fresh
from tilefoundry.packing import greedy


def _brute_first_fit(buffers, capacity):
    order = sorted(range(len(buffers)),
                   key=lambda k: (-buffers[k].size, buffers[k].start - buffers[k].end, buffers[k].start))
    offsets, placed = [0] * len(buffers), []
    for k in order:
        b = buffers[k]
        if b.size == 0:
            break
        beside = [(at, top) for at, top, s, e in placed if s < b.end and e > b.start]
        candidates = sorted({0, *(top for _, top in beside)})
        at = next(a for a in candidates
                  if all(a + b.size <= lo or a >= hi for lo, hi in beside))
        if at + b.size > capacity:
            return None
        placed.append((at, at + b.size, b.start, b.end))
        offsets[k] = at
    return offsets


def _instance(seed: int, n: int, spread: int, shortest: int = 1):
    rng = random.Random(seed)
    buffers = []
    for _ in range(n):
        start = rng.randrange(spread)
        buffers.append(SimpleNamespace(start=start, end=start + rng.randrange(shortest, 12),
                                       size=rng.choice([0, 1, 8, 64, 100, rng.randrange(1, 500)])))
    return buffers


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("spread", [10, 400])
def test_first_fit_equals_brute_force(seed, spread, monkeypatch):
    buffers = _instance(seed, 160, spread)
    expected = _brute_first_fit(buffers, 10**9)
    assert greedy.first_fit(buffers, 10**9) == expected
    assert greedy._Slotted.made(*_arrays(buffers)) is not None  # the slotted pass ran
    monkeypatch.setattr(greedy._Slotted, "made", classmethod(lambda cls, *a: None))
    assert greedy.first_fit(buffers, 10**9) == expected  # the numpy pass


def _arrays(buffers):
    return tuple([getattr(b, f) for b in buffers] for f in ("start", "end", "size"))


@pytest.mark.parametrize("seed", range(4))
def test_first_fit_empty_lifetimes_meet_what_spans_them(seed):
    # an empty lifetime with bytes meets every buffer live across its instant,
    # which no time slot holds: the numpy pass places it
    buffers = _instance(seed, 120, 30, shortest=0)
    assert any(b.start == b.end and b.size for b in buffers)
    assert greedy._Slotted.made(*_arrays(buffers)) is None
    assert greedy.first_fit(buffers, 10**9) == _brute_first_fit(buffers, 10**9)


def test_first_fit_long_lifetimes_take_the_numpy_pass():
    # 100 buffers across all 200 instants: filing them costs more than a pass
    buffers = [SimpleNamespace(start=0, end=2000, size=8) for _ in range(100)]
    buffers += [SimpleNamespace(start=10 * i, end=10 * i + 1, size=4) for i in range(100)]
    assert greedy._Slotted.made(*_arrays(buffers)) is None
    assert greedy.first_fit(buffers, 10**9) == _brute_first_fit(buffers, 10**9)


def test_first_fit_groups_apart_stack_at_zero():
    # three buffers one after another share address 0; two live together stack
    buffers = [SimpleNamespace(start=s, end=e, size=z)
               for s, e, z in [(0, 2, 10), (2, 4, 20), (4, 6, 30), (4, 5, 5)]]
    assert greedy.first_fit(buffers, 100) == [0, 0, 0, 30]
    assert greedy.first_fit(buffers, 34) is None


def test_first_fit_refuses_when_capacity_too_small():
    buffers = _instance(3, 80, 10)
    fits = _brute_first_fit(buffers, 10**9)
    peak = max(at + b.size for at, b in zip(fits, buffers))
    assert greedy.first_fit(buffers, peak) == fits
    assert greedy.first_fit(buffers, peak - 1) is None


def test_first_fit_by_slot_does_not_import_numpy():
    # numpy's import is about 0.1 s of a whole model's answer; only the
    # numpy pass may pay it
    code = (
        "import sys\n"
        "from types import SimpleNamespace as B\n"
        "from tilefoundry.packing import greedy\n"
        "buffers = [B(start=k, end=k + 2, size=64) for k in range(50)]\n"
        "assert greedy.first_fit(buffers, 1 << 20) == [0, 64] * 25\n"
        "assert 'numpy' not in sys.modules, 'numpy imported'\n"
    )
    assert_passes_fresh(code)
