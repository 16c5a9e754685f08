"""Issue 40 item 3: the logical embedding. The spec decides that an index_select's
table is charged whole ("Non-affine runtime indices retain the widest legal access
approximation", analysis.md; companions §5.3), so the traffic keeps the whole table and
the report states beside it the rows the indices select (`gathered`)."""
from __future__ import annotations

import json

import pytest

from tilefoundry.cli.main import main

EMBED = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Embed:
    @func
    def f(table: Tensor[(1000, 64), "bf16"], ids: Tensor[({rows},), "i64"]) -> Tensor[({rows}, 64), "bf16"]:
        with Mesh(("cta",), (1,), ("c",)) as _g:
            return tf.index_select(table, ids, dim=0)
'''


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("rows", [1, 8])
def test_item3_traffic_counts_the_table_and_the_gathered_rows_stand_beside(capsys, tmp_path, rows):
    path = tmp_path / "embed.py"
    path.write_text(EMBED.format(rows=rows), encoding="utf-8")
    table, row = 1000 * 64 * 2, 64 * 2  # bf16
    index, result = rows * 8, rows * row  # i64 ids read, the rows written
    code, out, err = _run(capsys, "analyze", "--memory", str(path))
    assert (code, err) == (0, "")
    line = next(line for line in out.splitlines() if "index_select(" in line)
    assert line.endswith(
        f"traffic traffic=gmem:r{table + index}/w{result}@r{table + index}/w{result}; gathered "
        f"rows={rows} bytes={rows * row} of={table} (traffic counts x whole: the widest legal "
        "access of runtime indices)")
    code, out, err = _run(capsys, "analyze", "--memory", "--json", str(path))
    (call,) = json.loads(out)["calls"]
    assert call["gathered"] == {"rows": rows, "bytes": rows * row, "of_bytes": table}


def test_item3_no_gathered_figure_without_the_traffic(capsys, tmp_path):
    path = tmp_path / "embed.py"
    path.write_text(EMBED.format(rows=1), encoding="utf-8")
    code, out, err = _run(capsys, "analyze", "--compute-cost", "--json", str(path))
    assert "gathered" not in json.loads(out)["calls"][0]


def test_item3_llama_embed_reads_one_row_of_its_table(capsys):
    """Llama-3-8B's logical embed: one token of a (128256, 4096) bf16 table."""
    code, out, err = _run(capsys, "analyze", "--memory", "--json", "llama3-8b:Llama3_8B.embed")
    assert (code, err) == (0, "")
    (call,) = [c for c in json.loads(out)["calls"] if "gathered" in c]
    assert call["gathered"] == {"rows": 1, "bytes": 4096 * 2, "of_bytes": 128256 * 4096 * 2}
