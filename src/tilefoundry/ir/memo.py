"""One memo rule for answers keyed by value: a key that cannot be hashed (an
unhashable attribute somewhere inside a type or a record) is answered afresh,
never refused."""
from __future__ import annotations

__all__ = ["memoised"]

_MISSING = object()


def memoised(cache: dict, key, compute, limit: int | None = None):
    """``cache[key]``, from ``compute()`` on first use. With ``limit``, a full
    cache is emptied before it takes another answer, so no program grows it
    without end."""
    try:
        found = cache.get(key, _MISSING)
    except TypeError:
        return compute()
    if found is _MISSING:
        found = compute()
        if limit is not None and len(cache) >= limit:
            cache.clear()
        cache[key] = found
    return found
