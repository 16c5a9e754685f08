"""The typed-program printer (issue 2 item 6; companions §7.4): deterministic,
unique names, loops as `for` blocks, labels on the `=` line."""
from __future__ import annotations

import re

import pytest

from tests.conftest import PROGRAMS


def _view(selector: str, dims=None):
    from tilefoundry.analysis.check import check_program_view
    from tilefoundry.analysis.dim_binding import resolve_dims
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(str(PROGRAMS / selector))
    bindings, concrete = resolve_dims(module, function, dims)
    return check_program_view(module, concrete, bindings=bindings)


def _print(view, **options):
    from tilefoundry.render.printer import print_program

    return print_program(view.function, param_names=view.promoted, **options)


@pytest.fixture(params=["p05_gqa_decode_online.py:GqaDecodeStep", "p06_module_tree.py:MiniStack"])
def view(request, programs_dir):
    dims = {"ctx": 4096} if "p05" in request.param else None
    return _view(request.param, dims)


def test_render_7_4_printing_is_deterministic(view):
    assert _print(view).text == _print(view).text


def test_render_7_4_assigned_names_are_unique_per_scope(view):
    text = _print(view).text
    body = text.split("@func", 1)[1]
    assigned = re.findall(r"^    (\w+) = (?!v\d+$|\w+$)", body, flags=re.M)
    assert len(assigned) == len(set(assigned)), [n for n in assigned if assigned.count(n) > 1]


def test_render_7_4_labels_point_at_the_equals_line(view):
    printed = _print(view)
    lines = printed.text.splitlines()
    assert printed.labels
    for label in printed.labels.values():
        name, line = label.rsplit(":", 1)
        text = lines[int(line) - 1]
        assert re.match(rf"\s+(for {name} in |{name} = )", text), (label, text)


def test_render_7_4_loop_prints_as_for_block_with_carry_updates(programs_dir):
    text = _print(_view("p05_gqa_decode_online.py:GqaDecodeStep", {"ctx": 4096})).text
    assert "    for blk in tile(4096, 128):  # Tuple[" in text
    for carry in ("run_sum", "run_acc", "run_max"):
        assert re.search(rf"^        {carry} = v\d+$", text, flags=re.M), carry
        assert re.search(rf"^    {carry} = full_like\(", text, flags=re.M), carry


def test_render_7_4_comments_joined_after_the_type(programs_dir):
    view = _view("p02_dense_bias_gelu.py:DenseBiasGelu")
    printed = _print(view, comments=lambda node: ["probe a=1", "probe b=2"])
    assert "  # Tensor[" in printed.text
    assert "; probe a=1; probe b=2" in printed.text


def test_render_7_4_promoted_weights_print_as_identifiers(programs_dir):
    text = _print(_view("p06_module_tree.py:MiniStack")).text
    assert "    blk0_gamma_attn: ConstTensor[(256,), \"bf16\"]," in text
    assert "from tilefoundry.dsl import ConstTensor, Tensor" in text
