"""The hostile-input campaigns of issues 11 and 22, shared by the CI fuzz tests
(tests/fuzz/test_fuzz_promise.py, hypothesis) and the long run (bench/fuzz.py).

A case is (campaign, seed): the seed drives a ``random.Random`` that mutates a
golden input (a DSL program of tests/data/programs or a zoo file, a KTIR file of
tests/data/intertile, a relayout table, a buffer CSV) or builds a command line,
output paths or environment settings, so every case reproduces from its seed
alone. ``judge`` runs the CLI's ``main()`` in process under a time guard and says
whether the promise held: exit 0 (accepted), or exit 1/2 with exactly one
stderr line that is no internal error (a clean refusal); anything else (a
traceback, an internal error, a hang, a memory blow-up) is a failure, named by
its kind. The campaigns of issue 22 (pack, outputs, env, semantic) live in
``tests.fuzz.campaigns22``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import signal
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "data" / "programs"
INTERTILE = REPO / "tests" / "data" / "intertile"
# the programs analysed fast enough for thousands of cases (the others are no
# different in what the loader and checker meet)
DSL_SEEDS = ("p01_rownorm_mesh.py", "p02_dense_bias_gelu.py", "p07_multi_result.py",
             "p11_seq_variants.py", "p16_standalone_sliced_mesh.py", "p08_shape_ops.py")
HOSTILE_TEXT = ("\0", "\udcff", "\f", "\u2028", "\t", "\r", "\\", "#", "(", ")", "[", "]",
                ":", ",", "@", "-", "0", "-1", "8.0", "True", "None", "10**30", "'",
                "\"\"\"", "raise SystemExit(3)", "raise KeyboardInterrupt", "import sys")
HOSTILE_NUMBERS = ("0", "-1", "-6", "1", "8.0", "True", "False", "None", "10**12",
                   "4611686018427387904", "2**63", "1_0")
_POWER_TOWER = re.compile(r"\*\*\s*[\w.]+\s*\*\*")
HOSTILE_JSON = (True, False, None, 0, -1, 1.5, 10 ** 12, "x", "1_0", [], {}, [1], [0, 1, 2],
                [0, 0], {"a": 1}, [0, True])


@dataclass(frozen=True)
class Verdict:
    outcome: str  # "accepted" | "refused" | "failure"
    kind: str = ""  # the failure's kind, or ""
    detail: str = ""


#: a case whose run lifts the process's peak resident memory past this is a blow-up
MEMORY_BLOWUP_BYTES = 2 << 30


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


@dataclass(frozen=True)
class Case:
    """One command line of a campaign, with the environment it runs under."""

    argv: list
    env: dict = field(default_factory=dict)  # variable -> value (None: unset)
    setup: object = None  # a callable returning a context manager the run is judged inside, or None
    note: str = ""  # what the case did to its input, for the silent kinds' judges and the report


@contextlib.contextmanager
def _environment(env: dict):
    saved = {name: os.environ.get(name) for name in env}
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _Overtime(BaseException):
    """Raised by the time guard; a BaseException so that no handler of ours eats it."""


@contextlib.contextmanager
def _time_guard(seconds: float):
    fired = []

    def alarm(signum, frame):
        fired.append(True)
        raise _Overtime()
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def judge(argv: list[str], cwd: Path, timeout: float = 20.0, env: dict | None = None) -> Verdict:
    """Run ``tilefoundry argv`` in process (under ``env``) and judge the promise."""
    from tilefoundry.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    code = None
    peak = _peak_rss()
    try:
        with _environment(env or {}), _time_guard(timeout) as fired, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except _Overtime:
                pass
            except BaseException as exc:  # noqa: BLE001 -- the promise says none escapes
                return Verdict("failure", f"escaped {type(exc).__name__}", str(exc)[:200])
    finally:
        os.chdir(here)
    if fired:
        return Verdict("failure", "hang", " ".join(argv)[:200])
    if peak <= MEMORY_BLOWUP_BYTES < _peak_rss():
        return Verdict("failure", "memory blow-up", " ".join(argv)[:200])
    lines = err.getvalue().splitlines()
    if code == 0:
        return Verdict("accepted")
    if code not in (1, 2):
        return Verdict("failure", f"exit {code}", err.getvalue()[:200])
    if "Traceback" in out.getvalue() + err.getvalue():
        return Verdict("failure", "traceback", (out.getvalue() + err.getvalue())[:200])
    if code == 1 and not lines and argv[:1] == ["intertile"] and out.getvalue():
        return Verdict("refused")  # rule violations are verify's report, on stdout
    if len(lines) != 1:
        return Verdict("failure", "stderr not one line", err.getvalue()[:200])
    if "internal error" in lines[0] or "Traceback" in lines[0]:
        kind = lines[0].split("internal error: ", 1)[-1].split(":", 1)[0]
        return Verdict("failure", f"internal {kind}", lines[0][:200])
    if "(MemoryError)" in lines[0] or "(RecursionError)" in lines[0]:
        # the last resort of main(): a limit let the input run out of memory or stack
        # (the line names a README section in parentheses after it: name the error itself)
        kind = re.search(r"\((MemoryError|RecursionError)\)", lines[0]).group(1)
        return Verdict("failure", kind, lines[0][:200])
    return Verdict("refused")


# ------------------------------------------------------------------ mutations

def mutate_text(text: str, rng: random.Random, numbers=HOSTILE_NUMBERS) -> str:
    """One to three edits of a source text: a character, a number, a line, or
    a deep nest inserted; each edit is one a hostile user makes by hand."""
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        k = rng.randrange(len(lines))
        pick = rng.randrange(7)
        if pick == 0:  # insert a hostile fragment
            pos = rng.randint(0, len(lines[k]))
            lines[k] = lines[k][:pos] + rng.choice(HOSTILE_TEXT) + lines[k][pos:]
        elif pick == 1 and lines[k]:  # delete a character
            pos = rng.randrange(len(lines[k]))
            lines[k] = lines[k][:pos] + lines[k][pos + 1:]
        elif pick == 2:  # replace a number (a whole one, and not an exponent: a
            # tower such as 10**12**63 is a program that hangs computing itself)
            digits = [i for i, ch in enumerate(lines[k]) if ch.isdigit()
                      and not (i and lines[k][i - 1].isdigit()) and not lines[k][:i].endswith("**")]
            if digits:
                pos = rng.choice(digits)
                end = pos
                while end < len(lines[k]) and lines[k][end].isdigit():
                    end += 1
                edited = lines[k][:pos] + rng.choice(numbers) + lines[k][end:]
                if not _POWER_TOWER.search(edited):  # 2**63 whose 2 became 10**12
                    lines[k] = edited
        elif pick == 3:  # duplicate a line
            lines.insert(k, lines[k])
        elif pick == 4:  # delete a line
            del lines[k]
        elif pick == 5:  # a deep nest
            depth = rng.choice((50, 300, 3000))
            nest = rng.choice(("-" * depth + "1", "(" * min(depth, 250) + "1" + ")" * min(depth, 250)))
            pos = rng.randint(0, len(lines[k]))
            lines[k] = lines[k][:pos] + nest + lines[k][pos:]
        else:  # swap two lines
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
        text = "\n".join(lines)
    return text


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def dsl_case(seed: int, work: Path) -> list[str]:
    rng = random.Random(seed)
    name = rng.choice(DSL_SEEDS)
    _write(work / f"m{seed}.py", mutate_text((PROGRAMS / name).read_text(), rng))
    selector = rng.choice(("", "", ":" + _root(name)))
    dims = ["--dim", "seq=96"] if name.startswith("p11") else []
    family = rng.choice(([], [], ["--compute-cost"], ["--memory"]))
    return ["analyze", *family, *dims, f"m{seed}.py{selector}"]


def _root(name: str) -> str:
    import re

    text = (PROGRAMS / name).read_text()
    found = re.search(r"^class (\w+)", text, re.M) or re.search(r"^def (\w+)", text, re.M)
    return found.group(1)


def ktir_case(seed: int, work: Path) -> list[str]:
    rng = random.Random(seed)
    files = sorted((INTERTILE / "examples").glob("*.mlir")) + sorted(
        (INTERTILE / "invalid").glob("*.mlir"))
    source = rng.choice(files)
    _write(work / f"k{seed}.mlir", mutate_text(source.read_text(), rng))
    tiles = rng.choice(([], [], ["--tiles", "1"], ["--tiles", str(rng.randint(1, 64))],
                        ["--tiles", "4611686018427387904"]))
    return ["intertile", rng.choice(("verify", "run")), *tiles, f"k{seed}.mlir"]


def _division_table(rng: random.Random) -> dict:
    from tilefoundry.intertile.tables import from_divisions  # noqa: F401 -- shape reference

    axes = rng.sample(["mb", "out", "h"], rng.randint(1, 2))
    src = {a: rng.choice((1, 2, 4)) for a in axes}
    dst = {a: rng.choice((1, 2, 4, 8)) for a in axes}
    cores = max(_prod(src.values()), _prod(dst.values()))

    def side(div):
        table = {}
        for k in range(_prod(div.values())):
            idx, rest = {}, k
            for a in reversed(axes):
                rest, idx[a] = divmod(rest, div[a])
            table[str(k)] = idx
        return table
    return {"cores": cores, "source": side(src), "destination": side(dst)}


def _box_table(rng: random.Random) -> dict:
    n = rng.choice((2, 4, 8))
    extent = n * rng.choice((1, 2, 3))
    step = extent // n
    regions = [{"box": {"a": [k * step, (k + 1) * step]}, "holders": [k]} for k in range(n)]
    half = extent // 2
    return {"cores": n, "tensor": {"a": extent}, "source_regions": regions,
            "destination_regions": [{"box": {"a": [0, half]}, "holders": [0]},
                                    {"box": {"a": [half, extent]}, "holders": [1]}]}


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _mutate_json(value, rng: random.Random):
    """Replace one leaf or member somewhere in ``value`` by a hostile JSON value."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value, key=str))
        if rng.random() < 0.3:
            return {**value, key: rng.choice(HOSTILE_JSON)}
        return {**value, key: _mutate_json(value[key], rng)}
    if isinstance(value, list) and value:
        k = rng.randrange(len(value))
        if rng.random() < 0.3:
            return value[:k] + [rng.choice(HOSTILE_JSON)] + value[k + 1:]
        return value[:k] + [_mutate_json(value[k], rng)] + value[k + 1:]
    return rng.choice(HOSTILE_JSON)


