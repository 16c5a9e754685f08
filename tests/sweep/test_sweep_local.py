"""Issue 24 items 2 and 3, local pool: the table (one row per point, written
as points finish), --resume, Ctrl-C, a refused point as a row, a dead worker
whose points are run again; the same bytes whatever the pool's size."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.sweep.sweep_helpers import DATA, P11, SMALL_POINTS, run_cli, small, space


def _rows(path):
    from tilefoundry.sweep.table import read_table

    return read_table(str(path))


def test_one_row_per_point_with_its_key_figures_and_status(tmp_path, capsys):
    from tilefoundry import api

    path = small(tmp_path)
    code, out, err = run_cli(capsys, "sweep", "--jobs", "2", path)
    assert code == 0, err
    table = _rows(tmp_path / "space.csv")
    assert len(table.rows) == SMALL_POINTS
    assert table.columns[:6] == ["selection", "target", "topology", "seq", "status", "predicted-ns"]
    keys = [table.key(row) for row in table.rows]
    assert len(set(keys)) == SMALL_POINTS
    # the space's order: selections, then targets, levels, dims
    assert keys[:4] == [("p11_seq_variants.py:SeqPool", "nvidia.h100_sxm", "cta", 96),
                        ("p11_seq_variants.py:SeqPool", "nvidia.h100_sxm", "cta", 128),
                        ("p11_seq_variants.py:SeqPool", "nvidia.h100_sxm", "cta", 1024),
                        ("p11_seq_variants.py:SeqPool", "nvidia.h100_sxm", "thread", 96)]
    by_key = dict(zip(keys, table.rows))
    # SeqPool has no level 'thread': a refused point is a row with the analysis's one line
    refused = by_key[("p11_seq_variants.py:SeqPool", "nvidia.h200_sxm", "thread", 128)]
    assert refused["status"].startswith("program topology level 'thread' is invalid")
    assert refused["predicted-ns"] is None
    # an ok row states what the Python API's analyze states for that point
    row = by_key[("p11_seq_variants.py:SeqPool", "nvidia.b200_sxm", "cta", 1024)]
    figures = api.analyze(f"{tmp_path / 'p11_seq_variants.py'}:SeqPool", dims={"seq": 1024},
                          families=["compute-cost", "memory", "roofline", "performance"],
                          target="nvidia.b200_sxm", topology="cta").figures()
    from tilefoundry.sweep.table import figure_cells

    assert row["status"] == "ok"
    assert {k: v for k, v in row.items() if k not in ("selection", "target", "topology", "seq", "status")
            and v is not None} == figure_cells(figures)
    cta = by_key[("p01_rownorm_mesh.py", "nvidia.h200_sxm", "cta", None)]
    assert cta["status"] == "ok" and cta["seq"] is None and cta["predicted-ns"] > 0
    thread = by_key[("p01_rownorm_mesh.py", "nvidia.h200_sxm", "thread", None)]
    assert thread["status"] == ("performance: selected topology level 'thread', but the target's "
                                "parallel capacity is stated for 'cta'")
    # the summary: the run, then best point per selection and the fronts
    assert out.startswith(f"# sweep {path}: {tmp_path / 'space.csv'} holds {SMALL_POINTS} points; ran "
                          f"{SMALL_POINTS} (0 were in the table)")
    assert "best predicted-ns per selection:" in out and "pareto front of predicted-ns" in out


def test_the_table_is_the_same_bytes_whatever_the_pool(tmp_path, capsys):
    path = small(tmp_path)
    for jobs, name in ((1, "one.csv"), (2, "two.csv"), (2, "two.parquet"), (1, "one.parquet")):
        code, _, err = run_cli(capsys, "sweep", "-q", "--jobs", jobs, "-o", tmp_path / name, path)
        assert code == 0, err
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "two.parquet").read_bytes()
    assert _rows(tmp_path / "one.csv").rows == _rows(tmp_path / "one.parquet").rows


def test_an_existing_table_needs_resume(tmp_path, capsys):
    path = small(tmp_path)
    assert run_cli(capsys, "sweep", "-j", "2", path)[0] == 0
    before = (tmp_path / "space.csv").read_bytes()
    code, _, err = run_cli(capsys, "sweep", "-j", "2", path)
    assert code == 1 and "space.csv exists: give --resume" in err
    code, out, err = run_cli(capsys, "sweep", "-j", "2", "--resume", path)
    assert code == 0, err
    assert f"ran 0 ({SMALL_POINTS} were in the table)" in out
    assert (tmp_path / "space.csv").read_bytes() == before


def test_resume_after_an_interrupt_finishes_the_space_exactly_once(tmp_path, capsys):
    """Ctrl-C after the first batch: the table holds what finished; --resume
    runs only the rest, and the table is byte for byte an uninterrupted run's."""
    from tilefoundry.sweep.engine import Interrupted, run_sweep
    from tilefoundry.sweep.space import load_space

    path = small(tmp_path)
    space_ = load_space(str(path))
    whole = tmp_path / "whole.csv"
    run_sweep(space_, str(whole), jobs=2, progress=False)
    table = tmp_path / "cut.csv"

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(Interrupted) as stopped:
        run_sweep(space_, str(table), jobs=2, progress=False, on_batch=stop)
    written = stopped.value.written
    assert 0 < written < SMALL_POINTS and len(_rows(table).rows) == written
    assert f"{written:,} of {SMALL_POINTS} points are in {table}; run the same command with --resume" \
        in str(stopped.value)
    seen: list = []
    outcome = run_sweep(space_, str(table), jobs=2, progress=False, resume=True,
                        on_batch=lambda done, total: seen.append(done))
    assert (outcome.already, outcome.ran) == (written, SMALL_POINTS - written)
    assert table.read_bytes() == whole.read_bytes()
    keys = [_rows(table).key(row) for row in _rows(table).rows]
    assert len(keys) == len(set(keys)) == SMALL_POINTS


