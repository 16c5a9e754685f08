"""The Target base contract (companions.md §6.1, spec analysis.md §2.2).

A Target is an immutable, hashable value naming one machine. Analysis reads it
only through frozen Facts aggregates (``get_facts``) and obtains its analyses
through ``get_analyzer``; it never branches on a concrete Target class.

Analyzers by inheritance
------------------------
The Analyzer descriptor class belongs to ``tilefoundry.analysis``, a floor
above this one. To keep imports running one way, the base class names each
standard analyzer by a *dotted path string* ``"package.module:ATTRIBUTE"`` in
the class attribute ``analyzer_paths`` and imports it only when
``get_analyzer`` is called. A subclass adjusts the table by declaring its own
``analyzer_paths`` with just the entries it changes; the tables of the MRO are
merged (nearest class wins), so every other selector is inherited:

* a string entry overrides the analyzer for that selector;
* ``None`` refuses the selector on this target (and its subclasses);
* any other object is taken as the analyzer itself (handy in tests).

A subclass may equally override the ``get_analyzer`` method and delegate the
rest to ``super().get_analyzer(selector)``.
"""
from __future__ import annotations

import importlib
from typing import Any, ClassVar, Mapping

from tilefoundry.errors import AnalysisError, SelectionError, TileFoundryError

__all__ = [
    "STANDARD_ANALYZERS",
    "AnalyzerUnavailableError",
    "NoFactsProjectionError",
    "Target",
    "TargetError",
    "TopologyValidationError",
    "UnknownTargetError",
]


class TargetError(TileFoundryError):
    """Base of every refusal a Target states."""


class NoFactsProjectionError(AnalysisError, TargetError, LookupError):
    """``get_facts`` was asked for an aggregate this target does not project."""


class AnalyzerUnavailableError(AnalysisError, TargetError, LookupError):
    """``get_analyzer`` has no analyzer for a selector, or this target refuses it."""


class TopologyValidationError(TargetError, ValueError):
    """A program topology level or extent this target cannot run."""


class UnknownTargetError(SelectionError, TargetError, ValueError):
    """A target constructor or the CLI named a device/identity that does not exist."""


#: The standard analyzers every Target inherits, selector -> "module:attribute".
STANDARD_ANALYZERS: Mapping[str, str] = {
    "compute-cost": "tilefoundry.analysis.compute_cost:ANALYZER",
    "memory": "tilefoundry.analysis.memory:ANALYZER",
    "roofline": "tilefoundry.analysis.roofline:ANALYZER",
    "performance": "tilefoundry.analysis.performance:ANALYZER",
    "collectives": "tilefoundry.analysis.collectives:ANALYZER",
    "estimate": "tilefoundry.analysis.estimate:ANALYZER",
}


