"""Target registration: the bare ``@register_target`` decorator.

Registering a class is the only step a custom provider takes (spec §2.2: there
is no analysis registration step). The same class registering again is a no-op;
a different class claiming a registered name fails.

This module knows no target: the built-in targets import it to register, and
the lookups that need every built-in target (``catalog``) load them.
"""
from __future__ import annotations

from tilefoundry.target.base import Target, TargetError

__all__ = ["register_target", "registered_classes"]

_REGISTRY: dict[str, type[Target]] = {}

def register_target(cls: type[Target]) -> type[Target]:
    """Class decorator registering ``cls`` under its ``name`` class variable."""
    if not isinstance(cls, type) or not issubclass(cls, Target):
        raise TargetError(f"register_target: {cls!r} is not a Target subclass")
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name:
        raise TargetError(f"register_target: {cls.__name__} declares no 'name' of its own")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls:
        raise TargetError(
            f"register_target: name '{name}' is already registered to "
            f"{existing.__module__}.{existing.__qualname__}; "
            f"{cls.__module__}.{cls.__qualname__} cannot claim it")
    _REGISTRY[name] = cls
    return cls


def registered_classes() -> dict[str, type[Target]]:
    """Registration name -> class (a copy) of what has registered so far."""
    return dict(_REGISTRY)