def table_case(seed: int, work: Path) -> list[str]:
    rng = random.Random(seed)
    table = rng.choice((_division_table, _box_table))(rng)
    if rng.random() < 0.85:
        table = _mutate_json(table, rng)
    text = json.dumps(table)
    if rng.random() < 0.15:
        text = mutate_text(text, rng, numbers=("0", "-1", "1e400", "true", "1.5", "99999999999"))
    _write(work / f"t{seed}.json", text)
    return ["relayout", "classify", *rng.choice(([], ["--json"])), f"t{seed}.json"]


WORDS = ("analyze", "target", "intertile", "relayout", "models", "verify", "run", "classify",
         "list", "show", "--json", "--tiles", "--dim", "--function", "--topology", "--output",
         "-o", "--example", "--memory", "--compute-cost", "--roofline", "--performance",
         "--help", "--version", "--", "-", "seq=96", "seq=", "=96", "4", "0", "-3", "1_0",
         "nvidia.h200_sxm", "cta", "@f", "missing.py", "p.py", "p.py:Nope", "k.mlir", "t.json",
         ".", "/dev/null", "", "\u0663", "--jsno", "--tile=2", "--dim=seq=96")


def cli_case(seed: int, work: Path) -> list[str]:
    rng = random.Random(seed)
    (work / "p.py").write_text((PROGRAMS / "p16_standalone_sliced_mesh.py").read_text())
    (work / "k.mlir").write_text((INTERTILE / "examples" / "e01_shared_sources_identical.mlir").read_text())
    (work / "t.json").write_text((REPO / "examples" / "relayout_s74.json").read_text())
    argv = [rng.choice(WORDS) for _ in range(rng.randint(0, 5))]
    return [a for a in argv if a not in ("--help", "--version")] if rng.random() < 0.9 else argv


