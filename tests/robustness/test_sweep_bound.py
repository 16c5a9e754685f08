"""Issue 22 item 5: a --dim product is counted before any point is built and
refused past TILEFOUNDRY_MAX_SWEEP_POINTS (default 10,000), for analyze and
for check alike."""
from __future__ import annotations

from pathlib import Path

from tilefoundry.cli.main import main

P11 = str(Path(__file__).resolve().parents[1] / "data" / "programs" / "p11_seq_variants.py") + ":SeqPool"


def _values(n: int) -> str:
    return ",".join(str(v) for v in range(1, n + 1))


def test_analyze_counts_the_product_first(capsys):
    code = main(["analyze", "--dim", f"seq={_values(1000)}", "--dim", f"other={_values(1000)}",
                 "--dim", f"third={_values(3)}", P11])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.strip() == ("tilefoundry: error: this command line asks for 3,000,000 analyses "
                           "(1000 x 1000 x 3 --dim values) (limit 10,000 points of one sweep); raise "
                           "the limit with TILEFOUNDRY_MAX_SWEEP_POINTS=N if this input is meant")


def test_the_bound_counts_targets_and_can_be_raised(capsys, monkeypatch):
    monkeypatch.setenv("TILEFOUNDRY_MAX_SWEEP_POINTS", "3")
    code = main(["analyze", "--compute-cost", "--dim", "seq=96,128", "--target", "nvidia.h200_sxm",
                 "--target", "nvidia.b200_sxm", P11])
    _, err = capsys.readouterr()
    assert code == 1 and "4 analyses (2 --dim values x 2 targets) (limit 3" in err
    monkeypatch.setenv("TILEFOUNDRY_MAX_SWEEP_POINTS", "4")
    assert main(["analyze", "--compute-cost", "--dim", "seq=96,128", "--target", "nvidia.h200_sxm",
                 "--target", "nvidia.b200_sxm", P11]) == 0
    capsys.readouterr()


def test_check_counts_its_bindings(capsys, monkeypatch):
    monkeypatch.setenv("TILEFOUNDRY_MAX_SWEEP_POINTS", "2")
    code = main(["check", "--placed", "--dim", "seq=96,128,1024", P11])
    _, err = capsys.readouterr()
    assert code == 1 and "check asks for 3 bindings (3 --dim values) (limit 2" in err
