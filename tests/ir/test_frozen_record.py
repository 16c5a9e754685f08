"""``@frozen_record`` and ``@frozen_dataclass`` behave as ``@dataclass(frozen=True)``:
each case builds the same class both ways and compares what they do."""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import ClassVar  # noqa: F401 (dataclass reads "ClassVar[str]" in the bodies through it)

import pytest

from tilefoundry.ir.frozen import frozen_dataclass, frozen_record

SHARING = [frozen_record, frozen_dataclass]


def BODY(**more):
    """A fresh class body (dataclass fills in its Field objects, so none is shared)."""
    return {
        "__annotations__": {"kind": "str", "size": "int", "extra": "dict", "note": "str",
                            "label": "ClassVar[str]"},
        "size": 4,
        "extra": field(default_factory=dict, compare=False),
        "note": field(default="", repr=False),
        "label": "twin",
        **more,
    }


def _twins(decorator, body=BODY, **options):
    """(class under test, frozen dataclass) built from one class body."""
    def build(decorate):
        namespace = {"__module__": __name__, "__qualname__": "Twin", **body()}
        return decorate(type("Twin", (), namespace))

    return build(decorator(**options)), build(dataclass(frozen=True, **options))


@pytest.fixture(params=SHARING, ids=lambda d: d.__name__)
def twins(request):
    return _twins(request.param)


def test_fields_defaults_and_init_as_dataclass(twins):
    shared, frozen = twins
    names = lambda cls: [(f.name, f.default, f.compare, f.repr) for f in dataclasses.fields(cls)]
    assert names(shared) == names(frozen)
    assert dataclasses.is_dataclass(shared) and shared.__match_args__ == frozen.__match_args__
    a, b = shared("add", 8, note="n"), frozen("add", 8, note="n")
    assert (a.kind, a.size, a.extra, a.note) == (b.kind, b.size, b.extra, b.note)
    with pytest.raises(TypeError):
        shared("add", 1, {}, "n", "one too many")


def test_eq_hash_and_repr_as_dataclass(twins):
    shared, frozen = twins
    a, b = shared("add", 8, {"x": 1}, "hidden"), frozen("add", 8, {"x": 1}, "hidden")
    assert (a == shared("add", 8, {"y": 2}, "other")) is False  # note is compared
    assert a == shared("add", 8, {"y": 2}, "hidden")  # extra is not
    assert hash(a) == hash(b) == hash(("add", 8, "hidden"))
    assert repr(a) == repr(b) == "Twin(kind='add', size=8, extra={'x': 1})"
    assert (a == "add") is False and a.__eq__(b) is NotImplemented


@pytest.mark.parametrize("decorator", SHARING)
def test_one_and_no_field_compare_as_tuples(decorator):
    one, one_frozen = _twins(decorator, lambda: {"__annotations__": {"value": "float"}})
    nan = float("nan")
    assert (one(nan) == one(nan)) == (one_frozen(nan) == one_frozen(nan)) is True
    assert hash(one(2.0)) == hash(one_frozen(2.0)) == hash((2.0,))
    none, none_frozen = _twins(decorator, dict)
    assert none() == none() and hash(none()) == hash(none_frozen()) == hash(())
    assert repr(none()) == repr(none_frozen()) == "Twin()"


def test_assignment_and_deletion_refused_as_dataclass(twins):
    for cls in twins:
        value = cls("add")
        for name in ("kind", "label", "other"):
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
                setattr(value, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'kind'"):
            del value.kind
        assert value.kind == "add"


def test_plain_subclass_keeps_fields_frozen_and_may_add_its_own(twins):
    for base in twins:
        sub = type("Sub", (base,), {})("add")
        sub.mine = 1
        assert sub.mine == 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            sub.kind = "sub"


@pytest.mark.parametrize("decorator", SHARING)
def test_post_init_replace_and_declared_methods(decorator):
    def post_init(self):
        object.__setattr__(self, "size", self.size * 2)

    shared, frozen = _twins(decorator, lambda: BODY(__post_init__=post_init, __hash__=lambda self: 7,
                                                    __repr__=lambda self: "mine"))
    a, b = shared("add", 3), frozen("add", 3)
    assert a.size == b.size == 6 and repr(a) == repr(b) == "mine" and hash(a) == hash(b) == 7
    assert dataclasses.replace(a, kind="sub").kind == "sub"


@frozen_record
class Kept:
    kind: str
    extra: dict = field(default_factory=dict)


@frozen_dataclass
class KeptDataclass:
    kind: str


def test_records_pickle():
    for value in (Kept("add", {"x": 1}), KeptDataclass("add")):
        assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value


@pytest.mark.parametrize("decorator", SHARING)
def test_declared_eq_still_gets_the_field_hash_and_eq_false_inherits(decorator):
    shared, frozen = _twins(decorator, lambda: BODY(__eq__=lambda self, other: True))
    assert hash(shared("a")) == hash(frozen("a")) == hash(("a", 4, ""))
    shared, frozen = _twins(decorator, eq=False)
    a = shared("a")
    assert a != shared("a") and hash(a) == object.__hash__(a)
    assert (frozen("a") == frozen("a")) is False


@pytest.mark.parametrize("decorator", SHARING)
def test_subclass_extends_fields(decorator):
    @decorator
    class Base:
        kind: str

    @decorator
    class Child(Base):
        size: int = 1

    assert Child("a", 2) == Child("a", 2) != Base("a")
    assert repr(Child("a")).endswith("Child(kind='a', size=1)")


def test_record_and_frozen_dataclass_do_not_mix_but_frozen_dataclass_subclasses_do():
    @frozen_record
    class Record:
        kind: str

    with pytest.raises(TypeError, match="frozen"):
        @dataclass(frozen=True)
        class Mixed(Record):
            pass

    @frozen_dataclass
    class Shared:
        kind: str

    @dataclass(frozen=True)
    class Plain(Shared):
        size: int = 0

    @frozen_dataclass
    class Again(Plain):
        more: int = 0

    assert Shared.__dataclass_params__.frozen and Again.__dataclass_params__.frozen
    assert Again("a") == Again("a") and repr(Again("a")).endswith("Again(kind='a', size=0, more=0)")


@pytest.mark.parametrize("decorator", SHARING)
def test_recursive_repr_is_cut_as_dataclass(decorator):
    for cls in _twins(decorator, lambda: {"__annotations__": {"items": "list"}}):
        value = cls([])
        value.items.append(value)
        assert repr(value) == "Twin(items=[...])"


def test_declaring_setattr_is_refused():
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        frozen_record(type("Bad", (), {"__setattr__": lambda self, n, v: None}))
