"""analysis §2.2: ownership is enforced against what reached the IR -- the
snapshot that says which records a family added, replaced or removed."""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.analysis.check import RecordsSnapshot
from tilefoundry.ir.expr import Var
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.ir.tensor_type import TensorType


@dataclass(frozen=True)
class AMeta(IRMetadata):
    value: int = 0


@dataclass(frozen=True)
class BMeta(IRMetadata):
    value: int = 0


def _nodes(count: int = 3) -> list:
    type_ = TensorType((4,), "f32")
    nodes = [Var(f"x{k}", type_) for k in range(count)]
    for node in nodes:
        node.with_metadata(AMeta(1))
    return nodes


def test_analysis_2_2_snapshot_untouched_nodes_have_no_changes():
    nodes = _nodes()
    nodes[1].with_metadata(BMeta(2))
    assert RecordsSnapshot(nodes).changes() == []


def test_analysis_2_2_snapshot_reattaching_the_same_record_is_no_change():
    nodes = _nodes()
    snapshot = RecordsSnapshot(nodes)
    record = nodes[2].get_metadata(AMeta)
    del nodes[2]._metadata[AMeta]
    nodes[2].with_metadata(record)  # the same object, now last in its map
    assert snapshot.changes() == []


def test_analysis_2_2_snapshot_states_each_change_on_its_node():
    nodes = _nodes()
    snapshot = RecordsSnapshot(nodes)
    nodes[0].with_metadata(AMeta(1))  # equal value, new record: a replacement
    del nodes[1]._metadata[AMeta]
    nodes[2].with_metadata(BMeta(3))
    assert snapshot.changes() == [
        (nodes[0], AMeta, "replaced"), (nodes[1], AMeta, "removed"), (nodes[2], BMeta, "added"),
    ]


def test_analysis_2_2_snapshot_counts_a_record_moved_to_the_next_node():
    # node 0's BMeta moves to the front of node 1's records: the flat class
    # and record lists read the same, only the per-node counts tell
    nodes = _nodes(2)
    moved = BMeta(4)
    nodes[0].with_metadata(moved)
    snapshot = RecordsSnapshot(nodes)
    del nodes[0]._metadata[BMeta]
    kept = nodes[1].get_metadata(AMeta)
    del nodes[1]._metadata[AMeta]
    nodes[1].with_metadata(moved).with_metadata(kept)
    assert snapshot.changes() == [(nodes[0], BMeta, "removed"), (nodes[1], BMeta, "added")]
