"""Issue 13 golden programs (tests/data/collectives/): each Reshard's table, the
classifier's op (seed §7.2–§7.3), groups, M/K and bytes, derived by hand below
from the program's layouts. Pricing is the direct delivery of
analysis/collectives/: a consumer receives each piece it needs once from its
producer, nothing from itself."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import DATA
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.collectives import (CollectivesMetadata, CollectivesSummaryMetadata,
                                              price)
from tilefoundry.analysis.roofline import ceil_ns
from tilefoundry.dsl.loader import load_selection
from tilefoundry.intertile.delivery import Planned
from tilefoundry.ir.expr import Call
from tilefoundry.ops.sharding import Reshard
from tilefoundry.render.report import render_analysis

PROGRAMS = DATA / "collectives"


def _run(stem: str):
    module, function = load_selection(str(PROGRAMS / f"{stem}.py"))
    result = analyze(module, function, analysis="collectives")
    calls = [n for n in iter_nodes(result.function.body)
             if isinstance(n, Call) and isinstance(n.op, Reshard)]
    return result, [c.get_metadata(CollectivesMetadata) for c in calls]


def _exchange(records):
    """The one exchange of a golden program (its first Reshard is the load)."""
    assert records[0].verdict == "not-inter-tile"
    (record,) = [r for r in records if r.verdict != "not-inter-tile"]
    return record


def test_collectives_s7_4_worked_example_all_to_all():
    """{mb:8, out:4} -> {mb:32} on 32 cores (x: 64 x 16 f16). Axis table: mb Ns 8
    Nd 32 refined, out Ns 4 Nd 1 coarsened; prod(Nd) = 32 = cores -> row 3,
    split [mb] concat [out]; components gcd(8,32) * gcd(4,1) = 8 groups, M = 32/8
    = 4, K = 32/8 = 4. A partial is (64/8) x (16/4) = 32 elements; all_to_all
    sends each of the 3 other consumers of the group 32/M = 8 elements = 16 B:
    every core sends and receives 48 B; 32 cores * 48 = 1536 B."""
    _, records = _run("s74_all_to_all")
    r = _exchange(records)
    assert (r.op, r.groups, r.M, r.K) == ("inter_tile_all_to_all", 8, 4, 4)
    assert (r.sent, r.received, r.bytes) == (48, 48, 1536)
    assert r.verifies is True and r.reproduces_destination is True
    assert "split_dimensions = [0]" in r.ktir and "concat_dimensions = [1]" in r.ktir
    assert "tensor<8x4xf16> -> !ktdp.tile_future" in r.ktir  # the partial type (8 x 4)


def test_collectives_s7_3_row_2_scatter():
    """{y:16} on cores 0..15 -> {y:32} on all 32 (x: 64 f32). Only y refines (16 ->
    32): row 2, scatter [y]; components gcd(16,32) = 16 groups, M = 32/16 = 2, K = 1.
    Group k: producer k, consumers 2k, 2k+1; a partial is 64/16 = 4 elements and
    each consumer gets 4/2 = 2 = 8 B. Core 0 is its own group's first consumer,
    so 31 receipts: 31 * 8 = 248 B; max received 8, max sent 16 (cores 1..15
    send two halves, core 0 one)."""
    _, records = _run("row2_scatter")
    r = _exchange(records)
    assert (r.op, r.groups, r.M, r.K) == ("inter_tile_scatter", 16, 2, 1)
    assert (r.sent, r.received, r.bytes) == (16, 8, 248)
    assert dict(r.sent_by)["0"] == 8 and dict(r.sent_by)["15"] == 16
    assert r.verifies is True and r.reproduces_destination is True


def test_collectives_s7_5_p07_non_square_all_to_all():
    """P07: {mb:16} on cores 0..15 -> {mb:8, out:4} on 32 cores (x: 32 x 16 f32).
    mb coarsens 16 -> 8, out refines 1 -> 4, prod(Nd) = 32 = cores: row 3, 8
    components, M = 32/8 = 4, K = 16/8 = 2. Group k: producers 2k, 2k+1,
    consumers 4k..4k+3. A partial is 2 x 16 = 32 elements, each consumer gets
    32/M = 8 elements = 32 B from each producer. Group 0's consumers 0 and 1 are
    producers (receive 32 B), 2 and 3 receive 64 B: 192 B; groups 1..7 share no
    core between the roles: 4 * 64 = 256 B each. Total 192 + 7 * 256 = 1984 B;
    max received 64; max sent 4 * 32 = 128 (cores 2..15)."""
    _, records = _run("p07_all_to_all")
    r = _exchange(records)
    assert (r.op, r.groups, r.M, r.K) == ("inter_tile_all_to_all", 8, 4, 2)
    assert (r.sent, r.received, r.bytes) == (128, 64, 1984)
    assert "split_dimensions = [1]" in r.ktir and "concat_dimensions = [0]" in r.ktir
    assert r.verifies is True and r.reproduces_destination is True


def test_collectives_partial_all_reduce_across_ctas_h200():
    """matmul split on K over 4 CTAs is Partial("sum") on ks; the reshard to an
    unsplit layout on the same mesh completes it. Tables: 4 source holders of the
    one region, told apart by the partial axis (Ns 4 -> Nd 1, coarsened): the
    gather over it is a reduce (seed §4), 1 group, consumers = producers (an
    all-reduce), M = 1, K = 4. A partial is 16 x 32 f32 = 2048 B; each CTA
    receives the 3 others': 6144 B; 4 * 6144 = 24576 B. H200 states no
    inter-CTA exchange bandwidth: the time is unavailable."""
    result, records = _run("partial_all_reduce")
    r = _exchange(records[1:])  # a and b are both loaded
    assert (r.op, r.groups, r.M, r.K) == ("inter_tile_reduce", 1, 1, 4)
    assert (r.sent, r.received, r.bytes) == (6144, 6144, 24576)
    assert r.verifies is True and r.reproduces_destination is True
    assert "arith.addf" in r.ktir and "identity(" in r.ktir
    assert r.time_ns is None and "states no exchange bandwidth between 'cta'" in r.time
    summary = result.function.get_metadata(CollectivesSummaryMetadata)
    assert summary.time_ns is None and summary.bytes == 24576


def test_collectives_s7_2_ragged_pair_is_insufficient_information():
    """Ns = 2 -> Nd = 3 on one axis: fanin per destination slice is [1, 2, 1]
    (seed §7.2), non-uniform, so the classifier answers insufficient-information
    and nothing is priced."""
    _, records = _run("ragged_pair")
    r = _exchange(records)
    assert r.verdict == "insufficient-information" and r.op is None
    assert "ragged axis d0" in r.reason and r.bytes == 0


def test_collectives_bad_input_is_a_finding_naming_file_line_col():
    """A strided share and a Dynamic() placement cannot be tabled: one finding
    each naming the reshard's file:line:col and why; the gather beside them
    (4 pieces of 4 f32 to all 4 cores: each receives 3 * 16 = 48 B) still
    reports."""
    result, records = _run("unformable")
    verdicts = [r.verdict for r in records]
    assert verdicts == ["not-inter-tile", "unformable", "unformable", "op"]
    strided, undecided = records[1].findings[0], records[2].findings[0]
    assert "unformable.py:24:" in strided and "strided share" in strided
    assert "unformable.py:25:" in undecided and "Dynamic()" in undecided
    assert (records[3].op, records[3].received, records[3].bytes) == ("inter_tile_gather", 48, 192)
    text = render_analysis(result).text
    assert text.count("# collectives finding: ") == 2
    assert all("\n" not in f for f in result.function.get_metadata(
        CollectivesSummaryMetadata).findings)


def test_collectives_render_comment_summary_and_json_ktir():
    """Rendered like every family: the summary line, one comment per Reshard,
    and the KTIR text under the call's records in --json (schema-valid)."""
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--collectives",
                          str(PROGRAMS / "s74_all_to_all.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "# collectives reshards=2 ops=inter_tile_all_to_all:1,not-inter-tile:1 bytes=1536 " \
        "time-ns=unavailable" in out.stdout
    assert "collectives op=inter_tile_all_to_all groups=8 M=4 K=4 sent=48 received=48 " \
        "bytes=1536 verifies=true reproduces=true time-ns=unavailable" in out.stdout
    out = subprocess.run([sys.executable, "-m", "tilefoundry", "analyze", "--collectives", "--json",
                          str(PROGRAMS / "s74_all_to_all.py")], capture_output=True, text=True)
    report = json.loads(out.stdout)
    rows = [c for c in report["calls"] if c.get("collectives", {}).get("ktir")]
    assert len(rows) == 1 and "ktdp.inter_tile_all_to_all" in rows[0]["collectives"]["ktir"]
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    schema = json.loads(files("tilefoundry.schemas").joinpath("analyze.schema.json").read_text())
    jsonschema.validate(report, schema)


def test_collectives_pricing_and_ideal_time_rules():
    """price(): gather moves whole partials to every other consumer; ceil_ns is
    the exact ceiling of bytes * 1e9 / bandwidth (3 B at 2 B/s -> 1.5 s)."""
    plan = Planned("gather", {0: (0, 1)}, {0: (0, 1, 2)}, {}, (3,), (6,))
    sent, received = price(plan, 16)  # 3 f16 elements = 6 B per partial
    assert received == {0: 6, 1: 6, 2: 12} and sent == {0: 12, 1: 12}
    assert ceil_ns(3, 2) == 1_500_000_000 and ceil_ns(1, 3) == 333_333_334


def test_collectives_partial_to_split_is_reduce_scatter():
    """The same split-K Partial completed to (16 @ ks, 32): d0 refines 1 -> 4, the
    partial axis coarsens 4 -> 1, prod(Nd) = 4 = CTAs: the classifier's row 3
    all-to-all concatenating only the partial axis is a reduce_scatter (seed §5),
    scatter_dimensions = [0]; 1 group, M = K = 4. Each CTA receives a quarter of
    the 16 x 32 f32 partial (512 B) from each of the 3 others: 1536 B; 6144 B."""
    _, records = _run("partial_reduce_scatter")
    r = _exchange(records[1:])
    assert (r.op, r.groups, r.M, r.K) == ("inter_tile_reduce_scatter", 1, 4, 4)
    assert (r.sent, r.received, r.bytes) == (1536, 1536, 6144)
    assert "scatter_dimensions = [0]" in r.ktir and "-> tensor<4x32xf32>" in r.ktir
    assert r.verifies is True and r.reproduces_destination is True


def test_collectives_storage_only_reshard_is_no_op():
    """p01's last reshard keeps the layout and changes rmem -> gmem: every CTA
    already holds its destination region (seed §7.3 row 1, no op needed)."""
    module, function = load_selection(str(DATA / "programs" / "p01_rownorm_mesh.py")
                                      + ":RowNormTiles")
    result = analyze(module, function, analysis="collectives")
    calls = [n for n in iter_nodes(result.function.body)
             if isinstance(n, Call) and isinstance(n.op, Reshard)]
    last = calls[-1].get_metadata(CollectivesMetadata)
    assert (last.verdict, last.op, last.bytes, last.ktir) == ("no-op", None, 0, None)


def test_collectives_levels_finer_never_cut_coarser_must_agree():
    """companions §2.7: at cta the thread splits are inside a participant, so CTA c
    holds columns [256c, 256c + 256) of all 8 rows, then rows [2c, 2c + 2) of all
    columns: d0 refines 1 -> 4, d1 coarsens 4 -> 1, 4 = CTAs: all_to_all, 1
    group, M = K = 4; a partial is 8 x 256 f32 = 8192 B, each CTA gets a quarter
    (2048 B) from each of the 3 others: 6144 B, 24576 B in all. At thread the
    CTA cut differs between the sides: unformable, naming the coarser level."""
    module, function = load_selection(str(PROGRAMS / "two_levels.py"))
    for level, expected in (("cta", "op"), ("thread", "unformable")):
        result = analyze(module, function, analysis="collectives", level=level)
        calls = [n for n in iter_nodes(result.function.body)
                 if isinstance(n, Call) and isinstance(n.op, Reshard)]
        r = calls[-1].get_metadata(CollectivesMetadata)
        assert r.verdict == expected
        if level == "cta":
            assert (r.op, r.groups, r.M, r.K) == ("inter_tile_all_to_all", 1, 4, 4)
            assert (r.received, r.bytes) == (6144, 24576)
        else:
            assert "two_levels.py:23:" in r.findings[0]
            assert "coarser than 'thread'" in r.findings[0]


def test_collectives_ideal_time_where_the_target_states_the_bandwidth():
    """A target stating 3 GB/s per core (a test subclass; no shipped document
    publishes one): the §7.4 op's busiest core moves 48 B, ceil(48e9 / 3e9) =
    16 ns; the function's time is that reshard's."""
    from dataclasses import dataclass

    from tilefoundry import api
    from tilefoundry.target import MultiCoreTarget
    from tilefoundry.target.facts import ExchangeFacts

    @dataclass(frozen=True, repr=False)
    class RatedCores(MultiCoreTarget):
        def _exchange(self, query):
            return ExchangeFacts("core", 3_000_000_000)

    run = api.analyze(str(PROGRAMS / "s74_all_to_all.py"), families=("collectives",),
                      target=RatedCores())
    calls = [n for n in iter_nodes(run.function.body)
             if isinstance(n, Call) and isinstance(n.op, Reshard)]
    record = calls[-1].get_metadata(CollectivesMetadata)
    assert (record.time_ns, record.time) == (16, "")
    assert run.function.get_metadata(CollectivesSummaryMetadata).time_ns == 16
