"""Star-imported op namespace (`from tilefoundry.dsl.tf import *`: bare `max`, `exp`,
`log`, `reduce` shadow the builtins), `ReduceKind` members positionally, a sibling
call, a bare `@module` child without entry (selected as `Root.stats.row_mean`),
`forward = run_forward` bound from a module-level function, and the root re-targeted
with `dataclasses.replace(Root0, target=CpuTarget())`. Fully static.
"""
from __future__ import annotations

import dataclasses

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.dsl.tf import *
from tilefoundry.target import CpuTarget, CudaTarget

ROWS, VOCAB = 8, 512
NEG = -1.0e30


def run_forward(self, logits):
    return self.log_softmax(logits)


@module
class Stats:
    @func
    def row_mean(x: Tensor[(ROWS, VOCAB), "f32"]) -> Tensor[(ROWS, 1), "f32"]:
        return reduce(x, (-1,), True, ReduceKind.MEAN)


@module(entry="log_softmax", target=CudaTarget("nvidia.h200_sxm"))
class Root0:
    stats = Stats

    @func
    def row_max(x: Tensor[(ROWS, VOCAB), "f32"]) -> Tensor[(ROWS, 1), "f32"]:
        return max(reduce(x, (-1,), True, ReduceKind.MAX), NEG)

    @func
    def log_softmax(x: Tensor[(ROWS, VOCAB), "f32"]) -> Tensor[(ROWS, VOCAB), "f32"]:
        m = row_max(x)
        shifted = x - m
        return shifted - log(reduce(exp(shifted), (-1,), True, ReduceKind.SUM))

    forward = run_forward


Root = dataclasses.replace(Root0, target=CpuTarget())
