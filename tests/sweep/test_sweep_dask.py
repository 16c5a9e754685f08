"""Issue 24 item 3 and its tests, on a real Dask cluster: a 2-worker
``distributed.LocalCluster`` (a scheduler and two worker processes). The table
it writes is the local pool's, byte for byte; a worker killed mid-sweep
leaves no row lost and none twice once its points are run again."""
from __future__ import annotations

import logging
import shutil

import pytest

from tests.sweep.sweep_helpers import DATA, run_cli, small, space

distributed = pytest.importorskip("distributed")  # the test extra installs it (pyproject)
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as running:
        yield running


def test_the_cluster_writes_the_local_table_bit_for_bit(cluster, tmp_path, capsys):
    path = small(tmp_path)
    for kind in ("csv", "parquet"):
        code, _, err = run_cli(capsys, "sweep", "-q", "-j", "2", "-o", tmp_path / f"local.{kind}", path)
        assert code == 0, err
        code, out, err = run_cli(capsys, "sweep", "-q", "--scheduler", cluster.scheduler_address,
                                 "-o", tmp_path / f"dask.{kind}", path)
        assert code == 0, err
        assert f"on 2 Dask workers at {cluster.scheduler_address}" in out
        assert (tmp_path / f"dask.{kind}").read_bytes() == (tmp_path / f"local.{kind}").read_bytes()


def test_a_worker_killed_mid_sweep_loses_no_row_and_repeats_none(cluster, tmp_path, capsys):
    """One worker dies (SIGKILL) loading a program after the first rows came
    in; the scheduler runs its batches again (on the other worker, or the one
    the nanny starts again), and the table equals the local pool's."""
    shutil.copy(DATA / "dies_once.py", tmp_path / "dies_once.py")
    path = space(tmp_path, 'selections = ["p11_seq_variants.py:SeqPool", "dies_once.py"]\n'
                           'targets = ["nvidia.h100_sxm", "nvidia.h200_sxm"]\n'
                           "[dims]\nseq = [96, 128, 256, 1024]\n")
    code, _, err = run_cli(capsys, "sweep", "-q", "-j", "2", "-o", tmp_path / "local.csv", path)
    assert code == 0, err
    (tmp_path / "armed").write_text("")
    code, _, err = run_cli(capsys, "sweep", "-q", "--scheduler", cluster.scheduler_address,
                           "-o", tmp_path / "dask.csv", path)
    assert code == 0, err
    assert not (tmp_path / "armed").exists()  # a worker did die
    from tilefoundry.sweep.table import read_table

    table = read_table(str(tmp_path / "dask.csv"))
    keys = [table.key(row) for row in table.rows]
    assert len(keys) == len(set(keys)) == 16
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()


def test_resume_on_the_cluster_runs_only_what_is_missing(cluster, tmp_path, capsys):
    from tilefoundry.sweep.engine import Interrupted, run_sweep
    from tilefoundry.sweep.space import load_space

    path = small(tmp_path)
    space_ = load_space(str(path))
    table = tmp_path / "t.parquet"

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(Interrupted) as stopped:
        run_sweep(space_, str(table), scheduler=cluster.scheduler_address, progress=False, on_batch=stop)
    outcome = run_sweep(space_, str(table), scheduler=cluster.scheduler_address, progress=False, resume=True)
    assert (outcome.already, outcome.ran) == (stopped.value.written, outcome.points - stopped.value.written)
    run_sweep(space_, str(tmp_path / "whole.parquet"), jobs=1, progress=False)
    assert table.read_bytes() == (tmp_path / "whole.parquet").read_bytes()


def test_an_unreachable_scheduler_is_one_line(tmp_path, capsys, monkeypatch):
    import tilefoundry.sweep.backends as backends

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", 2.0)
    path = small(tmp_path)
    code, _, err = run_cli(capsys, "sweep", "--scheduler", "tcp://127.0.0.1:9", path)
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("tilefoundry: error: --scheduler tcp://127.0.0.1:9: cannot reach the Dask "
                          "scheduler")
