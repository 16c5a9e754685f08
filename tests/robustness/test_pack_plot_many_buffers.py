"""Issue 41 item 4: `pack --plot` of many buffers is fast, within its stated
limit (TILEFOUNDRY_MAX_PLOT_BUFFERS, 200,000): past VECTOR_BUFFERS the
rectangles are one image inside the SVG (the SVG writer's per-path Python cost
took 100,000 buffers past 20 s and 20 MB), below it each is a vector path."""
from __future__ import annotations

import re

import pytest

from tilefoundry.cli.main import main

pytest.importorskip("matplotlib")


def _plot(tmp_path, capsys, count: int) -> str:
    rows = "".join(f"b{k},{k % 97},{k % 97 + 1 + k % 5},{1 + k % 7}\n" for k in range(count))
    (tmp_path / "b.csv").write_text("id,lower,upper,size\n" + rows)
    capacity = sum(1 + k % 7 for k in range(count))  # side by side: no search
    assert main(["pack", str(tmp_path / "b.csv"), "--capacity", str(capacity),
                 "--plot", str(tmp_path / "b.svg")]) == 0
    capsys.readouterr()
    return (tmp_path / "b.svg").read_text()


def test_past_the_vector_bound_the_buffers_are_one_image(tmp_path, capsys):
    from tilefoundry.render.forms.packing_forms import VECTOR_BUFFERS

    svg = _plot(tmp_path, capsys, VECTOR_BUFFERS + 1)
    assert len(re.findall(r"<image\b", svg)) == 1
    assert len(re.findall(r"<path\b", svg)) < 200  # axes, ticks, the capacity line: not a path a buffer
    assert len(svg) < 1_000_000


def test_below_it_each_buffer_is_a_path(tmp_path, capsys):
    svg = _plot(tmp_path, capsys, 60)
    assert "<image" not in svg
    assert len(re.findall(r"<path\b", svg)) >= 60
