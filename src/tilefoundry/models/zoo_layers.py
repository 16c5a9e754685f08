"""What the zoo's model files share: binding a root's layer children by name.

A whole-model ``decode_step`` calls each layer child by its bare name
(authoring §2.8: a child is called through the class-body attribute it is
attached under), so a root holding LAYERS layers binds ``layer0`` ...
``layer{n-1}`` in its class body; ``attach_layers(locals(), Layer, LAYERS)``
does that in one line. Every name is bound to the one ``Layer`` value: the
``@module`` decorator attaches a renamed copy under each attribute and points
each call at its own copy (§2.2, §2.8), and the calls, made against one
callee, are elaborated once instead of once per layer.
"""
from __future__ import annotations

__all__ = ["attach_layers", "lazy_roots", "published_root"]


def attach_layers(namespace: dict, layer, count: int) -> None:
    """Bind ``layer{i}`` for i < ``count`` in ``namespace`` (a class body's
    ``locals()``: the class namespace itself) to ``layer``, or to ``layer(i)``
    when it is a function of the index (alternating layer kinds)."""
    from tilefoundry import limits
    from tilefoundry.ir.core.module import Module

    if isinstance(count, int):  # a count past the limit is refused before one name is bound
        limits.check("CHILDREN", count, f"{count:,} layers attached to one root")
    for index in range(count):
        namespace[f"layer{index}"] = layer if isinstance(layer, Module) else layer(index)


def published_root(module, name: str):
    """``module`` (a root a factory has just built, held by nothing else) under
    its published ``name``. ``Module.renamed`` copies the whole tree so the
    original stays usable; a factory's class-built root is never used again,
    so re-creating the root node alone (children and functions re-owned by it)
    gives the same tree at no copy."""
    import dataclasses

    return dataclasses.replace(module, name=name)


def lazy_roots(namespace: dict, factories: dict):
    """A model file's module-level ``__getattr__`` and ``__dir__`` (PEP 562)
    for roots built when first asked for: ``factories`` maps each root's name
    to a function of no arguments that builds it. A selection uses one root of
    the three a file publishes, so loading it builds that one alone; the built
    root is kept in ``namespace`` (the module's globals), so it is built once."""

    def __getattr__(name: str):
        factory = factories.get(name)
        if factory is None:
            raise AttributeError(f"module {namespace.get('__name__')!r} has no attribute {name!r}")
        value = namespace[name] = factory()
        return value

    def __dir__():
        return sorted(set(namespace) | set(factories))

    return __getattr__, __dir__
