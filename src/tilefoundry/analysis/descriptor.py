"""Target-selected Analyzer descriptors and the contexts analyses read
(analysis §2, §2.2).

A family is one module exposing ``ANALYZER = Analyzer(...)``; a Target names it
in ``analyzer_paths`` and ``analyze`` obtains every root and dependency through
``target.get_analyzer``. There is no registration step beyond the Target class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

from tilefoundry.errors import AnalysisError
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.metadata import IRMetadata

__all__ = [
    "Analyzer",
    "AnalysisInputChecker",
    "NoInputCheck",
    "NO_INPUT_CHECK",
    "AnalyzeContext",
    "AnalysisCheckContext",
    "TargetFactsCheck",
    "family_facts",
]


@runtime_checkable
class AnalysisInputChecker(Protocol):
    """What one analysis requires before any analysis writes: what the target
    must state, what each call must carry, what the function must hold."""

    def check_target(self, ctx: "AnalysisCheckContext") -> None: ...

    def check_call(self, call, ctx: "AnalysisCheckContext") -> None: ...

    def finish(self, function, ctx: "AnalysisCheckContext") -> None: ...


class NoInputCheck:
    """The default checker: requires nothing."""

    def check_target(self, ctx) -> None:
        return None

    def check_call(self, call, ctx) -> None:
        return None

    def finish(self, function, ctx) -> None:
        return None

    def __repr__(self) -> str:
        return "NO_INPUT_CHECK"


def family_facts(family: str, target, facts_type: type):
    """``target.get_facts(facts_type)`` for one family: a target that projects
    no such aggregate (or whose documents do not make it) is refused with the
    family's selector as prefix, the one refusal form every family uses."""
    from tilefoundry.errors import TileFoundryError

    try:
        return target.get_facts(facts_type)
    except TileFoundryError as exc:
        raise AnalysisError(f"{family}: {exc}") from None


class TargetFactsCheck(NoInputCheck):
    """A family that needs one Facts projection of the target and nothing per
    call: ``read(target)`` raises the family's refusal when the target lacks it."""

    def __init__(self, read):
        self.read = read

    def check_target(self, ctx) -> None:
        self.read(ctx.target)

    def __repr__(self) -> str:
        return f"TargetFactsCheck({self.read.__name__})"


NO_INPUT_CHECK = NoInputCheck()


@frozen_record
class Analyzer:
    """Describe one Target-selected analysis.

    Attributes:
        selector: public analysis selector.
        run: ``run(function, ctx: AnalyzeContext) -> None``; attaches records.
        requires: dependency selectors.
        produces: owned metadata classes (the only ones it may change).
        input_checker: what this analysis needs of a program.
    """

    selector: str
    run: Callable
    requires: tuple = ()
    produces: tuple = ()
    input_checker: AnalysisInputChecker = NO_INPUT_CHECK

    def __post_init__(self):
        if not isinstance(self.selector, str) or not self.selector:
            raise AnalysisError(f"Analyzer: selector must be a non-empty str, got {self.selector!r}")
        if not callable(self.run):
            raise AnalysisError(f"Analyzer '{self.selector}': run must be callable, got {self.run!r}")
        requires = tuple(self.requires)
        produces = tuple(self.produces)
        object.__setattr__(self, "requires", requires)
        object.__setattr__(self, "produces", produces)
        for dep in requires:
            if not isinstance(dep, str) or not dep:
                raise AnalysisError(f"Analyzer '{self.selector}': dependency {dep!r} is not a selector")
        if self.selector in requires:
            raise AnalysisError(f"Analyzer '{self.selector}' requires itself")
        repeated = sorted({d for d in requires if requires.count(d) > 1})
        if repeated:
            raise AnalysisError(
                f"Analyzer '{self.selector}' repeats the dependency {repeated[0]!r} in requires"
            )
        for cls in produces:
            if not (isinstance(cls, type) and issubclass(cls, IRMetadata)) or cls is IRMetadata:
                raise AnalysisError(
                    f"Analyzer '{self.selector}' produces {cls!r}, which is not an IRMetadata subclass"
                )
        duplicated = [c for c in produces if produces.count(c) > 1]
        if duplicated:
            raise AnalysisError(
                f"Analyzer '{self.selector}' produces {duplicated[0].__name__} twice"
            )
        checker = self.input_checker if self.input_checker is not None else NO_INPUT_CHECK
        object.__setattr__(self, "input_checker", checker)
        for method in ("check_target", "check_call", "finish"):
            if not callable(getattr(checker, method, None)):
                raise AnalysisError(
                    f"Analyzer '{self.selector}': input_checker has no {method}(...)"
                )


@dataclass
class AnalysisCheckContext:
    """What every input check reads: the program, the machine and the level.
    ``whole`` and ``local`` are CostContexts (as written / one unit of the level);
    costing here is a question, not a record: nothing a context computes is
    attached."""

    module: object
    function: object
    target: object
    level: str | None
    whole: object
    local: object


@dataclass
class AnalyzeContext:
    """What one AnalysisCallable receives beside the normalized Function."""

    module: object
    target: object
    level: str | None
    options: object
    root: object  # Scope
    current: object  # Scope
    topologies: tuple = ()
    bindings: dict = field(default_factory=dict)
    whole: object = None  # CostContext as written
    local: object = None  # CostContext at ``level``
    call_sites: dict = field(default_factory=dict)  # ProgramView.call_sites
