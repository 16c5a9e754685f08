"""The mixin of immutable IR values (types, layouts, meshes, ops, records).

Copying a module tree (``Module.renamed``) must give new graph nodes but may
share every immutable value; sharing them is also what makes it fast.
"""
from __future__ import annotations


class ImmutableValue:
    __slots__ = ()

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self
