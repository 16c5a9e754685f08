"""The text reader: both spellings, round trip, and one-line refusals."""
from __future__ import annotations

import re

import pytest

from tests.intertile.intertile_helpers import SHARED
from tilefoundry.errors import VerifyError
from tilefoundry.intertile.affine import AffineSet
from tilefoundry.intertile.program import check_module
from tilefoundry.intertile.reader import read_file, read_text
from tilefoundry.intertile.writer import write_module

ALL = sorted(SHARED.glob("*/*.mlir"))
E08 = SHARED / "examples" / "e08_fold_four_contributions.mlir"
E02 = SHARED / "examples" / "e02_overlapping_windows.mlir"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_intertile_6_every_file_loads_and_round_trips(path):
    module = read_file(path)
    again = read_text(write_module(module), "round-trip")
    assert [f.name for f in again.functions] == [f.name for f in module.functions]
    rules = {k: sorted({d.rule for d in v}) for k, v in check_module(module).items()}
    assert rules == {k: sorted({d.rule for d in v}) for k, v in check_module(again).items()}


def test_intertile_6_implemented_spelling_reads_like_spec():
    spec = E08.read_text().replace(
        "producer_tiles_per_group = #group_quad\n        -> !ktdp.tile_future<(tensor<1x4xf32>), "
        "groups = #one_group>",
        "producer_tiles_per_group = #group_quad\n        : tensor<1x4xf32> -> "
        "!ktdp.tile_future<tensor<1x4xf32>, #one_group>")
    assert spec != E08.read_text()
    a = read_text(E08.read_text(), "s").functions[0].produces()[0].model
    b = read_text(spec, "s").functions[0].produces()[0].model
    assert a == b


def test_intertile_6_singular_dimension_and_array_spellings():
    text = E02.read_text().replace("gather_dimensions                = [0]",
                                   "gather_dimension = 0")
    assert read_text(text).functions[0].ops[1].model.dims == {"gather_dimensions": (0,)}
    text = E02.read_text().replace("= [0]", "= array<i64: 0>")
    assert read_text(text).functions[0].ops[1].model.dims == {"gather_dimensions": (0,)}


def _refusal(text: str) -> str:
    with pytest.raises(VerifyError) as exc:
        read_text(text, "bad.mlir")
    msg = str(exc.value)
    assert "\n" not in msg and re.match(r"bad\.mlir:\d+:\d+: ", msg), msg
    return msg


def test_intertile_bad_input_unknown_op():
    msg = _refusal(E02.read_text().replace("ktdp.inter_tile_gather", "ktdp.inter_tile_gathr"))
    assert "unknown op 'ktdp.inter_tile_gathr'" in msg and ":35:13:" in msg


def test_intertile_bad_input_unknown_attribute():
    msg = _refusal(E02.read_text().replace("gather_dimensions ", "gather_axes "))
    assert "unknown attribute 'gather_axes'" in msg and "allowed:" in msg


def test_intertile_bad_input_attribute_not_allowed_on_op():
    msg = _refusal(E02.read_text().replace("gather_dimensions ", "scatter_dimensions "))
    assert "not allowed on ktdp.inter_tile_gather" in msg


@pytest.mark.parametrize("bad,phrase", [
    ("(p - c >= 0, -p + c + 1 >= 0)", None),
    ("(p * c >= 0)", "not affine"),
    ("(p - q >= 0)", "identifier 'q' is not declared"),
    ("(p mod c >= 0)", "positive integer constant"),
    ("(p - c > 0)", "expected '>=', '<=' or '=='"),
])
def test_intertile_bad_input_malformed_affine_set(bad, phrase):
    text = E02.read_text().replace("(p - c >= 0, -p + c + 1 >= 0)", bad)
    if phrase is None:
        read_text(text)
        return
    assert phrase in _refusal(text)


def test_intertile_bad_input_undefined_alias_and_value():
    assert "undefined alias #nope" in _refusal(E02.read_text().replace(
        "consumer_tiles_per_group         = #group_first3",
        "consumer_tiles_per_group         = #nope"))
    assert "%rw, which is not defined" in _refusal(E02.read_text().replace(
        "yield_partial %row", "yield_partial %rw"))


def test_intertile_2_r2_future_used_twice_is_one_line_naming_it():
    module = read_file(SHARED / "invalid" / "i02_r2_future_used_twice.mlir")
    diags = check_module(module)["@copy_and_deal"]
    r2 = [str(d) for d in diags if d.rule == "R2"]
    assert len(r2) == 1 and "%fut has 2 uses" in r2[0] and ":14:" in r2[0]


def test_intertile_1_1_affine_set_enumerates_mod_and_floordiv_exactly():
    s = AffineSet.parse("affine_set<(p)[c, g] : (p - g - (c mod 4) * 8 == 0)>")
    from tilefoundry.intertile.affine import points
    pts = points(s.isl_text("0 <= {c} <= 7 and 0 <= {g} <= 1 and 0 <= {p} <= 31",
                            ("g", "c", "p")))
    assert (1, 5, 9) in pts and len(pts) == 16
    assert AffineSet.parse(s.to_text()) == s
