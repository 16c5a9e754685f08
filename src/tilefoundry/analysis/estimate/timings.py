"""The estimate family's records (docs/estimate.md): a time that holds on the
GPU, beside the spec's nominal ``performance``.

``EstimateMetadata`` on every timed Call, ``EstimateSummaryMetadata`` on the
Function; ``KernelEstimate`` and ``EstimateOptions`` are values, never attached
alone. How they read in text and JSON is rendering's business
(``render/forms/estimate_forms.py``).
"""
from __future__ import annotations

from tilefoundry.errors import ArgumentError
from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.metadata import IRMetadata

__all__ = ["BOUNDS", "EFFECTS", "LAUNCH_MODES", "EstimateOptions", "KernelEstimate",
           "EstimateMetadata", "EstimateSummaryMetadata"]

#: what may set a kernel's (or the program's) time, as the summary line names it
BOUNDS = ("hbm", "l2", "smem", "tensor", "cuda-core", "special", "latency", "launch", "fabric")
#: the effects an option can switch off, each a part of the model (docs/estimate.md)
EFFECTS = ("efficiency", "l2", "overlap", "occupancy", "waves", "latency", "launch", "cross-cta")
LAUNCH_MODES = ("graph", "stream")


@frozen_dataclass
class EstimateOptions:
    """How the estimate is asked for.

    Attributes:
        launch: ``graph`` (a CUDA graph replays the kernels, as serving engines
            run a decode step) or ``stream`` (each kernel launched by the host).
        disabled: effects left out of the model (``EFFECTS``), to see what each
            one contributes.
    """

    launch: str = "graph"
    disabled: frozenset = frozenset()

    def __post_init__(self) -> None:
        if self.launch not in LAUNCH_MODES:
            raise ArgumentError(f"estimate: launch takes one of {', '.join(LAUNCH_MODES)}, "
                                f"got {self.launch!r}")
        disabled = self.disabled
        if isinstance(disabled, str) or not hasattr(disabled, "__iter__"):
            raise ArgumentError("estimate: disabled takes a set of effect names "
                                f"({', '.join(EFFECTS)}), got {disabled!r}")
        disabled = frozenset(disabled)
        unknown = sorted(str(e) for e in disabled if e not in EFFECTS)
        if unknown:
            raise ArgumentError(f"estimate: no effect named {unknown[0]!r}; the effects are "
                                f"{', '.join(EFFECTS)}")
        object.__setattr__(self, "disabled", disabled)

    def on(self, effect: str) -> bool:
        return effect not in self.disabled


@frozen_dataclass
class KernelEstimate:
    """One launch: a top-level Mesh scope, or an unplaced statement run as one
    library kernel over the whole device.

    Attributes:
        index: launch order, from 0.
        site: where the kernel is written (the ``with Mesh`` or the statement).
        ctas: CTAs launched.
        ctas_per_sm: CTAs resident on one SM at once (occupancy).
        waves: CTA waves over the SMs.
        ns: the kernel's time, its launch included.
        bound_by: what dominates it (``BOUNDS``).
        effects: ``(effect, ns)``: each resource's own time, and the
            latency, launch and cross-CTA terms, as the breakdown shows them.
        dram_bytes: bytes the kernel moves to and from DRAM (after L2 reuse).
        l2_bytes: bytes the CTAs request through L2.
        overlapped: whether a loop of it overlaps its loads with its compute.
    """

    index: int
    site: str
    ctas: int
    ctas_per_sm: int
    waves: int
    ns: int
    bound_by: str
    effects: tuple = ()
    dram_bytes: int = 0
    l2_bytes: int = 0
    overlapped: bool = False


@frozen_dataclass
class EstimateMetadata(IRMetadata):
    """One statement's share of its kernel's time.

    Attributes:
        ns: the time the statement adds to its kernel, over all CTA waves, for
            one execution (a loop body statement: one trip).
        bound_by: what sets it.
        kernel: the index of its kernel.
    """

    ns: int = 0
    bound_by: str = "latency"
    kernel: int = 0

    family = "estimate"


@frozen_dataclass
class EstimateSummaryMetadata(IRMetadata):
    """The Function's estimated time and the kernels it is made of.

    Attributes:
        predicted_ns: the whole program's time: its kernels back to back.
        bound_by: what dominates the whole (the bound of the kernels that take
            most of the time).
        launch: the launch mode the time assumes.
        kernels: one KernelEstimate per launch, in launch order.
        not_modelled: effects the target's documents give no facts for, or the
            options switched off.
    """

    predicted_ns: int = 0
    bound_by: str = "latency"
    launch: str = "graph"
    kernels: tuple = ()
    not_modelled: tuple = ()

    family = "estimate"
