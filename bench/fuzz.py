"""The long hostile-input campaign of issues 11, 22 and 41: thousands of mutated DSL
programs, KTIR files, relayout tables, command lines, buffer CSVs, output
paths, environment settings and semantically mutated golden programs and zoo
files, and (issue 41) damaged hardware documents (the estimate's target
facts), `diff` command lines, damaged checkpoint directories and `place` runs
(tests/fuzz/campaigns41.py), each judged against the promise (exit 0, or exit
1/2 with one clean stderr line; no traceback, internal error, hang or memory
blow-up) and, where a campaign states them, its silent kinds (a damaged
hardware document accepted with a negative constant or a fact without a
source). Prints,
per campaign, how many cases were accepted, cleanly refused, or failed (by
kind, with the first seed of each kind to reproduce it).

    PYTHONPATH=src python3 bench/fuzz.py --per-campaign 5000 --budget 36000
    PYTHONPATH=src python3 bench/fuzz.py --campaign pack --per-campaign 1000 --seed 4000
    PYTHONPATH=src python3 bench/fuzz.py --campaign targets --campaign diff --campaign checkpoints \
        --campaign place --per-campaign 2500 --budget 3600

The process's address space is capped (``--memory-gb``) so that a blow-up is
a MemoryError of this process, never the machine's.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.fuzz.campaign

from tests.fuzz.campaign import CAMPAIGNS, run_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000, help="total cases, shared evenly")
    parser.add_argument("--per-campaign", type=int, default=None,
                        help="cases of each campaign (instead of --cases shared evenly)")
    parser.add_argument("--memory-gb", type=float, default=10.0,
                        help="address-space cap of this process (GiB)")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds for the whole run")
    parser.add_argument("--seed", type=int, default=0, help="first seed of every campaign")
    parser.add_argument("--campaign", choices=sorted(CAMPAIGNS), action="append",
                        help="run only these campaigns (repeatable)")
    args = parser.parse_args()
    campaigns = args.campaign or sorted(CAMPAIGNS)
    per = args.per_campaign or -(-args.cases // len(campaigns))
    cap = int(args.memory_gb * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    deadline = time.monotonic() + args.budget
    failures = 0
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in campaigns:
            work = Path(tmp) / name
            work.mkdir()
            counts, first_seed = Counter(), {}
            start = time.monotonic()
            share = (deadline - start) / (len(campaigns) - campaigns.index(name))
            for seed in range(args.seed, args.seed + per):
                if time.monotonic() - start > share:
                    break
                verdict = run_case(name, seed, work)
                key = verdict.outcome if verdict.outcome != "failure" else f"failure: {verdict.kind}"
                counts[key] += 1
                first_seed.setdefault(key, (seed, verdict.detail))
            ran = sum(counts.values())
            total += ran
            failed = sum(n for k, n in counts.items() if k.startswith("failure"))
            failures += failed
            print(f"{name:<11} cases={ran} accepted={counts['accepted']} refused={counts['refused']} "
                  f"failures={failed} seconds={time.monotonic() - start:.0f}", flush=True)
            for key in sorted(k for k in counts if k.startswith("failure")):
                seed, detail = first_seed[key]
                print(f"    {key}: {counts[key]} (first seed {seed}: {detail})")
    print(f"total cases={total} failures={failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
