"""check's text and JSON say which draw the inputs came from where a draw failed
at a top-k/argmax near tie and was drawn again (execute/near_ties.py), and name
the tie a failure met on every draw."""
import json

import pytest

from tilefoundry.execution import CheckResult
from tilefoundry.render.views.run_check import check_json, check_text

TIE = "f.py:3:9: topk (k=2): at row (0,) the scores 0.5 and 0.49 lie within their error bounds"


def test_a_later_draw_is_said_and_the_asked_seed_alone_is_not():
    redrawn = check_text("f.py:R.f", "ref.py:g", [CheckResult({}, True, (), None, 91)], seed=3)
    assert "inputs: drawn from seed 91, the draw from seed 3 having failed where top-k" in redrawn
    plain = check_text("f.py:R.f", "ref.py:g", [CheckResult({}, True, (), None, 3)], seed=3)
    assert "inputs:" not in plain and "near tie" not in plain


def test_a_failure_names_the_tie_every_draw_met():
    text = check_text("f.py:R.f", "ref.py:g", [CheckResult({}, False, (), None, 3, tie=TIE)], seed=3)
    assert f"near tie: {TIE}" in text.splitlines() and text.rstrip().endswith("result: FAIL")


def test_json_carries_the_seed_and_the_tie_and_meets_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from tilefoundry.render.json_contract import load_schema

    document = json.loads(check_json("f.py:R.f", "ref.py:g", [CheckResult({}, False, (), None, 5, tie=TIE)]))
    (binding,) = document["bindings"]
    assert (binding["seed"], binding["tie"]) == (5, TIE)
    jsonschema.Draft202012Validator(load_schema("check")).validate(document)
