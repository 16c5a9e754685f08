"""What a placement is worth: the one objective the search minimises, and the
figures a placement is reported with.

The objective is the estimate family's time (``estimate_ns``) where the target
states an estimate analyzer and the Python API serves the family, else the
performance family's ``predicted_ns`` (issue 42: "the performance family's
where the target states no estimate"). ``objective_of`` is the one place that
choice is made; every price the search compares comes through ``price``.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Objective", "Priced", "objective_of", "price"]


@dataclass(frozen=True)
class Objective:
    """The family whose time is minimised and the figure it is read from."""

    family: str
    figure: str


def objective_of(target) -> Objective:
    """Estimate where the target serves it, else performance."""
    from tilefoundry import api

    if "estimate" in api.FAMILIES and "estimate" in target.analyzer_selectors():
        return Objective("estimate", "estimate_ns")
    return Objective("performance", "predicted_ns")


@dataclass(frozen=True)
class Priced:
    """One placed program's figures: the objective's time, the performance
    family's, the roofline ideal and the peak bytes by storage level."""

    objective_ns: float
    predicted_ns: float | None
    ideal_ns: float | None
    peak_bytes: dict

    def as_dict(self, objective: Objective) -> dict:
        return {objective.figure: self.objective_ns, "predicted_ns": self.predicted_ns,
                "ideal_ns": self.ideal_ns, "peak_bytes": dict(self.peak_bytes)}


def _families(objective: Objective) -> tuple:
    wanted = (objective.family, "performance", "roofline", "memory")
    return tuple(dict.fromkeys(wanted))


def price(selection, objective: Objective) -> Priced:
    """The figures of one program (a path or a ``(module, function)`` pair);
    an analysis refusal propagates (the caller counts the candidate out)."""
    from tilefoundry import api

    analysis = api.analyze(selection, families=_families(objective))
    figures = analysis.figures()
    value = figures.get(objective.figure)
    if value is None:  # a figure the flat row does not carry: its family's record states it
        record = analysis.records.get(objective.family)
        value = getattr(record, "predicted_ns", None)
    if value is None:
        from tilefoundry.errors import AnalysisError

        raise AnalysisError(f"place: the {objective.family} family gave no {objective.figure}")
    return Priced(float(value), figures.get("predicted_ns"), figures.get("ideal_ns"),
                  dict(figures.get("peak_bytes") or {}))
