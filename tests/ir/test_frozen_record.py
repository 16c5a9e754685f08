"""``@frozen_record`` behaves as ``@dataclass(frozen=True)``: each case builds the
same class both ways and compares what they do."""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from tilefoundry.ir.frozen import frozen_record


def _twins(body, **options):
    """(record class, frozen dataclass class) built from one class body
    (``body()`` gives a fresh namespace: dataclass fills in its Field objects)."""
    def build(decorate):
        namespace = {"__module__": __name__, "__qualname__": "Twin", **body()}
        return decorate(type("Twin", (), namespace))

    return (build(frozen_record(**options)),
            build(dataclass(frozen=True, **options)))


def BODY(**more):
    return {
        "__annotations__": {"kind": "str", "size": "int", "extra": "dict", "note": "str",
                            "label": "ClassVar[str]"},
        "size": 4,
        "extra": field(default_factory=dict, compare=False),
        "note": field(default="", repr=False),
        "label": "twin",
        **more,
    }


RECORD, FROZEN = _twins(BODY)


def _pair(*args, **kwargs):
    return RECORD(*args, **kwargs), FROZEN(*args, **kwargs)


def test_fields_defaults_and_init_as_dataclass():
    record, frozen = _twins(BODY)
    names = lambda cls: [(f.name, f.default, f.compare, f.repr) for f in dataclasses.fields(cls)]
    assert names(record) == names(frozen)
    assert dataclasses.is_dataclass(record) and record.__match_args__ == frozen.__match_args__
    a, b = _pair("add", 8, note="n")
    assert (a.kind, a.size, a.extra, a.note) == (b.kind, b.size, b.extra, b.note)
    with pytest.raises(TypeError):
        record("add", 1, {}, "n", "one too many")


def test_eq_hash_and_repr_as_dataclass():
    a, b = _pair("add", 8, {"x": 1}, "hidden")
    a2, b2 = _pair("add", 8, {"y": 2}, "other")
    assert (a == a2) == (b == b2) is False  # note is compared, extra is not
    a3, b3 = _pair("add", 8, {"y": 2}, "hidden")
    assert a == a3 and b == b3 and hash(a) == hash(b) == hash(("add", 8, "hidden"))
    assert repr(a) == repr(b) == "Twin(kind='add', size=8, extra={'x': 1})"
    assert (a == "add") is False and a.__eq__(b) is NotImplemented


def test_one_and_no_field_compare_as_tuples():
    one_record, one_frozen = _twins(lambda: {"__annotations__": {"value": "float"}})
    nan = float("nan")
    assert (one_record(nan) == one_record(nan)) == (one_frozen(nan) == one_frozen(nan)) is True
    assert hash(one_record(2.0)) == hash(one_frozen(2.0)) == hash((2.0,))
    none_record, none_frozen = _twins(dict)
    assert none_record() == none_record() and hash(none_record()) == hash(none_frozen()) == hash(())
    assert repr(none_record()) == repr(none_frozen()) == "Twin()"


def test_assignment_and_deletion_refused_as_dataclass():
    for value in _pair("add"):
        for name in ("kind", "label", "other"):
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
                setattr(value, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'kind'"):
            del value.kind
    assert _pair("add")[0].kind == "add"


def test_plain_subclass_keeps_fields_frozen_and_may_add_its_own():
    record, frozen = _twins(BODY)
    for base in (record, frozen):
        sub = type("Sub", (base,), {})("add")
        sub.mine = 1
        assert sub.mine == 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            sub.kind = "sub"


def test_post_init_replace_pickle_and_declared_methods():
    def post_init(self):
        object.__setattr__(self, "size", self.size * 2)

    record, frozen = _twins(lambda: BODY(__post_init__=post_init, __repr__=lambda self: "mine",
                                         __hash__=lambda self: 7))
    a, b = record("add", 3), frozen("add", 3)
    assert a.size == b.size == 6 and repr(a) == repr(b) == "mine" and hash(a) == hash(b) == 7
    assert dataclasses.replace(a, kind="sub").kind == "sub"
    kept = Kept("add", {"x": 1})
    assert pickle.loads(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)) == kept


@frozen_record
class Kept:
    kind: str
    extra: dict = field(default_factory=dict)


def test_declared_eq_still_gets_the_field_hash_and_eq_false_inherits():
    record, frozen = _twins(lambda: BODY(__eq__=lambda self, other: True))
    assert hash(record("a")) == hash(frozen("a")) == hash(("a", 4, ""))
    record, frozen = _twins(BODY, eq=False)
    a = record("a")
    assert a != record("a") and hash(a) == object.__hash__(a)
    assert (frozen("a") == frozen("a")) is False


def test_subclass_record_extends_fields_and_dataclass_refuses_mixing():
    base = frozen_record(type("Base", (), {"__annotations__": {"kind": "str"}, "__module__": __name__}))

    @frozen_record
    class Child(base):
        size: int = 1

    assert Child("a", 2) == Child("a", 2) != base("a") and repr(Child("a")).endswith("Child(kind='a', size=1)")
    with pytest.raises(TypeError, match="frozen"):
        @dataclass(frozen=True)
        class Mixed(base):
            pass


def test_recursive_repr_is_cut_as_dataclass():
    for cls in _twins(lambda: {"__annotations__": {"items": "list"}}):
        value = cls([])
        value.items.append(value)
        assert repr(value) == "Twin(items=[...])"


def test_declaring_setattr_is_refused():
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        frozen_record(type("Bad", (), {"__setattr__": lambda self, n, v: None}))
