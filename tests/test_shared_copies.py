"""The in-repository copies of the golden material (tests/data/programs,
tests/data/intertile, bench/data/minimalloc) equal shared/ wherever shared/ is
beside the clone; tools/sync_shared.py refreshes them. Without shared/ (a clone on
its own) there is nothing to compare with, and the test holds the clone to what
makes it self-contained instead: every copy is there, with files in it."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import load_tool

REPO = Path(__file__).resolve().parents[1]


def _sync_tool():
    return load_tool("sync_shared")


def test_copies_equal_shared():
    tool = _sync_tool()
    if tool.SHARED.is_dir():
        assert tool.differences() == [], "run: python tools/sync_shared.py"
    else:
        empty = [d for d in tool.COPIES.values() if not tool.files_under(REPO / d)]
        assert empty == [], "the in-repo copies are missing: run tools/sync_shared.py beside shared/"


def test_sync_reports_a_changed_file(tmp_path):
    tool = _sync_tool()
    shared, repo = tmp_path / "shared", tmp_path / "repo"
    for source, destination in tool.COPIES.items():
        (shared / source).mkdir(parents=True)
        (shared / source / "a.txt").write_text("one")
    tool.sync(shared, repo)
    assert tool.differences(shared, repo) == []
    first_destination = next(iter(tool.COPIES.values()))
    (repo / first_destination / "a.txt").write_text("two")
    (repo / first_destination / "b.txt").write_text("new")
    assert tool.differences(shared, repo) == [f"extra: {first_destination}/b.txt",
                                              f"differs: {first_destination}/a.txt"]
