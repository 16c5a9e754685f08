"""The Python API (docs/api.md): load a selection, analyse it, and read the
result as the text report, the JSON report or the frozen record dataclasses.

``tilefoundry.analyze`` and ``tilefoundry.load`` resolve here on first use;
every heavy module is imported inside the function that needs it, so ``import
tilefoundry`` stays fast (bench/typecheck_speed.py).

Every argument is checked here, at the public boundary, before any work: one
of a kind or value a call does not take is a ``tilefoundry.errors.ArgumentError``
(a TileFoundryError, like every refusal) naming the argument, what it takes
and what it got, never an AttributeError or TypeError from deep inside. The
``checked_*`` helpers are shared with the execution facade (run, check).
"""
from __future__ import annotations

import copy
import json
from dataclasses import field
from typing import Any, Iterable, Mapping, NamedTuple

from tilefoundry.ir.frozen import frozen_record

__all__ = ["ALL", "FAMILIES", "FIGURES", "Analysis", "CallRecords", "Loaded", "analyze", "families_of",
           "figures", "load", "retarget", "selected", "typed_rendering"]

#: the analysis families, in the order the CLI's flags and the reports list them
FAMILIES = ("compute-cost", "memory", "roofline", "performance", "collectives", "estimate")
#: ``families=ALL`` (``analyze --all``): every family the target serves
ALL = "all"
#: the keys of ``Analysis.figures()``: an ``analyze-rows`` row's figures
FIGURES = ("predicted_ns", "waves", "ideal_ns", "bound_by", "flops", "service", "traffic",
           "peak_bytes", "estimate_ns", "estimate_bound_by")


class Loaded(NamedTuple):
    """A selection: the selected Module and its entry Function (unpacks as a pair)."""

    module: Any
    function: Any


@frozen_record
class CallRecords:
    """The records one call or loop of the analysed program carries."""

    value: str  # printed label `<name>:<line>` of the annotated program
    source: str | None  # `file:line:col` of the authored statement
    records: Mapping[str, Any]  # family -> frozen record dataclass


@frozen_record
class Analysis:
    """One run: the typed program when no family ran, else the families' report.

    Attributes:
        module, function: the selection; ``function`` is the inlined view that
            carries the records.
        families: the families requested, in order (empty for the typed program).
        result: the analysis result (None for the typed program).
    """

    module: Any
    function: Any
    families: tuple
    result: Any
    _rendering: Any = field(repr=False)

    def summary(self) -> str:
        """The text report, exactly as `tilefoundry analyze` prints it."""
        return self._rendering.text

    def figures(self) -> dict:
        """The headline figures, flat: ``predicted_ns``, ``waves`` (performance),
        ``ideal_ns``, ``bound_by`` (roofline), ``flops`` and ``service`` by dtype /
        kind (compute-cost), ``traffic`` (whole, level -> read/write) and
        ``peak_bytes`` by level (memory); None where that family did not run.
        The keys and values of an ``analyze-rows`` row (docs/views.md), read off
        the JSON report (``to_dict()``)."""
        if self.result is None:
            return dict.fromkeys(FIGURES)
        from tilefoundry.render.views.sweep import headline

        row = headline(self._rendering.report)
        return {key: copy.deepcopy(row.get(key)) for key in FIGURES}

    def to_json(self) -> str:
        """The JSON report, exactly as `tilefoundry analyze --json` prints it."""
        return self._rendering.json

    def to_dict(self) -> dict:
        """The JSON report as a fresh dict (safe to mutate)."""
        return json.loads(self._rendering.json)

    @property
    def records(self) -> dict:
        """Function-level records: family -> frozen record dataclass."""
        if self.result is None:
            return {}
        from tilefoundry.render.record_forms import family_of
        from tilefoundry.render.report import select_records

        found = ((cls, self.function.get_metadata(cls)) for cls in select_records(self.result).types)
        return {family_of(cls): record for cls, record in found if record is not None}

    def calls(self) -> list[CallRecords]:
        """Each labelled call and loop that carries a record, in program order."""
        if self.result is None:
            return []
        from tilefoundry.analysis.check import iter_nodes
        from tilefoundry.render.record_forms import family_of
        from tilefoundry.render.report import select_records, source_of

        types = select_records(self.result).types
        labels = self._rendering.labels
        rows = []
        for node in iter_nodes(self.function.body):
            label = labels.get(id(node))
            records = {family_of(cls): node.get_metadata(cls) for cls in types
                       if node.get_metadata(cls) is not None}
            if label is not None and records:
                rows.append(CallRecords(label, source_of(node), records))
        return rows


