"""Issue 22, the classes the new fuzz campaigns (tests/fuzz/campaigns22.py)
found, each reproduced from the golden input the campaign mutated:

- ``run``/``check`` of a loop of 2**64 trips ran forever: the statements an
  outermost loop evaluates are counted against TILEFOUNDRY_MAX_EVAL_STATEMENTS
  before its first trip (and ``check``'s rounding depths count its trips
  exactly: len() of that range was an OverflowError);
- a path holding a NUL (``--plot``, ``--output``, an input file) was an
  internal ValueError;
- a report written to a full device was an internal OSError;
- ``pack --time-limit inf`` (or nan) was taken as a limit;
- a zoo file's ``LAYERS = 10**30`` bound layer names until memory ran out:
  TILEFOUNDRY_MAX_CHILDREN bounds what a class body attaches, and the loader
  no longer sets aside a statement stopped by a non-Exception (the time
  guard's alarm), which had let the load run on past it.
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


LOOP_AFTER_A_PREFIX = """
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class M:
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        with Mesh(("cta",), (1,), ("c",)) as _m:
            y = x
{prefix}            acc = tf.zeros(Tensor[(4, 8), "f32"])
            for i in range(3):
                acc = acc + y
            return acc
"""


def test_a_loop_counts_its_own_trips_not_the_program_before_it(tmp_path, capsys, monkeypatch):
    """The yields of a loop reach everything before it; only what reads the
    loop is evaluated per trip: 3 trips of one statement are 3, however long
    the program before the loop (here 200 statements)."""
    monkeypatch.chdir(tmp_path)
    prefix = "".join("            y = y * 0.5 + x\n" for _ in range(200))
    (tmp_path / "late.py").write_text(LOOP_AFTER_A_PREFIX.format(prefix=prefix))
    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_STATEMENTS", "3")
    assert main(["run", "late.py"]) == 0, capsys.readouterr().err
    monkeypatch.setenv("TILEFOUNDRY_MAX_EVAL_STATEMENTS", "2")
    assert "loop 'i' runs 3 trips, 3 statements in all (limit 2" in one_line(capsys, ["run", "late.py"])


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


P09 = REPO / "tests" / "data" / "programs" / "p09_predicates_special.py"


@pytest.mark.parametrize("command", [["analyze"], ["run"], ["check", "--placed"]])
def test_an_integer_literal_past_i64_is_refused_where_it_is_written(tmp_path, capsys, monkeypatch,
                                                                    command):
    """p09 multiplies an i64 index by PAGE_STRIDE; at 10**30 the literal cannot
    be the i64 an integer next to tensors is (numpy's OverflowError in run and
    check, a silently unrepresentable constant in analyze)."""
    monkeypatch.chdir(tmp_path)
    text = P09.read_text()
    assert "PAGE_STRIDE = 256\n" in text
    (tmp_path / "p.py").write_text(text.replace("PAGE_STRIDE = 256\n", "PAGE_STRIDE = 10**30\n"))
    line_no = next(i for i, line in enumerate(text.splitlines(), 1) if "* PAGE_STRIDE" in line)
    line = one_line(capsys, [*command, "p.py"])
    assert f"p.py:{line_no}:" in line and "the integer 100000000000... (31 digits) does not fit i64" in line
    assert main([*command, str(P09)]) == 0  # the golden value is one


def test_a_context_of_zero_where_the_range_declares_it_analyses(tmp_path, capsys, monkeypatch):
    """phi3's ctx_len declared from 0 (not BLOCK) and bound to 0: the KV loop
    is empty, and memory asked isl for the minimum of a parameter no
    reaching map names (move_dims at position -1: a TypeError)."""
    monkeypatch.chdir(tmp_path)
    text = (REPO / "src" / "tilefoundry" / "models" / "phi3_mini.py").read_text()
    declared = 'CTX_LEN = DimVar("ctx_len", BLOCK, MAX_POS + 1)'
    assert declared in text
    (tmp_path / "phi3.py").write_text(text.replace(declared, 'CTX_LEN = DimVar("ctx_len", 0, MAX_POS + 1)'))
    assert main(["analyze", "--performance", "--dim", "ctx_len=0", "phi3.py:Phi3Mini.layer0"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "# performance root=layer0::decoder_layer predicted-ns=" in out


@pytest.mark.parametrize("layers", ["10**30", "2**31", "4097"])
def test_a_zoo_layer_count_past_the_children_limit_is_refused_at_its_line(tmp_path, capsys, monkeypatch,
                                                                           layers):
    """mamba2's LAYERS = 10**30 (semantic seed 2048): attach_layers bound names
    until memory ran out (the CI worker died); the count is refused before one
    layer is bound, at the class body's line, naming TILEFOUNDRY_MAX_CHILDREN."""
    monkeypatch.chdir(tmp_path)
    text = (REPO / "src" / "tilefoundry" / "models" / "mamba2_2_7b.py").read_text()
    assert "LAYERS = 64\n" in text
    (tmp_path / "m.py").write_text(text.replace("LAYERS = 64\n", f"LAYERS = {layers}\n"))
    line_no = next(k for k, line in enumerate(text.splitlines(), start=1)
                   if "attach_layers(locals(), layer, LAYERS)" in line)
    line = one_line(capsys, ["analyze", "--all", "m.py:Mamba2_2_7B_H200.layer0.in_proj"])
    assert line.startswith(f"tilefoundry: error: m.py:{line_no}:")
    assert f"{eval(layers):,} layers attached to one root (limit 4,096 child modules" in line  # noqa: S307
    assert "TILEFOUNDRY_MAX_CHILDREN=N" in line


def test_a_class_body_past_the_children_limit_is_refused_before_a_copy(tmp_path, capsys, monkeypatch):
    """Attaching is copying: a class body holding more children than the limit
    is refused before the first child is copied."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TILEFOUNDRY_MAX_CHILDREN", "3")
    (tmp_path / "wide.py").write_text('''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f")
class Leaf:
    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class Wide:
    a = Leaf
    b = Leaf
    c = Leaf
    d = Leaf

    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x
''')
    line = one_line(capsys, ["analyze", "--compute-cost", "wide.py:Wide"])
    assert "Module 'Wide' attaches 4 child modules (limit 3 child modules of one Module)" in line
    monkeypatch.setenv("TILEFOUNDRY_MAX_CHILDREN", "4")
    assert main(["analyze", "--compute-cost", "wide.py:Wide"]) == 0


def test_a_stopped_statement_is_never_set_aside(tmp_path):
    """A statement stopped by something other than an Exception (a caller's
    time guard, KeyboardInterrupt) ends the load: the statements after it, which
    may loop as long, never run (the fuzz time guard's one alarm was set aside
    and the load ran on past it)."""
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import TileFoundryError

    class Stop(BaseException):
        pass

    (tmp_path / "stops.py").write_text('''\
import builtins
from tilefoundry import module
from tilefoundry.dsl import *

raise builtins.STOP()
builtins.REACHED = True


@module(entry="f")
class A:
    @func
    def f(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x
''')
    import builtins

    builtins.STOP, builtins.REACHED = Stop, False
    try:
        with pytest.raises(TileFoundryError, match=r"stops.py:5:1: Stop"):
            load_selection(f"{tmp_path / 'stops.py'}:A")
        assert builtins.REACHED is False
    finally:
        del builtins.STOP, builtins.REACHED
