"""The memory family (analysis §1.2.2): ``ANALYZER`` as Targets name it
(``tilefoundry.analysis.memory:ANALYZER``). The implementation is split over
``memory_family`` (the run), ``memory_traffic`` (relation counting),
``memory_footprint`` (lifetimes, footprints), ``memory_loops`` (loop
footprints, cache pressure) and ``allocation`` (the packing solve)."""
from tilefoundry.analysis.memory_family import ANALYZER, run_memory  # noqa: F401
from tilefoundry.analysis.memory_records import *  # noqa: F401, F403