CAMPAIGNS = {"dsl": dsl_case, "ktir": ktir_case, "tables": table_case, "cli": cli_case}


def _register_issue22() -> None:
    from tests.fuzz import campaigns22, campaigns41

    CAMPAIGNS.update(campaigns22.CAMPAIGNS)
    CAMPAIGNS.update(campaigns41.CAMPAIGNS)
    SILENT.update(campaigns41.SILENT)


#: campaign -> judge(case, verdict) of the silent kinds: a kind's name, or None
SILENT: dict = {}


_register_issue22()


def run_case(campaign: str, seed: int, work: Path, timeout: float = 20.0) -> Verdict:
    case = CAMPAIGNS[campaign](seed, work)
    if not isinstance(case, Case):
        case = Case(case)
    argv = case.argv
    if campaign == "cli" and ("--output" in argv or "-o" in argv):
        argv = [a if a not in ("/dev/null", ".") else "out.txt" for a in argv]  # stay in the folder
    with (case.setup() if case.setup is not None else contextlib.nullcontext()):
        verdict = judge(argv, work, timeout, case.env)
    silent = SILENT.get(campaign)
    kind = silent(case, verdict) if silent is not None else None
    if kind is not None:
        return Verdict("failure", kind, f"{case.note}: {' '.join(map(str, argv))}"[:200])
    if verdict.outcome == "failure" and case.note:
        return Verdict(verdict.outcome, verdict.kind, f"{case.note}: {verdict.detail}"[:300])
    return verdict
