"""Everything a user can see, written down so that two versions can be compared.

A refactoring must change nothing a user sees. This script runs the
`tilefoundry` command in process over every input the repository ships and
writes each case's exit code, stdout, stderr and written files to one text file
per case:

- the golden programs (tests/data/programs): the typed program, the families of
  the manifest as text, JSON and CSV, the views (--top, --trace, --html), every
  refusal of the manifest, and every invalid program;
- the collectives programs (tests/data/collectives): --collectives, text and JSON;
- the inter-tile examples: `intertile verify` and `intertile run`, text and JSON;
- the model zoo: every selection of `tilefoundry models`, typed and with the four
  families, text and JSON, on its own target;
- the bench inputs: bench/programs, and `tilefoundry pack` on the small MiniMalloc
  cases (the large ones are settled by a time limit, so their answer is the
  machine's, not the code's);
- the listings: `--help` of every command, `models`, `target list`, `target show`.

    python tools/output_snapshot.py write DIR            # this checkout's outputs
    python tools/output_snapshot.py write DIR --rev REV  # those of a git revision
    python tools/output_snapshot.py compare DIR_A DIR_B  # exit 1 on any difference
    python tools/output_snapshot.py against REV          # both, then compare

`--rev` and `against` check REV out in a temporary git worktree and run this
script there with that tree's sources first on the path, so the old version runs
unchanged.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tilefoundry

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "data" / "programs"
COLLECTIVES = ROOT / "tests" / "data" / "collectives"
INTERTILE = ROOT / "tests" / "data" / "intertile" / "examples"
BENCH = ROOT / "bench"
#: MiniMalloc cases small enough to settle well inside the default time limit
PACK_CASES = ("A", "B", "C", "F", "G", "H", "I", "J")
FAMILIES = ["--compute-cost", "--memory", "--roofline", "--performance"]


def _cases() -> list[tuple[str, Path, list[str], list[str]]]:
    """(name, working directory, argv, names of files the command writes)."""
    cases = []
    manifest = json.loads((PROGRAMS / "expected" / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["valid"]:
        dims = [a for k, v in entry["dims"].items() for a in ("--dim", f"{k}={v}")]
        source = f"{entry['source']}:{entry['selector']}"
        ran = [f"--{family}" for family in entry["families_ran"]]
        stem = entry["stem"]
        cases.append((f"golden/{stem}.typed", PROGRAMS, ["analyze", *dims, source], []))
        cases.append((f"golden/{stem}.txt", PROGRAMS, ["analyze", *ran, *dims, source], []))
        cases.append((f"golden/{stem}.json", PROGRAMS, ["analyze", *ran, "--json", *dims, source], []))
        cases.append((f"golden/{stem}.csv", PROGRAMS, ["analyze", *ran, "--csv", "--target", "nvidia.h200_sxm",
                                                       "--target", "nvidia.b200_sxm", *dims, source], []))
        cases.append((f"golden/{stem}.operands", PROGRAMS,
                      ["analyze", *ran, "--json", "--operands", *dims, source], []))
        if ran:
            cases.append((f"golden/{stem}.top", PROGRAMS, ["analyze", *ran, "--top", "5", *dims, source], []))
        if "--performance" in ran:
            cases.append((f"golden/{stem}.trace", PROGRAMS,
                          ["analyze", *ran, "--trace", "{out}/trace.json", *dims, source], ["trace.json"]))
            cases.append((f"golden/{stem}.html", PROGRAMS,
                          ["analyze", *ran, "--html", "{out}/page.html", *dims, source], ["page.html"]))
        for number, refusal in enumerate(entry["refusals"]):
            asked = [f"--{family}" for family in refusal["families"]]
            cases.append((f"golden/{stem}.refusal{number}", PROGRAMS, ["analyze", *asked, *dims, source], []))
    for entry in manifest["invalid"]:
        argv = entry["command"].split()[1:]
        cases.append((f"invalid/{Path(entry['source']).stem}", PROGRAMS, argv, []))
    for path in sorted(COLLECTIVES.glob("*.py")):
        cases.append((f"collectives/{path.stem}.txt", COLLECTIVES, ["analyze", "--collectives", path.name], []))
        cases.append((f"collectives/{path.stem}.json", COLLECTIVES,
                      ["analyze", "--collectives", "--json", path.name], []))
    for path in sorted(INTERTILE.glob("*.mlir")):
        for verb in ("verify", "run"):
            cases.append((f"intertile/{path.stem}.{verb}", INTERTILE, ["intertile", verb, path.name], []))
            cases.append((f"intertile/{path.stem}.{verb}.json", INTERTILE,
                          ["intertile", verb, "--json", path.name], []))
    for path in sorted((BENCH / "programs").glob("*.py")):
        cases.append((f"bench/{path.stem}.txt", path.parent, ["analyze", *FAMILIES, path.name], []))
        cases.append((f"bench/{path.stem}.json", path.parent, ["analyze", *FAMILIES, "--json", path.name], []))
    for case in PACK_CASES:
        (path,) = sorted((BENCH / "data" / "minimalloc").glob(f"{case}.*.csv"))
        capacity = path.name.split(".")[1]
        cases.append((f"pack/{case}.json", path.parent,
                      ["pack", path.name, "--capacity", capacity, "--json"], []))
    cases.extend(_listing_cases())
    return cases


def _listing_cases() -> list:
    cases = [("listing/help", ROOT, ["--help"], []),
             ("listing/models", ROOT, ["models"], []),
             ("listing/models.json", ROOT, ["models", "--json"], []),
             ("listing/target-list", ROOT, ["target", "list"], [])]
    for command in ("analyze", "pack", "models", "target", "intertile", "relayout"):
        cases.append((f"listing/help-{command}", ROOT, [command, "--help"], []))
    for target in ("nvidia.h200_sxm", "nvidia.b200_sxm"):
        cases.append((f"listing/target-{target}", ROOT, ["target", "show", target], []))
    return cases


def _zoo_cases(run) -> list:
    code, out, _ = run(["models", "--json"], ROOT)
    if code != 0:
        return []
    cases = []
    for model in json.loads(out):
        source = Path(model["source"])
        for selection in model["selections"]:
            name = f"zoo/{selection['selector']}"
            argv = [*selection["dims"], f"{source.name}:{selection['selector']}"]
            cwd = source.parent
            cases.append((f"{name}.typed", cwd, ["analyze", *argv], []))
            cases.append((f"{name}.txt", cwd, ["analyze", *FAMILIES, *argv], []))
            cases.append((f"{name}.json", cwd, ["analyze", *FAMILIES, "--json", *argv], []))
    return cases


def _runner():
    from tilefoundry.cli.main import main

    def run(argv: list[str], cwd: Path) -> tuple[int, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        here = os.getcwd()
        os.chdir(cwd)
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(argv)
        finally:
            os.chdir(here)
        return code, stdout.getvalue(), stderr.getvalue()

    return run


def _scrub(text: str) -> str:
    """Paths of this checkout differ between two worktrees: name them alike."""
    return text.replace(str(ROOT), "<repo>")


def write(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    run = _runner()
    cases = _cases()
    cases.extend(_zoo_cases(run))
    with tempfile.TemporaryDirectory() as scratch:
        for name, cwd, argv, written in cases:
            argv = [a.replace("{out}", scratch) for a in argv]
            code, out, err = run(argv, cwd)
            parts = [f"$ tilefoundry {' '.join(argv).replace(scratch, '<out>')}", f"exit {code}",
                     "--- stdout", out, "--- stderr", err]
            for file_name in written:
                path = Path(scratch) / file_name
                parts += [f"--- {file_name}", path.read_text(encoding="utf-8") if path.exists() else "<absent>"]
                path.unlink(missing_ok=True)
            target = directory / f"{name}.out"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_scrub("\n".join(parts)), encoding="utf-8")
    print(f"{len(cases)} cases written to {directory} by {_scrub(str(Path(tilefoundry.__file__).parent))}")
    return 0


#: figures that are the machine's, not the program's (a packing's seconds)
_VOLATILE = re.compile(r'"seconds": [0-9.e+-]+')


def _normalised(path: Path) -> str:
    return _VOLATILE.sub('"seconds": <t>', path.read_text(encoding="utf-8"))


def compare(first: Path, second: Path) -> int:
    names_a = {p.relative_to(first) for p in first.rglob("*.out")}
    names_b = {p.relative_to(second) for p in second.rglob("*.out")}
    differing = sorted(n for n in names_a & names_b if _normalised(first / n) != _normalised(second / n))
    only = sorted(names_a ^ names_b)
    for name in differing:
        print(f"differs: {name}")
    for name in only:
        print(f"only in {'first' if name in names_a else 'second'}: {name}")
    print(f"{len(names_a & names_b)} cases compared, {len(differing)} differ, {len(only)} unpaired")
    return 1 if differing or only else 0


def write_revision(directory: Path, revision: str) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],
                       check=True, capture_output=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            # this script, run from the other tree, reads that tree's inputs
            script = tree / "tools" / "output_snapshot.py"
            script.parent.mkdir(exist_ok=True)
            script.write_text(Path(__file__).read_text(encoding="utf-8"), encoding="utf-8")
            done = subprocess.run([sys.executable, str(script), "write", str(directory.resolve())],
                                  env=env, check=False)
            return done.returncode
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    writing = verbs.add_parser("write")
    writing.add_argument("directory", type=Path)
    writing.add_argument("--rev")
    comparing = verbs.add_parser("compare")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    against = verbs.add_parser("against")
    against.add_argument("revision")
    args = parser.parse_args(argv)
    if args.verb == "write":
        return write_revision(args.directory, args.rev) if args.rev else write(args.directory)
    if args.verb == "compare":
        return compare(args.first, args.second)
    with tempfile.TemporaryDirectory() as scratch:
        before, after = Path(scratch) / "before", Path(scratch) / "after"
        if write_revision(before, args.revision) or write(after):
            return 2
        return compare(before, after)


if __name__ == "__main__":
    sys.exit(main())
