"""The targets there are: every registered class, the built-in ones loaded
first, and the value named by an identity (companions.md §6.9)."""
from __future__ import annotations

from tilefoundry.errors import did_you_mean
from tilefoundry.target.base import Target, UnknownTargetError
from tilefoundry.target.registry import registered_classes

__all__ = ["available_targets", "registered_targets", "resolve_identity", "load_builtins"]

#: Modules whose import registers the built-in targets.
_BUILTIN_MODULES = (
    "tilefoundry.target.amx.target",
    "tilefoundry.target.cpu",
    "tilefoundry.target.cuda",
    "tilefoundry.target.multicore",
)


def load_builtins() -> None:
    """Import every built-in target's module, which registers it."""
    import importlib

    for module_name in _BUILTIN_MODULES:
        importlib.import_module(module_name)


def registered_targets() -> dict[str, type[Target]]:
    """Registration name -> class (a copy), built-in targets included."""
    load_builtins()
    return registered_classes()


def available_targets() -> tuple[Target, ...]:
    """Every constructible value of every registered class, sorted by constructor."""
    load_builtins()
    values: list[Target] = []
    for cls in registered_targets().values():
        values.extend(cls.available())
    return tuple(sorted(values, key=repr))


def resolve_identity(identity: str) -> Target:
    """The available target whose identity is ``identity``; fails listing them all."""
    values = available_targets()
    for value in values:
        if value.identity == identity:
            return value
    names = sorted(v.identity for v in values)
    # a unique prefix or device part ('h200') is suggested, never the nearest
    # spelling: that of 'nvidia.a100' is another device, which would be a
    # wrong answer, not a typo fixed
    hint = did_you_mean(identity, names, close=False) or ";"
    raise UnknownTargetError(f"unknown target '{identity}'{hint} available: {', '.join(names)}")
