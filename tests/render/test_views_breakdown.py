"""`analyze --breakdown` (issue 23 item 2, docs/views.md): one analysis totalled per
call of the selected function, each call's statements found through the call
path the view keeps on every inlined statement (``CallPathMetadata``).

p06 MiniStack's entry `step` calls `embed`, the three block children and
`lm_head`, so it has five rows; each row's figures are the sums of its
statements' `--top` figures, read off the same JSON report."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from tests.conftest import PROGRAMS
from tilefoundry.cli.main import main
from tilefoundry.ir.metadata import CallPathMetadata

STACK = str(PROGRAMS / "p06_module_tree.py") + ":MiniStack"
FAMILIES = ("--compute-cost", "--memory", "--roofline", "--performance")


def _stdout(*argv) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def documents():
    report = json.loads(_stdout("analyze", "--json", *FAMILIES, STACK))
    breakdown = json.loads(_stdout("analyze", "--breakdown", "--json", STACK))
    return report, breakdown


def test_one_row_per_call_of_the_entry_in_the_order_they_run(documents):
    _, breakdown = documents
    assert breakdown["kind"] == "analyze-breakdown"
    assert [row["call"] for row in breakdown["calls"]] == ["embed", "blk0", "blk1", "blk2", "lm_head"]


def test_rows_add_up_to_the_function_totals(documents):
    """Every statement lies in exactly one call, and the calls run one after another
    on the same 4 CTAs, so the rows' flops, bytes and times sum to the totals."""
    report, breakdown = documents
    rows = breakdown["calls"]
    assert sum(r["statements"] for r in rows) == len(report["calls"])
    for key, total in (("flops", "flops"), ("bytes", "bytes"), ("time_ns", "time")):
        assert sum(r[key] for r in rows) == breakdown["totals"][total]
    assert breakdown["totals"]["time"] == report["function_records"]["performance"]["timeline"]["end_ns"]


def test_the_three_block_copies_cost_the_same(documents):
    _, breakdown = documents
    blocks = [{k: v for k, v in r.items() if k != "call"} for r in breakdown["calls"][1:4]]
    assert blocks[0] == blocks[1] == blocks[2]


def test_a_rows_ideal_is_the_roofline_of_its_summed_work(documents):
    """embed is one index_select of the (1024, 256) bf16 table, which the access
    relation charges whole (companions §5): 524288 B read + 8 B of the i64 token +
    512 B written = 524808 B at gmem, no flops; on the H200's 4.8e12 B/s that is
    ceil(524808e9 / 4.8e12) = 110 ns, memory-bound."""
    _, breakdown = documents
    embed = breakdown["calls"][0]
    assert (embed["bytes"], embed["flops"]) == (524808, 0)
    assert (embed["ideal_ns"], embed["bound_by"]) == (-(-524808 * 10**9 // 4_800_000_000_000), "memory")


def test_every_inlined_statement_names_its_call_path():
    """A statement of a block's attention kernel came through `blk1` then `attention`
    then `rms` (the attention calls rms first): the path is outermost first."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.ir.expr import Call, postorder

    module, function = load_selection(STACK)
    result = analyze(module, function, analysis="compute-cost")
    paths = {node.get_metadata(CallPathMetadata).path for node in postorder(result.function.body)
             if isinstance(node, Call) and node.get_metadata(CallPathMetadata) is not None}
    assert ("blk1", "attention", "rms") in paths
    assert ("embed",) in paths and ("lm_head",) in paths
    assert {path[0] for path in paths} == {"embed", "blk0", "blk1", "blk2", "lm_head"}


def test_breakdown_text_states_each_row_and_its_ratio(documents):
    _, breakdown = documents
    text = _stdout("analyze", "--breakdown", STACK)
    lines = text.splitlines()
    assert lines[0].startswith("# breakdown of MiniStack::step by call")
    assert lines[1].split()[:5] == ["call", "statements", "time-ns", "ideal-ns", "time/ideal"]
    embed = breakdown["calls"][0]
    cells = lines[2].split()
    assert cells[:5] == ["embed", str(embed["statements"]), str(embed["time_ns"]), str(embed["ideal_ns"]),
                         f"{embed['time_ns'] / embed['ideal_ns']:.2f}"]


def test_breakdown_and_top_together_are_refused(capsys):
    assert main(["analyze", "--breakdown", "--top", "3", STACK]) == 2
    assert "--top and --breakdown each replace the report" in capsys.readouterr().err
