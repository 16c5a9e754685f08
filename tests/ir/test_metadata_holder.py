"""core-ir: a node's records, asked one class at a time or several at once."""
from __future__ import annotations

from dataclasses import dataclass

from tilefoundry.ir.expr import Var
from tilefoundry.ir.metadata import IRMetadata
from tilefoundry.ir.tensor_type import TensorType


@dataclass(frozen=True)
class First(IRMetadata):
    value: int = 0


@dataclass(frozen=True)
class Second(IRMetadata):
    value: int = 0


@dataclass(frozen=True)
class Third(IRMetadata):
    value: int = 0


def test_records_of_follows_the_classes_asked_and_leaves_out_the_absent():
    node = Var("x", TensorType((4,), "f32"))
    second, first = Second(2), First(1)
    node.with_metadata(second).with_metadata(first)
    assert node.records_of((First, Third, Second)) == [first, second]
    assert node.records_of((Third,)) == []
    assert node.records_of(()) == []
    assert [node.get_metadata(cls) for cls in (First, Second)] == node.records_of((First, Second))
