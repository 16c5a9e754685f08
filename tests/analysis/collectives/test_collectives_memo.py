"""Issue 37 item 8: the collectives family answers a whole model by structure
(docs/architecture.md, "A whole model is answered by structure"). A Reshard's
record is derived once per (source type, destination type) in a run and every
renamed copy takes it with its own location written in; each memoised record
must be exactly the record derived afresh for its call. Every Reshard of every
program here is checked against the unmemoised derivation."""
from __future__ import annotations

import os

import pytest

from tests.analysis.analysis_helpers import load
from tests.conftest import DATA, PROGRAMS, golden_manifest
from tilefoundry.analysis import collectives as coll
from tilefoundry.analysis.analyze import analyze
from tilefoundry.dsl.loader import load_selection

# one structure written twice over operands of one type: the load, an
# unformable strided share and a gather repeat under other names on other lines,
# so the second unformable finding must name its own line and value
TWICE = """
from tilefoundry.ir.types.shard import Layout, ShardLayout
from tilefoundry.target import MultiCoreTarget

LEVELS = (Topology("core", 4),)
CORES = Mesh(LEVELS, Layout((4,), (1,)), ("c",))
STRIDED = ShardLayout(Layout((4, 4)), (Split(1),), CORES)


@module(entry="twice", target=MultiCoreTarget(), topologies=LEVELS)
class Twice:
    @func
    def twice(x: Tensor[(16,), "f32"], y: Tensor[(16,), "f32"]):
        with CORES as cores:
            px = tf.reshard(x, (16 @ cores.c,), "smem")
            py = tf.reshard(y, (16 @ cores.c,), "smem")
            sx = tf.reshard(px, layout=STRIDED, storage="smem")
            sy = tf.reshard(py, layout=STRIDED, storage="smem")
            wx = tf.reshard(px, (16,), "smem")
            wy = tf.reshard(py, (16,), "smem")
            return sx, sy, wx, wy
"""


@pytest.fixture
def checked(monkeypatch):
    """Every record checked against a fresh derivation; counts reshards, memo hits
    and distinct structures."""
    seen = {"reshards": 0, "hits": 0, "structures": set()}
    memoised = coll._Records.record

    def record(self, call):
        before = len(self.by_types)
        got = memoised(self, call)
        fresh = coll.fresh_record(call, self.level)
        assert got == fresh, (call, got, fresh)
        seen["reshards"] += 1
        seen["hits"] += len(self.by_types) == before
        seen["structures"].add((call.args[0].type, call.type))
        return got

    monkeypatch.setattr(coll._Records, "record", record)
    return seen


def _reshard_records(function):
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import Call
    from tilefoundry.ops.sharding import Reshard

    return [(n, n.get_metadata(coll.CollectivesMetadata)) for n in iter_nodes(function.body)
            if isinstance(n, Call) and isinstance(n.op, Reshard)]


def test_issue_37_8_a_renamed_copy_takes_the_record_with_its_own_location(tmp_path, checked):
    module, function = load(tmp_path, TWICE, "Twice")
    result = analyze(module, function, analysis="collectives")
    # three structures written twice: each second one is a hit
    assert (checked["reshards"], len(checked["structures"]), checked["hits"]) == (6, 3, 3)
    pairs = _reshard_records(result.function)
    unformable = [(call, r) for call, r in pairs if r.verdict == "unformable"]
    assert len(unformable) == 2
    (_, a), (_, b) = unformable
    assert a.reason == b.reason and a.findings != b.findings
    assert "reshard 'sx'" in a.findings[0] and "reshard 'sy'" in b.findings[0]
    for call, record in unformable:
        (finding,) = record.findings
        assert finding.startswith(coll._where(call) + ": collectives: tables cannot be formed")
        assert coll._HERE not in finding
    summary = result.function.get_metadata(coll.CollectivesSummaryMetadata)
    assert summary.findings == a.findings + b.findings


def test_issue_37_8_memoised_records_equal_fresh_ones_on_a_model_layer(checked):
    """A placed Llama-3-8B layer: its projections repeat one structure."""
    from tilefoundry.models import MODELS

    (model,) = [m for m in MODELS if m.name == "llama3-8b"]
    (selection,) = [s for s in model.selections if s.selector == "Llama3_8B_H200.layer0"]
    module, function = load_selection(model.source_arg(selection))
    analyze(module, function, analysis="collectives", dims=selection.dim_map())
    assert checked["hits"] > 0
    assert checked["hits"] == checked["reshards"] - len(checked["structures"])


VALID = golden_manifest()["valid"]


@pytest.mark.parametrize("entry", VALID, ids=[e["stem"] for e in VALID])
def test_issue_37_8_memoised_records_equal_fresh_ones_on_golden_programs(entry, checked):
    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    try:
        module, function = load_selection(f"{entry['source']}:{entry['selector']}")
        dims = {k: int(v) for k, v in entry["dims"].items()} or None
        analyze(module, function, analysis="collectives", dims=dims)
    finally:
        os.chdir(cwd)


COLLECTIVES = sorted((DATA / "collectives").glob("*.py"))


@pytest.mark.parametrize("path", COLLECTIVES, ids=[p.stem for p in COLLECTIVES])
def test_issue_37_8_memoised_records_equal_fresh_ones_on_collectives_programs(path, checked):
    module, function = load_selection(str(path))
    analyze(module, function, analysis="collectives")
    assert checked["reshards"] > 0
