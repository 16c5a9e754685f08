"""Target registration: the bare ``@register_target`` decorator.

Registering a class is the only step a custom provider takes (spec §2.2: there
is no analysis registration step). The same class registering again is a no-op;
a different class claiming a registered name fails.
"""
from __future__ import annotations

from tilefoundry.target.base import Target, TargetError, UnknownTargetError

__all__ = [
    "available_targets",
    "register_target",
    "registered_targets",
    "resolve_identity",
]

_REGISTRY: dict[str, type[Target]] = {}

#: Modules whose import registers the built-in targets.
_BUILTIN_MODULES = (
    "tilefoundry.target.amx.target",
    "tilefoundry.target.cpu",
    "tilefoundry.target.cuda",
    "tilefoundry.target.multicore",
)


def _load_builtins() -> None:
    import importlib

    for module_name in _BUILTIN_MODULES:
        importlib.import_module(module_name)


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


def registered_targets() -> dict[str, type[Target]]:
    """Registration name -> class (a copy), built-in targets included."""
    _load_builtins()
    return dict(_REGISTRY)


def available_targets() -> tuple[Target, ...]:
    """Every constructible value of every registered class, sorted by constructor."""
    _load_builtins()
    values: list[Target] = []
    for cls in _REGISTRY.values():
        values.extend(cls.available())
    return tuple(sorted(values, key=repr))


def resolve_identity(identity: str) -> Target:
    """The available target whose identity is ``identity``; fails listing them all."""
    values = available_targets()
    for value in values:
        if value.identity == identity:
            return value
    names = sorted(v.identity for v in values)
    # only a unique prefix is suggested: the nearest spelling of 'nvidia.a100'
    # is another device, which would be a wrong answer, not a typo fixed
    prefixed = [name for name in names if name.startswith(identity)]
    hint = f"; did you mean '{prefixed[0]}'?" if len(prefixed) == 1 else ";"
    raise UnknownTargetError(f"unknown target '{identity}'{hint} available: {', '.join(names)}")
