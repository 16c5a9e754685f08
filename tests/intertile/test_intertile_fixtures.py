"""Every file of shared/intertile: verdicts, delivered values, memory effects."""
from __future__ import annotations

import numpy as np
import pytest

from tests.intertile.intertile_helpers import SHARED, function_cases, run_inputs, sidecar
from tilefoundry.intertile.interp import run_function
from tilefoundry.intertile.program import check_function
from tilefoundry.intertile.reader import read_file, read_text


def _rules(mlir, side, name):
    fn = read_file(mlir).function(name)
    diags = check_function(fn, side["tiles"])
    return {d.rule for d in diags}, " | ".join(str(d) for d in diags)


@pytest.mark.parametrize("mlir,side,entry", function_cases("examples"))
def test_intertile_2_examples_get_their_verdict(mlir, side, entry):
    fired, _ = _rules(mlir, side, entry["name"])
    must = set(entry["verdict"]["must_fire"])
    assert must <= fired <= must | set(entry["verdict"]["may_fire"])


@pytest.mark.parametrize("mlir,side,entry", function_cases("invalid"))
def test_intertile_2_invalid_files_fail_with_their_rule(mlir, side, entry):
    fired, text = _rules(mlir, side, entry["name"])
    must = set(entry["verdict"]["must_fire"])
    assert must and must <= fired <= must | set(entry["verdict"]["may_fire"])
    for phrase in entry.get("message_should_mention") or side.get("message_should_mention"):
        assert phrase in text, f"diagnostic should mention {phrase!r}: {text}"


@pytest.mark.parametrize("mlir,side,entry", [
    c for c in function_cases("examples") if c.values[2]["verdict"]["status"] == "pass"])
def test_intertile_1_2_examples_deliver_expected_values(mlir, side, entry):
    fn = read_file(mlir).function(entry["name"])
    args, ct, glob = run_inputs(side, entry)
    run = run_function(fn, side["tiles"], args, ct, glob)
    expected = entry["expected"]
    per_tile = expected.get("per_tile") or expected["returned_per_tile"]
    for tile, value in per_tile.items():
        np.testing.assert_array_equal(run.returned[int(tile)][0], np.array(value),
                                      err_msg=f"tile {tile}")
    for tile in expected.get("undefined_on_tiles", []):
        assert run.returned[tile][0] is None  # outside C(g): no value at all
    if "ct_local_after" in expected:
        for tile, value in expected["ct_local_after"]["per_tile"].items():
            got = run.ct_local[int(tile)][6:18].reshape(4, 3)
            np.testing.assert_array_equal(got, np.array(value))
    if "global_after" in expected:
        want = np.array(expected["global_after"]["values"]).ravel()
        np.testing.assert_array_equal(run.global_mem[:want.size], want)


def test_intertile_1_2_e01_named_and_implicit_dependency_agree():
    mlir = SHARED / "examples" / "e01_shared_sources_identical.mlir"
    module, side = read_file(mlir), sidecar(mlir)
    args, _, _ = run_inputs(side, side["functions"][0])
    a = run_function(module.function("@stack_pairs_named"), 8, args).returned
    b = run_function(module.function("@stack_pairs_implicit"), 8, args).returned
    for t in range(8):
        np.testing.assert_array_equal(a[t][0], b[t][0])


def test_intertile_1_2_e04_same_delivery_different_memory():
    """kt03: both verify and deliver [bottom; top]; only the stores differ."""
    mlir = SHARED / "examples" / "e04_order_fixed_at_store.mlir"
    module, side = read_file(mlir), sidecar(mlir)
    args, ct, _ = run_inputs(side, side["functions"][0])
    right = run_function(module.function("@land_in_logical_order"), 4, args, ct)
    wrong = run_function(module.function("@land_as_assembled"), 4, args, ct)
    np.testing.assert_array_equal(right.returned[0][0], wrong.returned[0][0])
    logical = np.array(side["logical_tensor"]["values"])
    np.testing.assert_array_equal(right.ct_local[0][6:18].reshape(4, 3), logical)
    assert not np.array_equal(wrong.ct_local[0][6:18].reshape(4, 3), logical)


def _e05_variant(spelling: str) -> set[str]:
    mlir = SHARED / "examples" / "e05_two_axis_assembly.mlir"
    text = mlir.read_text().replace("gather_dimensions        = [0, 1]\n        : "
                                    "!ktdp.tile_future<tensor<1x3xf32>",
                                    f"gather_dimensions        = {spelling}\n        : "
                                    "!ktdp.tile_future<tensor<1x3xf32>", 1)
    assert spelling in text
    fn = read_text(text, "e05-variant").function("@grid_of_rows")
    return {d.rule for d in check_function(fn, 8)}


@pytest.mark.parametrize("spelling", ["[1, 0]", "[1]"])
def test_intertile_2_r12_e05_near_miss_spellings_fire(spelling):
    fired = _e05_variant(spelling)
    assert fired and fired <= {"R12", "R9"} and "R12" in fired


def test_intertile_2_r13_e09_as_reduce_is_refused():
    """A fold into tiles that did not contribute is rejected for reduce only."""
    mlir = SHARED / "examples" / "e09_move_completed_sum.mlir"
    text = mlir.read_text().replace(
        "%total = ktdp.inter_tile_consume(%fut) consumer_tiles_per_group = #group_quad\n",
        "%zero = arith.constant dense<0.0> : tensor<1x4xf32>\n"
        "    %total = ktdp.inter_tile_reduce(%fut) consumer_tiles_per_group = #group_quad,\n"
        "        identity(%zero : tensor<1x4xf32>)\n")
    text = text.replace("-> tensor<1x4xf32>\n    return",
                        "-> tensor<1x4xf32>\n    {\n      ^bb0(%a: tensor<1x4xf32>, "
                        "%b: tensor<1x4xf32>):\n        %s = arith.addf %a, %b : "
                        "tensor<1x4xf32>\n        ktdp.yield_reduced %s : tensor<1x4xf32>\n"
                        "    }\n    return")
    fn = read_text(text, "e09-as-reduce").function("@copy_finished_total")
    diags = check_function(fn, 4)
    assert {d.rule for d in diags} == {"R13"}
    assert "tiles 1, 2, 3" in str(diags[0])


def test_intertile_1_e09_fold_over_all_holders_gives_60():
    """The wrong model of kt07b: folding the four finished copies."""
    from tilefoundry.intertile.executor import deliver
    from tilefoundry.intertile.model import (AffineFamily, Delivery, Produce, TensorType,
                                             builtin_combiner)
    from tilefoundry.intertile.affine import AffineSet

    quad = AffineFamily(AffineSet.parse("affine_set<(i)[g] : (i >= 0, -i + 3 >= 0)>"))
    t = TensorType((1, 4))
    produce = Produce(quad, (0,), (t,))
    fold = Delivery("reduce", quad, combiner=builtin_combiner("sum"), identity_types=(t,),
                    result_types=(t,))
    got = deliver(produce, fold, {k: np.full((1, 4), 15.0) for k in range(4)},
                  identity=np.zeros((1, 4)), tiles=4)
    assert all((got[k][0] == 60).all() for k in range(4))
