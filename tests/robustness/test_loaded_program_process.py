"""Issue 22 item 12: what a loaded program writes to stderr is the program's,
not the report's (a refusal stays one line), and a non-daemon thread it starts
does not keep the command alive after the report."""
from __future__ import annotations

import subprocess
import sys
import time

PROGRAM = '''
import sys, threading, time
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

print("loading...", file=sys.stderr)
threading.Thread(target=lambda: time.sleep(60)).start()


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class T:
    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            return x + x
'''


def _run(tmp_path, *argv):
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tilefoundry", *argv, f"{source}:T"],
                          capture_output=True, text=True, timeout=50)
    return done, time.perf_counter() - started


def test_a_refusal_stays_one_line_and_the_command_exits(tmp_path):
    done, seconds = _run(tmp_path, "analyze", "--topology", "nowhere", "--compute-cost")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "loading" not in done.stderr
    assert seconds < 40  # the program's 60 s thread did not hold the process


def test_a_report_is_printed_and_the_command_exits(tmp_path):
    done, seconds = _run(tmp_path, "analyze", "--compute-cost")
    assert done.returncode == 0 and done.stderr == ""
    assert "compute-cost flops=f32:4@4" in done.stdout
    assert seconds < 40