def load(selection) -> Loaded:
    """``"file.py[:Root[.child...][.function]]"`` (a str or a ``pathlib.Path``)
    -> (Module, Function)."""
    from tilefoundry.dsl.loader import load_selection, source_text

    return Loaded(*load_selection(source_text(selection, "tilefoundry.load")))


# ---------------------------------------------------------------- the public boundary


def _kind(value) -> str:
    """How a refusal names what it got (arguments.kind_of, the one form)."""
    from tilefoundry.arguments import kind_of

    return kind_of(value)


def refused_argument(who: str, argument: str, takes: str, value):
    """The ArgumentError of one argument (arguments.refused, the one form)."""
    from tilefoundry.arguments import refused

    return refused(who, argument, takes, value)


def checked_flag(value, who: str, argument: str) -> bool:
    """A yes/no argument: True or False (a truthy string would silently mean yes)."""
    from tilefoundry.arguments import FLAG, checked

    return checked(who, argument, value, FLAG)


def checked_seed(value, who: str) -> int:
    """A seed: a whole number >= 0, as ``--seed`` takes (numpy's rule)."""
    from tilefoundry.arguments import checked, whole_at_least

    return checked(who, "seed", value, whole_at_least(0, "seed=3"))


def _topology_test(value):
    from tilefoundry.arguments import Wrong

    if value is not None and not isinstance(value, str):
        raise Wrong()
    return value


def checked_topology(value, who: str):
    from tilefoundry.arguments import Rule, checked

    return checked(who, "topology", value, Rule("a topology level name such as 'cta', or None",
                                                 _topology_test))


def _target_test(target):
    from tilefoundry.arguments import Wrong
    from tilefoundry.target.base import Target

    if target is None or isinstance(target, (str, Target)):
        return target
    if isinstance(target, type) and issubclass(target, Target):
        raise Wrong(takes=f"a Target value, not its class: e.g. {target.__name__}(...), or an identity "
                          "such as 'nvidia.h200_sxm'")
    raise Wrong()


def checked_target(target, who: str):
    """None, a Target value, or an identity string (`tilefoundry target list`)."""
    from tilefoundry.arguments import Rule, checked

    return checked(who, "target", target, Rule("a Target value (e.g. CudaTarget('nvidia.h200_sxm')) or an "
                                               "identity such as 'nvidia.h200_sxm' (tilefoundry target list)",
                                               _target_test))


def _dims_rule(lists: bool):
    """DimVar bindings: a mapping of dimension name -> extent (an int, or with
    ``lists`` a list of them, one binding each), as ``--dim NAME=EXTENT``."""
    from collections.abc import Mapping as MappingABC

    from tilefoundry.arguments import Rule, Wrong

    takes = "a mapping of dimension name to extent, e.g. dims={'seq': 96}" + (
        " or {'seq': [96, 128]}" if lists else "")
    one = "an integer extent (e.g. 96)" + (" or a list of them" if lists else "")

    def extent(name, value):
        import numbers

        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise Wrong(f"dims['{name}']", one, value)
        return int(value)

    def test(dims):
        if dims is None:
            return None
        if not isinstance(dims, MappingABC):
            raise Wrong()
        bound = {}
        for name, value in dims.items():
            if not isinstance(name, str):
                raise Wrong("dims", f"{takes}; a dimension's name is a str", name)
            if lists and isinstance(value, (list, tuple)):
                if not value:
                    raise Wrong(f"dims['{name}']", "at least one extent", value)
                bound[name] = [extent(name, v) for v in value]
            else:
                bound[name] = extent(name, value)
        return bound

    return Rule(takes, test)


def checked_dims(dims, who: str, *, lists: bool = False) -> dict | None:
    """DimVar bindings, checked by ``_dims_rule``: a fresh dict of ints."""
    from tilefoundry.arguments import checked

    return checked(who, "dims", dims, _dims_rule(lists))


def checked_pair(module, function, who: str) -> tuple:
    """A Module and one of its Functions, as ``load`` returns them."""
    from tilefoundry.arguments import checked, instance_of
    from tilefoundry.ir.function import Function
    from tilefoundry.ir.module import Module

    module = checked(who, "module", module, instance_of(Module, "a Module (tilefoundry.load(...).module)"))
    if function is not None:
        function = checked(who, "function", function,
                           instance_of(Function, "a Function (tilefoundry.load(...).function)"))
    return module, function


