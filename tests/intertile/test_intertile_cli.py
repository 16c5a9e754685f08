"""CLI: intertile verify/run and relayout classify, exit codes and one-line errors."""
from __future__ import annotations

import json

from tests.intertile.intertile_helpers import SHARED
from tilefoundry.cli.main import main


def test_intertile_7_verify_exit_codes(capsys):
    assert main(["intertile", "verify", str(SHARED / "examples" / "e02_overlapping_windows.mlir")]) == 0
    assert "@sliding_pairs: ok" in capsys.readouterr().out
    bad = SHARED / "invalid" / "i08_r8_scatter_two_sources.mlir"
    assert main(["intertile", "verify", str(bad)]) == 1
    assert "R8 ktdp.inter_tile_scatter: group 0 has 2 producers" in capsys.readouterr().out


def test_intertile_7_run_prints_landing_grid(capsys):
    path = SHARED / "examples" / "e05_two_axis_assembly.mlir"
    assert main(["intertile", "run", str(path), "--function", "@cells_in_transposed_order"]) == 0
    out = capsys.readouterr().out
    # Producer rank walks the 2x2 blocks axis 0 slowest: tile 1 lands at (0, 1).
    assert "t0[0,0]  t1[0,0]\n" in out and "t2[0,0]  t3[0,0]\n" in out


def test_intertile_7_run_refuses_a_violation(capsys):
    assert main(["intertile", "run", str(SHARED / "invalid" / "i13_r12_concat_extent_wrong.mlir")]) == 1
    assert "not run" in capsys.readouterr().out


def test_intertile_7_bad_file_is_one_line_error(tmp_path, capsys):
    f = tmp_path / "x.mlir"
    f.write_text("func.func @f() {\n  %a = foo.bar\n}\n")
    assert main(["intertile", "verify", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{f}:2:8: unknown op 'foo.bar'" in err


def test_relayout_7_cli_classify_json(tmp_path, capsys):
    src = {str(m * 4 + o): {"mb": m, "out": o} for m in range(8) for o in range(4)}
    dst = {str(k): {"mb": k} for k in range(32)}
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"cores": 32, "source": src, "destination": dst}))
    assert main(["relayout", "classify", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["verdict"], out["row"], out["op"], out["M"], out["K"]) == (
        "op", "3", "inter_tile_all_to_all", 4, 4)
    assert out["split_dimensions"] == ["mb"] and len(out["groups"]) == 8
    assert out["reproduces_destination"] is True
    assert set(out["axes"][0]) >= {"Ns", "Nd", "relation", "fanin", "fanout", "uniform", "gcd"}


def test_relayout_7_cli_bad_table_one_line(tmp_path, capsys):
    f = tmp_path / "t.json"
    f.write_text('{"cores": 2, "source": {"5": {}}, "destination": {"0": {}}}')
    assert main(["relayout", "classify", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "source core 5 is out of range" in err
