"""Issue 38 item 1 on zoo layers: the right reference (the layer run in float64
with no rounding) passes, and each wrong-reference kind fails, on the zoo
layers small enough for the suite (a norm, the QKV projection with RoPE, the
Mamba-2 convolution step; published sizes, seconds each). The independent
numpy references of every zoo kernel live in tests/models/test_zoo_numerics.py."""
from __future__ import annotations

import numpy as np
import pytest

from tilefoundry.execute import output_leaves
from tilefoundry.execute.bounded_run import run_bounded
from tilefoundry.execute.twins import hold_against, owned_copy
from tilefoundry.execution import Twin, prepare
from tilefoundry.models import MODELS

from tests.execute.exact_reference import exact_twin

_PREPARED: dict = {}
_BOUNDED: dict = {}


def _layer(model: str, selector: str):
    key = (model, selector)
    if key not in _PREPARED:
        source = next(m.source for m in MODELS if str(m.source).endswith(model))
        p = _PREPARED[key] = prepare(f"{source}:{selector}", seed=0)
        _BOUNDED[key] = run_bounded(p.function, owned_copy(p.arguments))
    return _PREPARED[key], _BOUNDED[key]


def _verdicts(model, selector, reference):
    p, (program, bounds, derivation) = _layer(model, selector)
    types = {name: t for name, _, t in output_leaves(p.function.body.type)}
    return {v.name: v for v in hold_against(program, bounds, derivation, owned_copy(p.by_name()), types,
                                            Twin("reference", function=reference), None, None, None)}


LAYERS = [("llama3_8b.py", "Llama3_8B.layer0.rms"), ("phi3_mini.py", "Phi3Mini.layer0.norm"),
          ("llama3_8b.py", "Llama3_8B.layer0.qkv_rope"), ("mamba2_2_7b.py", "Mamba2_2_7B.layer0.conv_step")]


@pytest.mark.parametrize("model,selector", LAYERS, ids=[s for _, s in LAYERS])
def test_right_reference_passes_on_zoo_layers(model, selector):
    p, _ = _layer(model, selector)
    for v in _verdicts(model, selector, exact_twin(p)).values():
        assert v.passed, f"{v.name}: {v.bound.derivation}"


def _changed(p, change, names):
    exact = exact_twin(p)

    def reference(*arrays):
        return {k: (change(np.asarray(v)) if k in names else v) for k, v in exact(*arrays).items()}

    return reference


def _transpose(v):
    return np.swapaxes(v, -1, -2).reshape(v.shape) if v.ndim >= 2 and v.shape[-1] > 1 and v.shape[-2] > 1 \
        else v[..., ::-1]


MUTATIONS = [
    ("2% off, bf16", "llama3_8b.py", "Llama3_8B.layer0.rms", lambda v: v * 1.02, {"output"}),
    ("2% off, bf16", "llama3_8b.py", "Llama3_8B.layer0.qkv_rope", lambda v: v * 1.02, {"output[0]"}),
    ("0.1% off, f32", "mamba2_2_7b.py", "Mamba2_2_7B.layer0.conv_step", lambda v: v * 1.001, {"output[0]"}),
    ("transposed", "llama3_8b.py", "Llama3_8B.layer0.qkv_rope", _transpose, {"output[1]"}),
    ("transposed", "phi3_mini.py", "Phi3Mini.layer0.norm", _transpose, {"output"}),
    ("a 1/8 scale left out", "llama3_8b.py", "Llama3_8B.layer0.qkv_rope", lambda v: v * 0.125, {"output[2]"}),
]


@pytest.mark.parametrize("kind,model,selector,change,names", MUTATIONS,
                         ids=[f"{k}-{s}" for k, _, s, _, _ in MUTATIONS])
def test_wrong_reference_fails_on_zoo_layers(kind, model, selector, change, names):
    p, _ = _layer(model, selector)
    verdicts = _verdicts(model, selector, _changed(p, change, names))
    for name in names:
        assert not verdicts[name].passed, f"{kind}: {name}: {verdicts[name].bound.derivation}"


def test_reference_one_k_tile_short_fails_on_a_zoo_projection():
    """The QKV projection's reference sums all but the last 64 of the hidden axis."""
    model, selector = "llama3_8b.py", "Llama3_8B.layer0.qkv_rope"
    p, _ = _layer(model, selector)
    exact = exact_twin(p)

    def short(*arrays):
        arrays = [np.array(a, copy=True) for a in arrays]
        arrays[0][..., -64:] = 0  # x: the activations' last K tile never read
        return exact(*arrays)

    assert not any(v.passed for v in _verdicts(model, selector, short).values() if v.name != "output[3]")
