"""Module tree: a layer with a nested `@module` class child (`Mlp`, inheriting the
owner's topologies), a root holding `layers = tuple(Layer.renamed(f"layer{i}") ...)`,
orchestration methods `forward`/`init_caches` that analysis ignores, and dotted
selection `Stack.layer1`, `Stack.layer1.Mlp`. Fully static.
"""
from __future__ import annotations

from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 64
N_LAYERS = 3
_DT = "bf16"


@module(entry="layer", topologies=(Topology("cta", 2),))
class Layer:
    @module(entry="mlp")
    class Mlp:
        @func
        def mlp(x: Tensor[(8, D), _DT], w: ConstTensor[(D, D), _DT]) -> Tensor[(8, D), _DT]:
            return tf.silu(x @ w)

    @func
    def layer(x: Tensor[(8, D), _DT], g: ConstTensor[(D,), "f32"]) -> Tensor[(8, D), _DT]:
        h = tf.rms_norm(x, g)
        return x + Mlp(h)

    def forward(self, x):
        return self.layer(x)


@module(entry="run", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 2),))
class Stack:
    layers = tuple(Layer.renamed(f"layer{i}") for i in range(N_LAYERS))

    @func
    def run(x: Tensor[(8, D), _DT]) -> Tensor[(8, D), "f32"]:
        return tf.cast(x, "f32")

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def init_caches(self):
        return []
