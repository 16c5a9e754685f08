"""Issue 24 item 4: the summary of a table, after a run and as
`tilefoundry sweep --report TABLE`: best point per selection by predicted-ns,
the Pareto front of predicted-ns against each level's peak bytes, SVG charts
of a figure against a dim per target."""
from __future__ import annotations

import json

import pytest

from tests.sweep.sweep_helpers import run_cli, small


def _table(rows):
    from tilefoundry.sweep.table import Table, order_columns

    seen = {c: None for row in rows for c, v in row.items() if v is not None}
    full = [{"selection": "k", "target": None, "topology": None, "tile": None, **row} for row in rows]
    return Table(order_columns(("tile",), seen), full)


def _row(tile, ns, gmem, smem=None, target="nvidia.h200_sxm", selection="k", status="ok"):
    row = {"selection": selection, "target": target, "tile": tile, "status": status}
    if status == "ok":
        row.update({"predicted-ns": ns, "peak.gmem": gmem})
        if smem is not None:
            row["peak.smem"] = smem
    return row


def test_best_and_pareto_front():
    from tilefoundry.sweep.summary import report_document

    table = _table([
        _row(16, 900, 100, 10), _row(32, 500, 300, 20), _row(64, 500, 200, 40), _row(128, 700, 150, 5),
        _row(256, 400, 900, 80), _row(512, 400, 900, 80), _row(1024, None, None, status="refused: x"),
        _row(8, 50, 1, selection="other", status="too big"),
    ])
    document = report_document(table, "t.csv")
    assert (document["points"], document["ok"], document["refused"], document["selections"]) == (8, 6, 2, 2)
    best = {entry["selection"]: entry for entry in document["best"]}
    # 256 and 512 tie on predicted-ns: the first in table order wins
    assert best["k"]["point"] == {"target": "nvidia.h200_sxm", "topology": None, "dims": {"tile": 256},
                                  "predicted_ns": 400, "peak_bytes": {"gmem": 900, "smem": 80}}
    assert best["k"]["refused"] == 1
    assert best["other"] == {"selection": "other", "point": None, "refused": 1}
    fronts = {(f["selection"], f["level"]): [(p["dims"]["tile"], p["predicted_ns"], p["peak_bytes"])
                                             for p in f["points"]] for f in document["pareto"]}
    assert fronts[("k", "gmem")] == [(256, 400, {"gmem": 900}), (64, 500, {"gmem": 200}),
                                     (128, 700, {"gmem": 150}), (16, 900, {"gmem": 100})]
    assert fronts[("k", "smem")] == [(256, 400, {"smem": 80}), (32, 500, {"smem": 20}),
                                     (128, 700, {"smem": 5})]
    assert [(r["status"], r["count"]) for r in document["refusals"]] == [("refused: x", 1), ("too big", 1)]


def test_report_of_a_table_text_json_and_charts(tmp_path, capsys):
    path = small(tmp_path)
    assert run_cli(capsys, "sweep", "-q", "-j", "2", path)[0] == 0
    table = tmp_path / "space.csv"
    code, out, err = run_cli(capsys, "sweep", "--report", table)
    assert code == 0, err
    assert out.startswith(f"# sweep {table}: 24 points over 2 selections: ")
    assert "\nbest predicted-ns per selection:\n  selection " in out
    code, out, err = run_cli(capsys, "sweep", "--report", table, "--json", "--plots", tmp_path / "charts")
    assert code == 0, err
    document = json.loads(out)  # validated against schemas/sweep-report.schema.json (conftest)
    assert document["kind"] == "sweep-report" and document["points"] == 24
    charts = sorted(p.name for p in (tmp_path / "charts").iterdir())
    assert charts == ["predicted-ns-vs-seq.nvidia.b200_sxm.svg", "predicted-ns-vs-seq.nvidia.h100_sxm.svg",
                      "predicted-ns-vs-seq.nvidia.h200_sxm.svg"]
    assert err == f"# wrote 3 charts of predicted-ns to {tmp_path / 'charts'}\n"
    first = (tmp_path / "charts" / charts[0]).read_bytes()
    assert first.startswith(b"<?xml") and b"predicted-ns against seq on nvidia.b200_sxm" in first
    # charts are deterministic: the same table draws the same bytes
    assert run_cli(capsys, "sweep", "--report", table, "--plots", tmp_path / "again")[0] == 0
    assert (tmp_path / "again" / charts[0]).read_bytes() == first


def test_report_refusals(tmp_path, capsys):
    path = small(tmp_path)
    assert run_cli(capsys, "sweep", "-q", "-j", "1", path)[0] == 0
    code, _, err = run_cli(capsys, "sweep", "--report", tmp_path / "space.csv", "--plots", tmp_path / "c",
                           "--figure", "predicted_ns")
    assert code == 1 and "--figure predicted_ns: the table has no such figure column" in err
    assert "did you mean 'predicted-ns'?" in err
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    code, _, err = run_cli(capsys, "sweep", "--report", tmp_path / "other.csv")
    assert code == 1 and "is not a sweep table" in err
    code, _, err = run_cli(capsys, "sweep", "--report", tmp_path / "none.csv")
    assert code == 1 and "none.csv: no such file" in err


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_table_reads_back_as_written(tmp_path, kind):
    if kind == "parquet":
        pytest.importorskip("pyarrow")
    from tilefoundry.sweep.table import Table, read_table, write_table

    columns = ["selection", "target", "topology", "seq", "status", "predicted-ns", "bound-by", "peak.gmem"]
    rows = [{"selection": "a.py:X", "target": None, "topology": "cta", "seq": 96, "status": "ok",
             "predicted-ns": 10, "bound-by": "memory", "peak.gmem": 1 << 40},
            {"selection": "a.py:X", "target": "nvidia.h200_sxm", "topology": None, "seq": None,
             "status": 'refused, with "quotes", a comma', "predicted-ns": None, "bound-by": None,
             "peak.gmem": None}]
    path = tmp_path / f"t.{kind}"
    write_table(str(path), Table(columns, rows))
    back = read_table(str(path))
    assert back.columns == columns and back.rows == rows
    assert back.dims == ("seq",)
