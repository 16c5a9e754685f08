"""Copy what the tests and benchmarks read from the steering folder ``shared/``
(beside the repository) into the repository, so a clone stands on its own.

    python tools/sync_shared.py            # copy (replace the in-repo copies)
    python tools/sync_shared.py --check    # exit 1 and list differences, copy nothing

The copies are plain files under version control; rerun this script whenever
``shared/`` changes and commit the result. ``tests/test_shared_copies.py``
checks that the copies equal ``shared/`` wherever it is present.
"""
from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# shared/<source> -> repository <destination>
COPIES = {
    "programs": "tests/data/programs",
    "intertile": "tests/data/intertile",
    "bench/minimalloc": "bench/data/minimalloc",
}
IGNORED = {"__pycache__", ".pytest_cache"}


def files_under(root: Path) -> set[Path]:
    """Relative paths of every file below ``root``, caches left out."""
    if not root.is_dir():
        return set()
    return {path.relative_to(root) for path in root.rglob("*")
            if path.is_file() and not IGNORED.intersection(path.parts)}


def differences(shared: Path = SHARED, repo: Path = REPO) -> list[str]:
    """One line per file that is missing, extra or different in a copy."""
    found = []
    for source, destination in COPIES.items():
        theirs, ours = shared / source, repo / destination
        want, have = files_under(theirs), files_under(ours)
        found += [f"missing: {destination}/{p}" for p in sorted(want - have)]
        found += [f"extra: {destination}/{p}" for p in sorted(have - want)]
        found += [f"differs: {destination}/{p}" for p in sorted(want & have)
                  if not filecmp.cmp(theirs / p, ours / p, shallow=False)]
    return found


def sync(shared: Path = SHARED, repo: Path = REPO) -> None:
    for source, destination in COPIES.items():
        target = repo / destination
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(shared / source, target,
                        ignore=shutil.ignore_patterns(*IGNORED))
        for path in target.rglob("*"):  # shared/ is read-only; copies must stay editable
            path.chmod(0o755 if path.is_dir() else 0o644)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    opts = parser.parse_args(argv)
    if not SHARED.is_dir():
        print(f"sync_shared: no shared/ folder beside the repository ({SHARED.name}/ expected "
              "next to the clone)", file=sys.stderr)
        return 1
    if opts.check:
        found = differences()
        print("\n".join(found) if found else "copies equal shared/")
        return 1 if found else 0
    sync()
    print(f"copied {', '.join(COPIES)} from shared/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
