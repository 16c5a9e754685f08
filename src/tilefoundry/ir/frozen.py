"""``@frozen_record``: the frozen dataclass of IR values, without the code that
``dataclass(frozen=True)`` writes for every class.

``dataclass(frozen=True)`` compiles six methods per class (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``);
for the ~80 op classes and the IR's value classes that compilation was most
of the package's import time. A frozen record lets ``dataclass`` write only
``__init__`` and shares the other five, which read the class's fields:

- ``==`` is True for two instances of one class whose compared fields are
  equal, as a tuple (``NotImplemented`` against any other class); ``hash`` is
  that of the tuple of hashed fields; ``repr`` is ``Class(field=value, ...)``.
  Each is dataclass's own rule, so values hash, compare and print as before.
- Assigning or deleting an attribute of an instance raises
  ``dataclasses.FrozenInstanceError``, as a frozen dataclass does. ``__init__``
  assigns each field once; a field already set, or any other name, is refused
  (a plain subclass may set names of its own, as with dataclass).

A record is a (not frozen) dataclass: ``dataclasses.fields``, ``replace`` and
``is_dataclass`` work as before. A method the class body defines is kept, as
dataclass keeps it. Every dataclass base of a record must be a record, and a
subclass of a record is declared with ``@frozen_record`` too (``dataclass``
refuses to mix frozen and non-frozen bases). Where that cannot be asked (a
class others subclass with ``@dataclass(frozen=True)``), ``@frozen_dataclass``
is a real frozen dataclass that shares only repr, eq and hash (three of the
six methods).
"""
from __future__ import annotations

import dataclasses
import reprlib
from operator import attrgetter

__all__ = ["HASH_KEPT", "frozen_dataclass", "frozen_record"]


def frozen_record(cls=None, /, *, eq: bool = True, repr: bool = True):  # noqa: A002 (dataclass's name)
    """``@dataclass(frozen=True, eq=eq, repr=repr)``, as described above."""

    def wrap(cls):
        return _make_record(cls, eq, repr)

    return wrap if cls is None else wrap(cls)


def frozen_dataclass(cls=None, /, *, eq: bool = True, repr: bool = True):  # noqa: A002
    """A real ``@dataclass(frozen=True, eq=eq, repr=repr)`` (dataclass writes
    ``__init__``, ``__setattr__`` and ``__delattr__``) sharing repr, eq and
    hash: for a class that is subclassed with ``@dataclass(frozen=True)``
    (a target, a metadata record) or promised to be a frozen dataclass."""

    def wrap(cls):
        return _make_frozen_dataclass(cls, eq, repr)

    return wrap if cls is None else wrap(cls)


class _RecordSpec:
    """What the shared methods read of one record class."""

    __slots__ = ("owner", "init_names", "compare_key", "hash_key", "repr_names")

    def __init__(self, owner: type, fields: tuple):
        self.owner = owner
        self.init_names = frozenset(f.name for f in fields)
        self.compare_key = _tuple_getter([f.name for f in fields if f.compare])
        self.hash_key = _tuple_getter([f.name for f in fields
                                       if (f.compare if f.hash is None else f.hash)])
        self.repr_names = tuple(f.name for f in fields if f.repr)


def _tuple_getter(names: list[str]):
    """``obj -> (obj.<name>, ...)``, always a tuple (attrgetter gives a bare
    value for one name; dataclass compares and hashes one-field tuples)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return lambda obj: ()


def _make_record(cls, eq: bool, repr: bool):  # noqa: A002
    own = dict(cls.__dict__)  # the body as written, before dataclass adds to it
    for name in ("__setattr__", "__delattr__"):
        if name in own:  # dataclass(frozen=True) refuses them too
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    cls = dataclasses.dataclass(cls, eq=False, repr=False)
    cls.__setattr__ = _assign_once
    cls.__delattr__ = _refuse_delete
    return _share_methods(cls, own, eq, repr)


def _make_frozen_dataclass(cls, eq: bool, repr: bool):  # noqa: A002
    own = dict(cls.__dict__)
    return _share_methods(dataclasses.dataclass(cls, frozen=True, eq=False, repr=False), own, eq, repr)


def _share_methods(cls, own: dict, eq: bool, repr: bool):  # noqa: A002
    """Install the shared repr, eq and hash where dataclass would write its own:
    never over a method the body defines, and the field hash unless the body
    defines ``__hash__`` (an ``__eq__`` alone leaves it to dataclass's rule)."""
    cls.__record_spec__ = _RecordSpec(cls, dataclasses.fields(cls))
    class_hash = own.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (class_hash is dataclasses.MISSING
                         or (class_hash is None and "__eq__" in own))
    if repr and "__repr__" not in own:
        cls.__repr__ = _record_repr
    if eq:
        if "__eq__" not in own:
            cls.__eq__ = _record_eq
        if not explicit_hash:
            cls.__hash__ = _record_hash
    if "__getstate__" not in own:
        cls.__getstate__ = _record_state
    return cls


def _assign_once(self, name, value):
    spec = self.__record_spec__
    if name in spec.init_names:
        if name in self.__dict__:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)  # __init__ setting a field
    elif type(self) is spec.owner:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    else:  # a plain subclass's own attribute, as a frozen dataclass allows
        object.__setattr__(self, name, value)


def _refuse_delete(self, name):
    spec = self.__record_spec__
    if type(self) is spec.owner or name in spec.init_names:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _record_eq(self, other):
    if other.__class__ is self.__class__:
        key = self.__record_spec__.compare_key
        return key(self) == key(other)
    return NotImplemented


HASH_KEPT = "_hash"  # where a record keeps its hash once computed (never pickled)


def _record_hash(self):
    # kept once computed: a record's fields never change, and records key the
    # analyses' memos, where the tuple hash walked every nested record per lookup
    found = self.__dict__.get(HASH_KEPT)
    if found is None:
        found = hash(self.__record_spec__.hash_key(self))
        object.__setattr__(self, HASH_KEPT, found)
    return found


def _record_state(self):
    """The instance's state without its kept hash: a string's hash differs from
    process to process, so a pickled or copied record computes its own."""
    state = self.__dict__
    if HASH_KEPT in state:
        state = {k: v for k, v in state.items() if k != HASH_KEPT}
    return state


@reprlib.recursive_repr()
def _record_repr(self):
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_spec__.repr_names)
    return f"{self.__class__.__qualname__}({shown})"
