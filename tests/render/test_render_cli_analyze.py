"""companions §8: `tilefoundry analyze` with the compute-cost family, through a
real process."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.analysis.analysis_helpers import DIMMED, LOOPY, write


def _run(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", *args],
                          capture_output=True, text=True, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_8_compute_cost_text(tmp_path):
    path = write(tmp_path, LOOPY)
    rc, out, err = _run("--compute-cost", f"{path}:Loopy")
    assert rc == 0 and err == ""
    assert out.splitlines()[2] == "# compute-cost flops=f32:134144@134144 service=special:1024@1024"


def test_cli_8_json_and_output_file(tmp_path):
    path = write(tmp_path, LOOPY)
    target = tmp_path / "report.json"
    rc, out, err = _run("--compute-cost", "--json", "--output", str(target), f"{path}:Loopy")
    assert rc == 0 and out == "" and err == ""
    data = json.loads(target.read_text())
    assert data["requested"] == ["compute-cost"] and data["topology"] == "cta"


def test_cli_8_topology_changes_per_unit_level(tmp_path):
    path = write(tmp_path, LOOPY)
    rc, out, _ = _run("--compute-cost", "--topology", "cta", f"{path}:Loopy")
    assert rc == 0 and "topology=cta" in out.splitlines()[0]
    rc, out, err = _run("--compute-cost", "--topology", "warp", f"{path}:Loopy")
    assert rc == 1 and out == ""
    assert err == ("tilefoundry: error: program topology level 'warp' is invalid: Module 'Loopy': "
                   "no topology named 'warp'; effective topology levels are ['cta']\n")


def test_cli_8_3_dim_binding(tmp_path):
    path = write(tmp_path, DIMMED)
    rc, out, _ = _run("--compute-cost", "--dim", "n=4", f"{path}:Dimmed")
    assert rc == 0 and "# compute-cost flops=f32:32@32" in out
    rc, out, err = _run("--compute-cost", "--dim", "n=99", f"{path}:Dimmed")
    assert rc == 1 and err.strip().endswith(  # issue 40 item 7: the range and the remedy
        "was declared over [1, 65) and cannot take 99; bind an extent in that range (--dim n=64 "
        "is the largest) or widen the DimVar's range where it is declared")


def test_cli_8_json_without_a_family_is_the_typed_program(tmp_path):
    path = write(tmp_path, LOOPY)
    rc, out, err = _run("--json", f"{path}:Loopy")
    assert rc == 0, err
    data = json.loads(out)
    _, typed, _ = _run(f"{path}:Loopy")
    assert data["program"] == typed and data["requested"] == [] and data["calls"] == []


def test_cli_8_no_family_prints_typed_program(tmp_path):
    path = write(tmp_path, LOOPY)
    rc, out, _ = _run(f"{path}:Loopy")
    assert rc == 0 and out.startswith("from __future__ import annotations")
    assert "compute-cost" not in out