def selected(selection, who: str = "tilefoundry.analyze") -> tuple:
    """(module, function) of a selection: ``"file.py[:Root...]"`` (loaded
    fresh), a Module (what ``@module`` makes of a class: its entry), or a
    ``(module, function)`` pair; anything else is refused in one line."""
    import os

    from tilefoundry.errors import SelectionError
    from tilefoundry.ir.function import Function
    from tilefoundry.ir.module import Module

    if isinstance(selection, (str, os.PathLike)):
        from tilefoundry.dsl.loader import load_selection, source_text

        return load_selection(source_text(selection, who))
    if isinstance(selection, Module):
        return selection, selection.entry_function()
    if isinstance(selection, tuple) and len(selection) == 2:
        module, function = selection
        if not (isinstance(module, Module) and isinstance(function, Function)):
            raise SelectionError(
                f"{who}: a (module, function) pair holds a Module and one of its Functions, as "
                f"tilefoundry.load returns them, got ({_kind(module)}, {_kind(function)})")
        return module, function
    if isinstance(selection, Function):
        raise SelectionError(
            f"{who}: '{selection.name}' is a bare @func, which has no target or topology; pass "
            "the @module class that declares it, or write @func(target=..., topologies=...)")
    if isinstance(selection, type):
        raise SelectionError(
            f"{who}: class '{selection.__name__}' is not a @module class, so it states no "
            "program; decorate it with @tilefoundry.module(entry=..., target=..., topologies=...)")
    raise SelectionError(
        f"{who}: a selection is 'file.py[:Module[.child...][.function]]', a Module (a @module "
        f"class) or a (module, function) pair, got {type(selection).__name__}")


def families_of(families, who: str = "tilefoundry.analyze"):
    """``families`` as a tuple of family names (one name, or several), or ALL;
    a name that is no family is refused with the nearest one, an ArgumentError
    (a wrong argument, not a refused analysis: issue 40 item 7)."""
    from tilefoundry.errors import ArgumentError, did_you_mean

    if families is None:
        return ()
    if isinstance(families, str):
        if families == ALL:
            return ALL
        families = (families,)
    try:
        names = tuple(families)
    except TypeError:
        raise ArgumentError(f"{who}: families is a family name or a list of them, got "
                            f"{type(families).__name__}; e.g. families=['compute-cost', 'memory']"
                            ) from None
    for name in names:
        if name == ALL:
            raise ArgumentError(f"{who}: families='all' stands alone (every family the target "
                                f"serves); drop it from {list(names)} or pass families='all'")
        if name not in FAMILIES:
            shown = repr(name) if isinstance(name, str) else f"{name!r} ({type(name).__name__})"
            raise ArgumentError(f"{who}: {shown} is not an analysis family; the families are "
                                f"{', '.join(FAMILIES)} (or 'all')"
                                f"{did_you_mean(name, FAMILIES) if isinstance(name, str) else ''}")
    return tuple(dict.fromkeys(names))


def _typed_view(module, function, dims: Mapping[str, int] | None):
    """The checked, inlined view of one selection, checked exactly as for an
    analysis (ownership, dims, call-edge execution contexts, the program check)."""
    from tilefoundry.analysis.analyze import check_call_edges, check_ownership
    from tilefoundry.analysis.check import check_program_view
    from tilefoundry.analysis.dim_binding import resolve_dims

    check_ownership(module, function)
    bindings, concrete = resolve_dims(module, function, dict(dims) if dims else None)
    check_call_edges(module, concrete)
    return check_program_view(module, concrete, bindings=bindings)


def _typed(module, function, dims: Mapping[str, int] | None):
    """(inlined view Function, rendering) of the typed program of one selection."""
    from tilefoundry.render.report import render_typed

    view = _typed_view(module, function, dims)
    return view.function, render_typed(module, view.function, param_names=view.promoted,
                                        topologies=view.topologies)


def typed_rendering(module, function, dims: Mapping[str, int] | None = None):
    """The typed program of one selection as text and as the analyze report."""
    who = "tilefoundry.api.typed_rendering"
    module, function = checked_pair(module, function, who)
    if function is None:
        raise refused_argument(who, "function", "a Function (tilefoundry.load(...).function)", function)
    return _typed(module, function, checked_dims(dims, who))[1]


def retarget(module, target):
    """``target`` replaces the module's own: a Target value, or an identity
    such as ``"nvidia.h200_sxm"`` (`tilefoundry target list`)."""
    who = "tilefoundry.api.retarget"
    module = checked_pair(module, None, who)[0]
    target = checked_target(target, who)
    if target is None:
        return module
    if isinstance(target, str):
        from tilefoundry.target.catalog import resolve_identity

        target = resolve_identity(target)
    # a shallow copy (as with_entry makes: no __post_init__, which would
    # re-parent the children) so that a (module, function) pair the caller
    # holds keeps its own target
    selected = copy.copy(module)
    object.__setattr__(selected, "target", target)
    return selected


