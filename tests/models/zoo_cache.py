"""Loading the zoo once per test session: each model file's namespace (each root
is built when a selection first asks for it, about a second each), and what the
B200 document states.

``resolve_selector`` walks a root already built, so every selection of one file
reuses one load. ``B200_SPECIAL_UNSTATED``: the B200 document states no per-CTA
rate for special-function work (rsqrt, exp: companions §6.5, §6.8), so the
performance family refuses every B200 program that does such work; the tests
expect that refusal while the document says so, and the full report once it
states a rate.
"""
from __future__ import annotations

from functools import lru_cache

from tilefoundry.dsl.loader import load_module_file, resolve_selector
from tilefoundry.models import models_dir
from tilefoundry.target import CudaTarget, PerformanceServiceFacts

FAMILIES = ("compute-cost", "memory", "roofline", "performance")
SPECIAL_REFUSAL = "target states no one-unit throughput for 'special' work at 'cta'"
B200_SPECIAL_UNSTATED = (
    CudaTarget("nvidia.b200_sxm").get_facts(PerformanceServiceFacts).ops("special") is None)


@lru_cache(maxsize=None)
def namespace(file: str) -> dict:
    return dict(vars(load_module_file(str(models_dir() / file))))


def selected(model, selection):
    """(Module, entry Function) of one registered selection."""
    module = resolve_selector(namespace(model.file), selection.selector)
    return module, module.entry_function()


def families_for(selection) -> tuple:
    """What a selection is analysed with: all four, but performance on the B200
    only once its document states the special-function rate."""
    if selection.target == "nvidia.b200_sxm" and B200_SPECIAL_UNSTATED:
        return FAMILIES[:3]
    return FAMILIES