def test_a_table_of_another_space_is_not_resumed(tmp_path, capsys):
    path = small(tmp_path)
    assert run_cli(capsys, "sweep", "-j", "1", "-o", tmp_path / "t.csv", path)[0] == 0
    other = space(tmp_path, 'selections = ["p11_seq_variants.py:SeqPool"]\n[dims]\nseq = [96]\n',
                  name="other.toml")
    code, _, err = run_cli(capsys, "sweep", "--resume", "-o", tmp_path / "t.csv", other)
    assert code == 1 and "holds a row this space does not name" in err
    renamed = space(tmp_path, 'selections = ["p01_rownorm_mesh.py"]\n', name="third.toml", copies=())
    code, _, err = run_cli(capsys, "sweep", "--resume", "-o", tmp_path / "t.csv", renamed)
    assert code == 1 and "has the dims seq, this space none" in err


def test_a_table_written_while_running_is_always_whole(tmp_path):
    """Every rewrite is a whole table (a rename over the old one): read back
    after each batch, it parses and holds at least the rows so far."""
    from tilefoundry.sweep.engine import run_sweep
    from tilefoundry.sweep.space import load_space
    from tilefoundry.sweep.table import Writer

    path = small(tmp_path)
    table = tmp_path / "live.csv"
    seen: list = []
    original = Writer.due
    Writer.due = lambda self: True  # every batch rewrites
    try:
        run_sweep(load_space(str(path)), str(table), jobs=2, progress=False,
                  on_batch=lambda done, total: seen.append((done, len(_rows(table).rows))))
    finally:
        Writer.due = original
    assert seen and all(on_disk == done for done, on_disk in seen)
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []


def test_a_worker_killed_mid_sweep_loses_no_row_and_repeats_none(tmp_path, capsys):
    """A local worker dies (SIGKILL) loading a program: the pool starts
    again, every batch without a result is run again, and the table is the one
    a run without the death writes."""
    for name in ("dies_once.py",):
        shutil.copy(DATA / name, tmp_path / name)
    path = space(tmp_path, 'selections = ["p11_seq_variants.py:SeqPool", "dies_once.py"]\n'
                           'targets = ["nvidia.h100_sxm", "nvidia.h200_sxm"]\n'
                           "[dims]\nseq = [96, 128, 256, 1024]\n")
    code, _, err = run_cli(capsys, "sweep", "-q", "-j", "2", "-o", tmp_path / "calm.csv", path)
    assert code == 0, err
    (tmp_path / "armed").write_text("")
    code, _, err = run_cli(capsys, "sweep", "-q", "-j", "2", "-o", tmp_path / "killed.csv", path)
    assert code == 0, err
    assert not (tmp_path / "armed").exists()  # a worker did die
    assert (tmp_path / "killed.csv").read_bytes() == (tmp_path / "calm.csv").read_bytes()


