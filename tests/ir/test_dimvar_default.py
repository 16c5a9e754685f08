"""A DimVar's declared default (issue 39: the zoo's attended length ``kv_len``):
an extent the declaration states for a caller that binds none, as a fixed
``[k, k + 1)`` takes ``k`` (companions §1.4); a stated binding wins."""
from __future__ import annotations

import pickle
import textwrap

import pytest

from tilefoundry.analysis.dim_binding import resolve_dims
from tilefoundry.dsl import DimVar
from tilefoundry.dsl.loader import load_selection
from tilefoundry.errors import AnalysisError, VerifyError

PROGRAM = textwrap.dedent('''
    from tilefoundry import module
    from tilefoundry.dsl import *
    CTX = DimVar("ctx", 1, 1025)
    ATT = DimVar("att", 1, 1025, default=DEFAULT)

    @module(entry="f", topologies=(Topology("cta", 1),))
    class M:
        @func
        def f(x: Tensor[(CTX,), "f32"]):
            with Mesh(("cta",), (1,), ("c",)) as _all:
                acc = tf.zeros(Tensor[(16,), "f32"])
                for kk in tile(ATT, 16):
                    acc = acc + x[kk]
                return acc
''')


def _selection(tmp_path, default):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM.replace("DEFAULT", repr(default)), encoding="utf-8")
    return load_selection(f"{path}:M.f")


def test_issue39_an_unbound_dim_takes_its_declared_default(tmp_path):
    module, function = _selection(tmp_path, 512)
    bindings, _ = resolve_dims(module, function, {"ctx": 1024})
    assert bindings == {"ctx": 1024, "att": 512}


def test_issue39_a_stated_binding_wins_over_the_default(tmp_path):
    module, function = _selection(tmp_path, 512)
    bindings, _ = resolve_dims(module, function, {"ctx": 1024, "att": 64})
    assert bindings["att"] == 64


def test_issue39_a_dim_without_default_is_still_open(tmp_path):
    module, function = _selection(tmp_path, None)
    with pytest.raises(AnalysisError, match="att is declared as"):
        resolve_dims(module, function, {"ctx": 1024})


def test_issue39_the_default_is_part_of_the_dims_identity():
    plain, with_default = DimVar("n_39", 1, 9), DimVar("n_39", 1, 9, default=8)
    assert plain is not with_default and DimVar("n_39", 1, 9, default=8) is with_default
    assert pickle.loads(pickle.dumps(with_default)) is with_default
    assert repr(with_default) == "DimVar('n_39', 1, 9, default=8)"
    assert with_default.unbound_extent == 8 and plain.unbound_extent is None
    assert DimVar("n_39", 4, 5).unbound_extent == 4  # a fixed size


@pytest.mark.parametrize("default,rule", [(9, "outside its range"), (0, "outside its range"),
                                          (True, "must be an int"), (2.0, "must be an int")])
def test_issue39_a_default_outside_the_range_is_refused(default, rule):
    with pytest.raises(VerifyError, match=rule):
        DimVar("n_39", 1, 9, default=default)
