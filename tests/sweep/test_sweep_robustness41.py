"""Issue 41 item 1: the sweep kinds of the third hostile-input campaign, one
test per class, each checking the one refusal line (or the right answer where
the kind was silent).

- a range of more than 2**63 values is counted without building it;
- a space nesting arrays past TILEFOUNDRY_MAX_NESTING is refused at the bracket;
- a table whose schema is not a sweep's (an extra column, another column type)
  is refused by the column's name, and a figure is never cast;
- one CSV reader, one cell limit (text_input.CSV_CELL) for tables and buffer files;
- every --scheduler scheme works or is `cannot reach the Dask scheduler (...)`;
- a run that never reached its backend leaves no table;
- the local workers die with their client, however it is killed.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tilefoundry.limits import limit
from tilefoundry.text_input import CSV_CELL

from .sweep_helpers import DATA, run_cli, space

SEQPOOL = 'selections = ["p11_seq_variants.py:SeqPool"]\n'


def _refusal(capsys, *argv) -> str:
    code, out, err = run_cli(capsys, *argv)
    assert code == 1 and err.count("\n") == 1, (code, out, err)
    assert err.startswith("tilefoundry: error: ") and "Traceback" not in err, err
    return err.strip().removeprefix("tilefoundry: error: ")


# ---------------------------------------------------------------- counting


def test_a_range_past_2_63_values_is_counted_not_built(tmp_path, capsys):
    stop = 2**64 + 1
    path = space(tmp_path, SEQPOOL + f"[dims]\nseq = {{start = 1, stop = {stop}}}\n")
    count = stop - 1
    assert _refusal(capsys, "sweep", "--dry-run", path) == (
        f"{path} asks for {count:,} points (1 selection x {count} seq values) (limit "
        f"{limit('SWEEP_POINTS'):,} points of one sweep); raise the limit with "
        "TILEFOUNDRY_MAX_SWEEP_POINTS=N if this input is meant")


def test_a_range_count_is_the_number_of_its_values():
    from tilefoundry.sweep.space import extent_count

    for start, stop, step in ((0, 10, 3), (5, 6, 1), (64, 1025, 64), (1, 2**70, 7)):
        expected = len(range(start, stop, step)) if stop < 2**62 else (stop - 1 - start) // step + 1
        assert extent_count(range(start, stop, step)) == expected


# ---------------------------------------------------------------- nesting


def test_a_space_nesting_past_the_limit_is_refused_at_its_bracket(tmp_path, capsys):
    depth = limit("NESTING") + 1
    line = "x = " + "[" * 600 + "]" * 600
    path = space(tmp_path, SEQPOOL + line + "\n")
    column = len("x = ") + depth  # the bracket that passes the limit
    assert _refusal(capsys, "sweep", "--dry-run", path) == (
        f"{path}:2:{column}: arrays and inline tables nest {depth} deep here (limit "
        f"{limit('NESTING')} levels of nesting); raise the limit with TILEFOUNDRY_MAX_NESTING=N if "
        "this input is meant")


def test_brackets_in_strings_and_comments_nest_nothing(tmp_path):
    from tilefoundry.sweep.space import load_space

    deep = "[" * (limit("NESTING") + 100)
    path = space(tmp_path, f"{SEQPOOL}  # {deep}\ntable = '{deep}.csv'\n[dims]\nseq = [96, 128]  # {deep}\n")
    loaded = load_space(str(path))
    assert list(loaded.dims["seq"]) == [96, 128] and loaded.table.endswith(f"{deep}.csv")


# ---------------------------------------------------------------- table schema


def _parquet(tmp_path, capsys, change) -> str:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = space(tmp_path, SEQPOOL + "[dims]\nseq = [96, 128]\n")
    table = tmp_path / "t.parquet"
    assert run_cli(capsys, "sweep", "-q", "-j", "1", "-o", table, path)[0] == 0
    pq.write_table(change(pa, pq.read_table(table)), table)
    return path, table


@pytest.mark.parametrize("flag", ["--resume", "--report"])
def test_a_table_of_another_schema_is_refused_by_the_column_name(tmp_path, capsys, flag):
    path, table = _parquet(tmp_path, capsys, lambda pa, t: t.append_column("extra", pa.array([1, 2])))
    argv = ("sweep", "--report", table) if flag == "--report" else ("sweep", "-q", "--resume", "-o",
                                                                     table, path)
    from tilefoundry.sweep.table import _GROUPS, _HEAD

    figures = ", ".join([*_HEAD, *(group + "*" for group in _GROUPS)])  # every figure column a sweep writes
    assert _refusal(capsys, *argv) == (
        f"{table}: column 'extra' is no figure a sweep writes ({figures}): the table was not written by "
        "tilefoundry sweep; name another table, or remove it")


def test_a_figure_of_another_type_is_refused_never_cast(tmp_path, capsys):
    def floats(pa, table):
        index = table.column_names.index("predicted-ns")
        return table.set_column(index, "predicted-ns", pa.array([1.5, 2.5]))

    path, table = _parquet(tmp_path, capsys, floats)
    before = table.read_bytes()
    assert _refusal(capsys, "sweep", "-q", "--resume", "-o", table, path) == (
        f"{table}: column predicted-ns is double, where a sweep table's predicted-ns holds whole numbers "
        "(int64): the table was not written by tilefoundry sweep; name another table, or remove it")
    assert table.read_bytes() == before  # 1.5 was not rewritten as 1


def test_writing_a_figure_that_is_no_integer_is_refused():
    pytest.importorskip("pyarrow")
    from tilefoundry.sweep.table import TableError, _parquet_table

    row = {"selection": "s", "target": None, "topology": None, "status": "ok", "predicted-ns": 1.5}
    with pytest.raises(TableError) as info:
        _parquet_table(["selection", "target", "topology", "status", "predicted-ns"], [row])
    assert str(info.value) == ("column predicted-ns holds 1.5 (float), where a sweep table's figures and "
                               "dims are whole numbers")


def test_a_damaged_parquet_table_of_bytes_that_are_not_utf8_is_refused(tmp_path, capsys):
    """The fuzz campaign's kind: a Parquet file whose column name lost its
    UTF-8 (one byte changed, lengths intact) is the table's refusal, not a
    UnicodeDecodeError from inside pyarrow."""
    pytest.importorskip("pyarrow")
    from tilefoundry.sweep.table import Table, write_table

    table = tmp_path / "t.parquet"
    row = {"selection": "s", "target": None, "topology": None, "status": "ok", "bound-by": "memory"}
    write_table(str(table), Table(["selection", "target", "topology", "status", "bound-by"], [row]))
    data = table.read_bytes()
    assert b"bound-by" in data
    table.write_bytes(data.replace(b"bound-by", b"bound\xffby"))
    assert _refusal(capsys, "sweep", "--report", table) == (
        f"{table}: a column name or text cell holds bytes that are not UTF-8: the table is damaged; name "
        "another table, or remove it")


# ---------------------------------------------------------------- one CSV reader


def test_one_csv_cell_limit_for_tables_and_buffer_files(tmp_path, capsys):
    cell = "a" * (CSV_CELL + 1)
    table = tmp_path / "t.csv"
    table.write_text(f"selection,target,topology,status\nx,,,\"{cell}\"\n")
    said = (f"a cell holds more than {CSV_CELL:,} characters (the most one CSV cell may hold)")
    assert _refusal(capsys, "sweep", "--report", table) == (
        f"{table}:2:1: {said}; the table was not written by tilefoundry sweep")
    buffers = tmp_path / "b.csv"
    buffers.write_text(f"id,lower,upper,size\n{cell},0,1,4\n")
    code, _, err = run_cli(capsys, "pack", buffers, "--capacity", "8")
    assert code == 1 and f"{buffers}:2:1: {said}; " in err, err
    # a cell at the limit is read
    table.write_text(f"selection,target,topology,status\nx,,,\"{cell[:-1]}\"\n")
    code, out, err = run_cli(capsys, "sweep", "--report", table)
    assert code == 0, err


# ---------------------------------------------------------------- the Dask scheduler


@pytest.mark.parametrize("scheme", ["tls", "ucx", "inproc", "nosuch"])
def test_every_scheduler_scheme_reaches_or_is_refused(tmp_path, capsys, monkeypatch, scheme):
    pytest.importorskip("distributed")
    import tilefoundry.sweep.backends as backends

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", 2.0)
    path = space(tmp_path, SEQPOOL + "[dims]\nseq = [96, 128]\n")
    address = f"{scheme}://127.0.0.1:9"
    line = _refusal(capsys, "sweep", "-q", "--scheduler", address, "-o", tmp_path / "t.csv", path)
    assert line.startswith(f"--scheduler {address}: cannot reach the Dask scheduler ("), line
    assert not (tmp_path / "t.csv").exists()


def test_a_run_that_never_reached_its_backend_leaves_no_table(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    import tilefoundry.sweep.backends as backends

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", 1.0)
    path = space(tmp_path, SEQPOOL + "[dims]\nseq = [96, 128]\n")
    table = tmp_path / "t.csv"
    for _ in range(2):  # the rerun is refused the same way, not as "table exists"
        line = _refusal(capsys, "sweep", "-q", "--scheduler", "tcp://127.0.0.1:9", "-o", table, path)
        assert "cannot reach the Dask scheduler" in line, line
        assert not table.exists()


def test_a_run_whose_workers_finish_no_row_leaves_no_table(tmp_path):
    """The sibling: the local pool started, but every batch failed as a whole
    (the program changed under the sweep): no row, so no header-only table."""
    from tilefoundry.sweep.backends import SweepError
    from tilefoundry.sweep.engine import run_sweep
    from tilefoundry.sweep.space import load_space

    path = space(tmp_path, SEQPOOL + "[dims]\nseq = [96, 128]\n")
    loaded = load_space(str(path))
    program = tmp_path / "p11_seq_variants.py"
    program.write_text(program.read_text() + "\n# changed after the space was read\n")
    table = tmp_path / "t.csv"
    with pytest.raises(SweepError) as info:
        run_sweep(loaded, str(table), jobs=1, progress=False)
    assert "reads other bytes" in str(info.value)
    assert not table.exists()


# ---------------------------------------------------------------- workers die with their client


def _children(pid: int) -> set[int]:
    """The live (not zombie) processes whose parent is ``pid`` (Linux /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_die_with_their_killed_parent(tmp_path, signum):
    """`sweep --jobs 2` whose workers wait (loading a slow program) is killed:
    both workers and the resource tracker are gone soon after, and the
    caller's stdout pipe sees its end."""
    shutil.copy(DATA / "slow_load.py", tmp_path / "slow_load.py")
    path = space(tmp_path, 'selections = ["slow_load.py"]\n'
                           'targets = ["nvidia.h100_sxm", "nvidia.h200_sxm", "nvidia.b200_sxm"]\n')
    (tmp_path / "slow").write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    running = subprocess.Popen([sys.executable, "-m", "tilefoundry", "sweep", "-q", "-j", "2", str(path)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers: set = set()
        while time.monotonic() < deadline and running.poll() is None:
            workers = {p for p in _children(running.pid) if b"resource_tracker" not in _cmdline(p)}
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2, "the sweep never started two workers"
        time.sleep(0.3)  # the workers run their initializer (die_with) before waiting in the load
        left = _children(running.pid)
        running.send_signal(signum)
        running.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in left) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in left if _alive(p)], "a worker outlived its parent"
        assert running.stdout.read() == b""  # the end of the pipe: no process holds it open
    finally:
        (tmp_path / "slow").unlink(missing_ok=True)
        if running.poll() is None:
            running.kill()
            running.wait()
        running.stdout.close()


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""