class Target:
    """Base of every target. Concrete targets are frozen dataclasses.

    Class variables:
        name: registration name (``cuda``, ``amx``, ``cpu``), used in messages.
        topology_levels: supported topology levels, coarse to fine.
        analyzer_paths: selector -> analyzer path / None (refused) / object;
            merged along the MRO, see the module docstring.
    """

    name: ClassVar[str] = "target"
    topology_levels: ClassVar[tuple[str, ...]] = ()
    analyzer_paths: ClassVar[Mapping[str, Any]] = STANDARD_ANALYZERS
    #: Whether a symbolic (non-int) extent is accepted until it becomes concrete.
    symbolic_extents: ClassVar[bool] = False

    # ------------------------------------------------------------------ identity

    @property
    def identity(self) -> str:
        """The device document id for a document-backed target, else ``name``."""
        return self.name

    @classmethod
    def available(cls) -> tuple["Target", ...]:
        """Every value of this class that can be constructed, sorted by repr."""
        try:
            return (cls(),)
        except TypeError:
            return ()

    def _label(self) -> str:
        return f"{type(self).__name__} ({self.name})"

    # --------------------------------------------------------------------- facts

    def _facts_projections(self) -> dict[type, Any]:
        """Facts type -> ``callable(query)``; subclasses extend via super()."""
        if self.topology_levels:
            from tilefoundry.target.facts import TopologyLimitFacts

            return {TopologyLimitFacts: self._topology_limit_facts}
        return {}

    def get_facts(self, facts_type: type, query: object = None) -> Any:
        """The frozen aggregate ``facts_type`` for this target, or fail at once.

        ``query`` selects within an aggregate family; only ``TopologyLimitFacts``
        takes one (the topology level). There is no fallback: an aggregate this
        target does not project raises ``NoFactsProjectionError``.
        """
        projector = self._facts_projections().get(facts_type)
        type_name = getattr(facts_type, "__name__", repr(facts_type))
        if projector is None:
            raise NoFactsProjectionError(
                f"{self._label()}: no Facts projection for '{type_name}'")
        key = (self, facts_type, query)
        cached = _FACTS_CACHE.get(key)
        if cached is None:
            try:
                cached = projector(query)
            except TileFoundryError:
                raise  # the projection's own refusal (a level the target has not)
            except (ValueError, TypeError, KeyError) as exc:
                # a document whose facts do not make the aggregate (a fact it
                # needs removed, a value out of a field's range): the documents'
                # fault, named, never an internal error
                what = f"no fact {exc}" if isinstance(exc, KeyError) else str(exc)
                raise TargetError(
                    f"{self._label()}: its hardware documents do not make a valid "
                    f"'{type_name}' ({what}); correct the fact in its document "
                    "(`tilefoundry target show` lists them)") from None
            if not isinstance(cached, facts_type):  # a bug in a projection
                raise TypeError(f"{self._label()}: projection for '{type_name}' "
                                f"returned {type(cached).__name__}")
            _FACTS_CACHE[key] = cached
        return cached

    def _no_query(self, facts_type: type, query: object) -> None:
        if query is not None:
            raise TargetError(
                f"{self._label()}: '{facts_type.__name__}' takes no query (got {query!r})")

    def _topology_limit_facts(self, query: object) -> Any:
        from tilefoundry.target.facts import TopologyLimitFacts

        if not isinstance(query, str):
            raise TargetError(
                f"{self._label()}: 'TopologyLimitFacts' needs the topology level as its "
                f"query; supported levels are {self.topology_levels}")
        self._check_level(query)
        return TopologyLimitFacts(query, self._max_static_extent(query))

    # ------------------------------------------------------------------ topology

    def _max_static_extent(self, level: str) -> int | None:
        """The finite static limit of a supported level, or None (subclass hook)."""
        return None

    def _check_level(self, level: str) -> None:
        if level not in self.topology_levels:
            raise TopologyValidationError(
                f"{self._label()}: unsupported topology level '{level}'; "
                f"supported levels are {self.topology_levels}")

    def topology_limit(self, level: str) -> int | None:
        """The scheduling limit of ``level`` (CUDA ``cta``: SM count), or None."""
        self._check_level(level)
        return self._max_static_extent(level)

    def validate_program_topology(self, level: str, extent: object) -> None:
        """Refuse a program topology this target cannot run (companions §6.1)."""
        self._check_level(level)
        limit = self._max_static_extent(level)
        if isinstance(extent, bool) or not isinstance(extent, int):
            if self.symbolic_extents:
                return  # checked again once the extent is concrete
            raise TopologyValidationError(
                f"{self._label()}: topology '{level}' extent {extent} must be a static integer")
        if extent < 1:
            raise TopologyValidationError(
                f"{self._label()}: topology '{level}' extent {extent} must be positive")
        if limit is not None and extent > limit:
            raise TopologyValidationError(
                f"{self._label()}: topology '{level}' extent {extent} must satisfy "
                f"1 <= extent <= {limit}")

    # ----------------------------------------------------------------- analyzers

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("analyzer_paths")
        if own is not None:
            merged: dict[str, Any] = {}
            for base in reversed(cls.__mro__[1:]):
                table = base.__dict__.get("analyzer_paths")
                if table is not None:
                    merged.update(table)
            merged.update(own)
            cls.analyzer_paths = dict(merged)

    def get_analyzer(self, selector: str) -> Any:
        """The Analyzer this target uses for ``selector`` (imported on first call)."""
        table = type(self).analyzer_paths
        if selector not in table:
            raise AnalyzerUnavailableError(f"{self._label()}: no analyzer for '{selector}'")
        entry = table[selector]
        if entry is None:
            raise AnalyzerUnavailableError(
                f"{self._label()}: refuses analyzer '{selector}' on this hardware")
        if not isinstance(entry, str):
            return entry
        module_name, _, attribute = entry.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if not exc.name or not (module_name == exc.name
                                    or module_name.startswith(exc.name + ".")):
                raise  # the analyzer module exists but its own import is broken
            raise AnalyzerUnavailableError(
                f"{self._label()}: analyzer '{selector}' is declared at '{entry}' but "
                f"module '{exc.name}' cannot be imported") from None
        try:
            return getattr(module, attribute or "ANALYZER")
        except AttributeError:
            raise AnalyzerUnavailableError(
                f"{self._label()}: analyzer '{selector}' is declared at '{entry}' but "
                f"'{module_name}' has no attribute '{attribute or 'ANALYZER'}'") from None

    def analyzer_selectors(self) -> tuple[str, ...]:
        """Selectors this target offers (refused ones excluded), sorted."""
        return tuple(sorted(s for s, e in type(self).analyzer_paths.items() if e is not None))


#: Projection cache keyed by (target value, Facts type, query); values are frozen.
_FACTS_CACHE: dict[tuple[Any, type, object], Any] = {}