def test_ctrl_c_writes_what_finished_then_resume_finishes(tmp_path):
    """A real SIGINT to a running `tilefoundry sweep` (its workers wait while
    loading a slow program): exit 130 and one line; the table holds the rows
    that finished; --resume finishes the space exactly once."""
    for name in ("slow_load.py",):
        shutil.copy(DATA / name, tmp_path / name)
    path = space(tmp_path, 'selections = ["p11_seq_variants.py:SeqPool", "slow_load.py"]\n'
                           'targets = ["nvidia.h100_sxm", "nvidia.h200_sxm"]\n'
                           "[dims]\nseq = [96, 128]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    command = [sys.executable, "-m", "tilefoundry", "sweep", "-j", "2", str(path)]
    whole = subprocess.run(command + ["-o", str(tmp_path / "whole.csv")], env=env, capture_output=True,
                           text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    (tmp_path / "slow").write_text("")
    table = tmp_path / "space.csv"
    running = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not table.exists() and time.monotonic() < deadline and running.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)  # the other SeqPool batches finish; slow_load's workers wait
        running.send_signal(signal.SIGINT)
        out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
        (tmp_path / "slow").unlink(missing_ok=True)
    assert running.returncode == 130, err
    written = len(_rows(table).rows)
    assert 0 < written < 6
    assert err.strip() == (f"tilefoundry: interrupted: {written} of 6 points are in {table}; run the "
                           "same command with --resume to finish the space")
    resumed = subprocess.run(command + ["--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"ran {6 - written} ({written} were in the table)" in resumed.stdout
    assert table.read_bytes() == (tmp_path / "whole.csv").read_bytes()


def test_the_table_path_is_checked_before_any_work(tmp_path, capsys):
    path = small(tmp_path)
    (tmp_path / "folder.csv").mkdir()
    code, _, err = run_cli(capsys, "sweep", "-o", tmp_path / "folder.csv", path)
    assert code == 1 and "is a directory, not a file" in err
    code, _, err = run_cli(capsys, "sweep", "-o", tmp_path / "no" / "t.csv", path)
    assert code == 1 and "does not exist" in err


def test_figures_of_the_api_equal_analyze(tmp_path):
    """api.figures (what a worker calls) is analyze(...).figures() without
    rendering the program, for every family set and a refused target alike."""
    from tilefoundry import api
    from tilefoundry.errors import TileFoundryError

    pair = api.load(f"{P11}:SeqPool")
    for families in (None, "all", ["memory"], ["compute-cost", "roofline", "performance"]):
        for target in (None, "nvidia.b200_sxm", "apple.m2_pro"):
            try:
                expected = api.analyze(pair, dims={"seq": 1024}, families=families, target=target).figures()
            except TileFoundryError as exc:
                expected = str(exc)
            try:
                found = api.figures(pair, dims={"seq": 1024}, families=families, target=target)
            except TileFoundryError as exc:
                found = str(exc)
            assert found == expected, (families, target)


@pytest.mark.parametrize("argv, says", [
    (["--scheduler", "tcp://127.0.0.1:8786"],
     "--scheduler needs dask.distributed: pip install 'tilefoundry[cluster]' (dask[distributed] and pyarrow)"),
    (["-o", "t.parquet"],
     "a .parquet table needs pyarrow: pip install 'tilefoundry[cluster]' (dask[distributed] and pyarrow), "
     "or name the table FILE.csv"),
])
def test_an_extra_not_installed_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, says):
    """dask and pyarrow stay optional: without them the command says what to
    install, before any point runs (and writes nothing)."""
    path = small(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("distributed", "pyarrow"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError
    code, out, err = run_cli(capsys, "sweep", *argv, path)
    assert code == 1 and out == "" and err == f"tilefoundry: error: {says}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p01_rownorm_mesh.py", "p11_seq_variants.py",
                                                          "space.toml"]


def test_progress_with_an_eta_on_a_terminal_only(tmp_path, capsys, monkeypatch):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    path = small(tmp_path)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert run_cli(capsys, "sweep", "-j", "2", "-o", tmp_path / "a.csv", path)[0] == 0
    shown = terminal.getvalue()
    assert "sweep:" in shown and f"/{SMALL_POINTS} [" in shown and "point/s]" in shown
    assert "<" in shown  # elapsed<remaining: the ETA
    for quiet in (True, False):
        terminal = Terminal() if quiet else io.StringIO()  # --quiet, or not a terminal: no bar
        monkeypatch.setattr(sys, "stderr", terminal)
        argv = ["-q"] if quiet else []
        assert run_cli(capsys, "sweep", *argv, "-j", "2", "-o", tmp_path / f"q{quiet}.csv", path)[0] == 0
        assert terminal.getvalue() == ""
