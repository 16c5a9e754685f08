"""Issue 22, the classes the new fuzz campaigns (tests/fuzz/campaigns22.py)
found, each reproduced from the golden input the campaign mutated:

- ``run``/``check`` of a loop of 2**64 trips ran forever: the statements an
  outermost loop evaluates are counted against TILEFOUNDRY_MAX_EVAL_STATEMENTS
  before its first trip (and ``check``'s rounding depths count its trips
  exactly: len() of that range was an OverflowError);
- a path holding a NUL (``--plot``, ``--output``, an input file) was an
  internal ValueError;
- a report written to a full device was an internal OSError;
- ``pack --time-limit inf`` (or nan) was taken as a limit.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilefoundry.cli.main import main

REPO = Path(__file__).resolve().parents[2]
P22 = REPO / "tests" / "data" / "programs" / "p22_broadcast_placement.py"
CSV = REPO / "bench" / "data" / "minimalloc" / "input.12.csv"


def one_line(capsys, argv, code=1) -> str:
    got = main([str(a) for a in argv])
    err = capsys.readouterr().err.splitlines()
    assert got == code and len(err) == 1, err
    assert "internal error" not in err[0]
    return err[0]


@pytest.fixture()
def carry(tmp_path, monkeypatch):
    """p22's ReplicatedCarry with ``TRIPS = n``."""
    monkeypatch.chdir(tmp_path)

    def program(trips: str) -> str:
        text = P22.read_text()
        assert "TRIPS = 4\n" in text
        (tmp_path / "carry.py").write_text(text.replace("TRIPS = 4\n", f"TRIPS = {trips}\n"))
        return "carry.py:ReplicatedCarry"
    return program


@pytest.mark.parametrize("command", [["run"], ["check", "--placed"]])
def test_a_loop_of_2_64_trips_is_refused_before_its_first_trip(carry, capsys, command):
    line = one_line(capsys, [*command, carry("2**64")])
    assert f"loop 'step' runs {2 ** 64:,} trips" in line, line
    assert "statements evaluated by one execution); raise the limit with " \
           "TILEFOUNDRY_MAX_EVAL_STATEMENTS=N" in line, line


def test_the_statement_limit_is_the_one_in_force(carry, capsys, monkeypatch):
    source = carry("4")
    assert main(["run", source]) == 0
    capsys.readouterr()
    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_STATEMENTS", "3")  # 4 trips of a body are more
    assert "limit 3 statements" in one_line(capsys, ["run", source])


CHAIN = """
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 2),))
class Chain:
    @func
    def f(x: Tensor[(8, 64), "f32"]) -> Tensor[(8, 16), "f32"]:
        with Mesh(("cta",), (2,), ("u",)) as _all:
            y = x
            for step in range(1000):
                y = y * 0.5 + x
            acc = tf.zeros(Tensor[(8, 16), "f32"])
            for kk in tile(64, 16):
                acc = acc + y[:, kk]
            return acc
"""


def test_a_loop_counts_its_own_trips_not_what_it_reads(tmp_path, capsys, monkeypatch):
    """The second loop's 4 trips read `y`, the result of a 1000-trip loop that runs
    once before it. A loop's work is its trips times the body statements that
    change per trip (the first: the carried `y`, the mul and the add, 3; the second
    about as many), so the run stays near 3 * 1000; counting everything a trip
    reads made the second loop 4 * (3000 + ...) and refused a 3,100 limit."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chain.py").write_text(CHAIN)
    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_STATEMENTS", "3100")
    assert main(["run", "chain.py:Chain"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_STATEMENTS", "2999")  # the first loop alone is 3000
    assert "loop 'step' runs 1,000 trips, 3,000 statements in all" in one_line(capsys, ["run", "chain.py:Chain"])


def test_a_path_holding_nul_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.csv").write_text(CSV.read_text())
    assert "a path cannot hold a NUL" in one_line(
        capsys, ["pack", "b.csv", "--capacity", "12", "--plot", "p\0.svg"])
    assert "a path cannot hold a NUL" in one_line(capsys, ["pack", "b\0.csv", "--capacity", "12"])


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs a full device")
def test_a_report_to_a_full_device_is_one_line():
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "tilefoundry", "pack", str(CSV), "--capacity", "12"],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["tilefoundry: error: cannot write the report to standard "
                                        "output: No space left on device; redirect it to a file "
                                        "that can be written"]


@pytest.mark.parametrize("seconds", ["inf", "nan", "0", "-1"])
def test_pack_time_limit_is_a_positive_finite_number(tmp_path, capsys, monkeypatch, seconds):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.csv").write_text(CSV.read_text())
    line = one_line(capsys, ["pack", "b.csv", "--capacity", "12", "--time-limit", seconds], code=2)
    assert "is not a positive, finite number of seconds" in line
