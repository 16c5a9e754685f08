"""p26 (programs/README row 26): an authored ``where(...)`` placement constraint.

The reference refuses it; analysis §2 check_program decides for us: "Analyze MUST
NOT reject an authored where(...) constraint ... a value whose placement is
deferred contributes its whole-program figures to the per-unit total". There is
no stored output, so the figures below are derived by hand from the program
(x: f32[16, 32], s: f32[16, 1]; y = x * s; return tanh(y)):

- flops: mul 16*32 = 512 and tanh 512, f32; per unit the same 1024, since the
  deferred value states no distribution to project through;
- gmem traffic: reads x (16*32*4 = 2048 B) + s (16*4 = 64 B) + y (2048 B) = 4160 B,
  writes y (2048 B) + the result (2048 B) = 4096 B.
"""
from __future__ import annotations

import os

import pytest

from tests.conftest import PROGRAMS

SOURCE = "p26_authored_where_constraint.py:DeferredPlacement"


@pytest.fixture
def in_programs():
    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    yield
    os.chdir(cwd)


def _analyze(analysis):
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.report import render_analysis

    module, function = load_selection(SOURCE)
    return render_analysis(analyze(module, function, analysis=analysis))


def test_analysis_2_authored_where_typed_program_is_not_rejected(in_programs):
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(SOURCE)
    text = typed_program(module, function, None)
    assert "def scaled(" in text
    assert "= mul(x, s)" in text and "= tanh(" in text


def test_analysis_2_authored_where_measured_as_written(in_programs):
    rendered = _analyze(("compute-cost", "memory", "roofline"))
    summary = "\n".join(rendered.summary)
    whole = 16 * 32 + 16 * 32
    assert f"# compute-cost flops=f32:{whole}@{whole}" in summary
    reads, writes = 2 * 16 * 32 * 4 + 16 * 4, 2 * 16 * 32 * 4
    assert f"# traffic traffic=gmem:r{reads}/w{writes}@r{reads}/w{writes}" in summary
    assert "# roofline ideal-ns=" in summary


def test_analysis_2_authored_where_performance_refuses_for_want_of_a_domain(in_programs):
    from tilefoundry.errors import TileFoundryError

    with pytest.raises(TileFoundryError, match="execution domain"):
        _analyze(("performance",))
