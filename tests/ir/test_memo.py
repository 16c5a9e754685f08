"""ir.memo.memoised: the one memo rule every structural cache follows."""
from tilefoundry.ir.memo import memoised


def test_an_answer_is_computed_once_per_key():
    calls = []
    cache: dict = {}
    for _ in range(3):
        assert memoised(cache, ("k", 1), lambda: calls.append(1) or "v") == "v"
    assert calls == [1] and cache == {("k", 1): "v"}


def test_a_falsy_answer_is_kept_too():
    calls = []
    cache: dict = {}
    for _ in range(2):
        assert memoised(cache, "k", lambda: calls.append(1) or None) is None
    assert calls == [1]


def test_an_unhashable_key_is_answered_afresh_and_not_kept():
    cache: dict = {}
    assert memoised(cache, ("k", [1]), lambda: 7) == 7
    assert cache == {}


def test_a_full_cache_is_emptied_before_it_takes_another():
    cache = {k: k for k in range(4)}
    assert memoised(cache, 9, lambda: "nine", limit=4) == "nine"
    assert cache == {9: "nine"}
    assert memoised(cache, 9, lambda: "other", limit=4) == "nine"
