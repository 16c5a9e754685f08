"""`tilefoundry place` (docs/place.md): from a logical kernel to a placed
program, searched, checked against the logical kernel and priced.

A facade room like ``sweep``: it reads a selection and prices each point
through the Python API (``tilefoundry.api``) and checks answers through the
execution API (``tilefoundry.execution``); ``cli/place_cmd.py`` is thin over
``place`` here. ``tilefoundry.place`` resolves to ``place`` below.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Placement", "PlaceResult", "place"]


@dataclass(frozen=True)
class Placement:
    """One answer: what was chosen, the placed program's source, its figures.

    Attributes:
        rank: 1 for the best.
        choice: the kind's choice (``MatmulChoice``, ``RowsChoice``, ``ChainChoice``,
            ``AttentionChoice`` or ``SequenceChoice``).
        description: the choice in words.
        text: the placed program (authoring-DSL source, loadable as is).
        figures: the objective's time, ``predicted_ns``, ``ideal_ns`` and
            ``peak_bytes`` by storage level.
        checked: it agreed with the logical kernel (always True for an answer).
    """

    rank: int
    choice: object
    description: str
    text: str
    figures: dict
    checked: bool

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {"rank": self.rank, "choice": asdict(self.choice), "description": self.description,
                "figures": dict(self.figures), "checked": self.checked}


@dataclass(frozen=True)
class PlaceResult:
    """The search's answer for one kernel.

    Attributes:
        kernel: the kind and name of the kernel placed.
        objective: the figure minimised (``estimate_ns`` or ``predicted_ns``).
        placements: the best first, at most ``top``.
        space_size, priced: points in the space and points priced.
        proven: every point was priced, so the first is the best in the space.
        seconds: the search's wall time (what ``time_limit`` bounds).
        check_seconds: the check of the answers, after the search.
        checked_at: "full extents", or the extents a large chain's answers were
            checked at (placer/reduced_check.py states why that is sound).
        refused: reason -> count of points the analysis refused.
        bugs: (choice in words, why) of points whose program does not load
            and of answers that disagreed with the logical kernel: each a bug
            in place, never an answer.
    """

    kernel: str
    kind: str
    objective: str
    placements: tuple
    space_size: int
    priced: int
    proven: bool
    seconds: float
    refused: dict
    bugs: tuple
    check_seconds: float = 0.0
    checked_at: str = "full extents"  # or the extents a large chain was checked at (placer/reduced_check.py)
    where: str = ""  # file:line:col of the logical function (for messages)

    @property
    def best(self) -> Placement | None:
        return self.placements[0] if self.placements else None

    @property
    def text(self) -> str | None:
        """The best placement's program text."""
        return self.best.text if self.best else None

    def as_dict(self) -> dict:
        return {"kernel": self.kernel, "kernel_kind": self.kind, "objective": self.objective,
                "proven": self.proven, "space_size": self.space_size, "priced": self.priced,
                "seconds": round(self.seconds, 3),
                "check_seconds": round(self.check_seconds, 3), "checked_at": self.checked_at,
                "refused": dict(self.refused),
                "bugs": [{"choice": c, "why": w} for c, w in self.bugs],
                "placements": [p.as_dict() for p in self.placements]}


def _checked_positive(value, who: str, argument: str, *, whole: bool):
    import numbers

    from tilefoundry.api import refused_argument

    kind = numbers.Integral if whole else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        takes = "a whole number >= 1" if whole else "a number of seconds > 0"
        raise refused_argument(who, argument, takes, value)
    return value


def place(selection, *, target=None, level: str = "cta", time_limit: float = 10.0, top: int = 1,
          seed: int = 0, dims=None, progress: bool | None = None) -> PlaceResult:
    """Place one logical kernel: search its space, check and price the best.

    Args:
        selection: ``"file.py:Root.kernel"``, a Module, or a ``(module,
            function)`` pair, as for ``tilefoundry.analyze``.
        target: a Target value or identity replacing the module's own.
        level: the topology level placed over (its units are the mesh's).
        time_limit: seconds the search may spend pricing points.
        top: how many answers to return, best first.
        seed: the seed of the solver and of the check's random inputs.
        dims: DimVar bindings (``--dim``).
        progress: a progress bar on stderr (None: only on a terminal).
    """
    from tilefoundry.api import checked_dims, checked_seed, checked_target, retarget, selected
    from tilefoundry.placer.kernel import read_kernel
    from tilefoundry.placer.driver import search

    who = "tilefoundry.placer"
    target = checked_target(target, who)
    time_limit = float(_checked_positive(time_limit, who, "time_limit", whole=False))
    top = int(_checked_positive(top, who, "top", whole=True))
    seed = checked_seed(seed, who)
    dims = checked_dims(dims, who)
    if not isinstance(level, str):
        from tilefoundry.api import refused_argument

        raise refused_argument(who, "level", "a topology level name such as 'cta'", level)
    module, function = selected(selection, who)
    module = retarget(module, target)
    kernel = read_kernel(module, function, dims)
    found = search((module, function), kernel, level=level, time_limit=time_limit, top=top,
                   seed=seed, progress=progress, dims=dims)
    placements = tuple(Placement(rank, c.choice, c.choice.describe(), c.text,
                                 c.priced.as_dict(found.objective), c.checked)
                       for rank, c in enumerate(found.ranked, 1))
    return PlaceResult(kernel.name, kernel.kind, found.objective.figure, placements, found.space_size,
                       found.priced, found.proven, found.seconds, dict(found.refused),
                       tuple(found.bugs),
                       found.check_seconds, found.checked_at, kernel.where)