def analyze(selection, *, dims: Mapping[str, int] | None = None,
            families: str | Iterable[str] | None = None, target=None, topology: str | None = None,
            operands: bool = False, estimate=None) -> Analysis:
    """Analyse one selection, as `tilefoundry analyze` does.

    Args:
        selection: ``"file.py:Root.layer0"`` (loaded fresh), a Module (a
            ``@module`` class: its entry), or a ``(module, function)`` pair such
            as ``load`` returns.
        dims: DimVar bindings, as ``--dim NAME=EXTENT``.
        families: one of "compute-cost", "memory", "roofline", "performance",
            "collectives", or a list of them; "all" every family the target
            serves (``--all``); None or empty gives the typed program.
        target: a Target value or identity replacing the module's target.
        topology: the per-unit level (``--topology``).
        operands: per-operand traffic in the text report (``--operands``).
        estimate: how the estimate family is asked (``EstimateOptions``, or a
            mapping ``{"launch": "graph"|"stream", "disabled": {effect, ...}}``
            of its fields: docs/estimate.md); None for the defaults.
    """
    who = "tilefoundry.analyze"
    wanted = families_of(families)
    dims = checked_dims(dims, who)
    target = checked_target(target, who)
    topology = checked_topology(topology, who)
    operands = checked_flag(operands, who, "operands")
    module, function = selected(selection)
    module = retarget(module, target)
    if not wanted:
        if topology is not None:  # a level that is none is refused with or without a family
            from tilefoundry.analysis.check import resolve_level

            resolve_level(module, topology)
        inlined, rendering = _typed(module, function, dims)
        return Analysis(module, inlined, (), None, rendering)
    from tilefoundry.render.report import render_analysis

    result = _run(module, function, wanted, topology, dims, checked_estimate(estimate, who))
    rendering = render_analysis(result, operands=operands)
    return Analysis(module, result.function, tuple(result.analyses), result, rendering)


def checked_estimate(estimate, who: str):
    """The estimate family's options: EstimateOptions, a mapping of its fields, or None."""
    from tilefoundry.analysis.estimate.timings import EstimateOptions

    if estimate is None or isinstance(estimate, EstimateOptions):
        return estimate
    if not isinstance(estimate, Mapping):
        raise refused_argument(who, "estimate", "EstimateOptions, a mapping of its fields "
                               "(launch, disabled) or None", estimate)
    unknown = sorted(set(map(str, estimate)) - {"launch", "disabled"})
    if unknown:
        raise refused_argument(who, "estimate", "a mapping of launch and disabled",
                               f"a mapping naming {unknown[0]!r}")
    return EstimateOptions(**estimate)


def _run(module, function, wanted, topology, dims, estimate=None):
    from tilefoundry.analysis.analyze import analyze as run_analyses, analyze_served

    bound = dict(dims) if dims else None
    options = {"estimate": estimate} if estimate is not None else None
    if wanted == ALL:
        return analyze_served(module, function, FAMILIES, level=topology, dims=bound,
                              options=options)
    return run_analyses(module, function, analysis=wanted, level=topology, dims=bound,
                        options=options)


def figures(selection, *, dims: Mapping[str, int] | None = None,
            families: str | Iterable[str] | None = None, target=None,
            topology: str | None = None) -> dict:
    """``analyze(...).figures()`` of one point without rendering the program:
    the same keys and values (read off the JSON report's function records,
    as an ``analyze-rows`` row is), for the price of the analysis alone. What
    a sweep calls once per point (``tilefoundry sweep``); arguments as for
    ``analyze``. With no family every key is None, as for the typed program,
    but the program is still checked."""
    who = "tilefoundry.api.figures"
    wanted = families_of(families, who)
    dims = checked_dims(dims, who)
    target = checked_target(target, who)
    topology = checked_topology(topology, who)
    module, function = selected(selection, who)
    module = retarget(module, target)
    if not wanted:
        _typed_view(module, function, dims)
        return dict.fromkeys(FIGURES)
    from tilefoundry.render.report import function_report
    from tilefoundry.render.views.sweep import headline

    row = headline(function_report(_run(module, function, wanted, topology, dims)))
    return {key: row.get(key) for key in FIGURES}

