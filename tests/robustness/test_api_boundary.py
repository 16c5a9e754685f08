"""Issue 22 item 15: the Python API checks its arguments at the public boundary.

A ``pathlib.Path`` is a path; every argument of a kind or value a call does not
take (None or an int for a selection, ``target=5``, a Target class, bytes, a
pair that is no (Module, Function), a negative seed, a truthy string for a
flag) raises the documented ``TileFoundryError`` naming the argument, never an
AttributeError or TypeError from deep inside; and ``str(error)`` of every
refusal is exactly the CLI's one line (docs/api.md), the two-line form's parts
kept as attributes.
"""
from __future__ import annotations

import math
import pathlib
import re
from pathlib import Path

import pytest

import tilefoundry
from tilefoundry.cli.main import main
from tilefoundry.errors import ArgumentError, SelectionError, TileFoundryError

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"


@pytest.fixture()
def in_programs(monkeypatch):
    monkeypatch.chdir(PROGRAMS)


def _pair():
    return tuple(tilefoundry.load("p03_tiled_gemm.py:TiledGemm"))


def test_a_path_is_a_path(in_programs):
    by_text = tilefoundry.load("p03_tiled_gemm.py:TiledGemm")
    by_path = tilefoundry.load(pathlib.Path("p03_tiled_gemm.py:TiledGemm"))
    assert (by_path.module.name, by_path.function.name) == (by_text.module.name, by_text.function.name)
    assert tilefoundry.load_selection(pathlib.Path("p03_tiled_gemm.py"))[0].name == "TiledGemm"
    assert tilefoundry.load_module_file(pathlib.Path("p03_tiled_gemm.py")).TiledGemm.name == "TiledGemm"
    families = ["compute-cost"]
    assert tilefoundry.analyze(pathlib.Path("p03_tiled_gemm.py"), families=families).summary() == \
        tilefoundry.analyze("p03_tiled_gemm.py", families=families).summary()
    assert set(tilefoundry.run(pathlib.Path("p04_split_k_partial.py"))) == \
        set(tilefoundry.run("p04_split_k_partial.py"))


def _hostile_calls():
    """(label, call, argument named) for every public function."""
    from tilefoundry.api import retarget
    from tilefoundry.target import CudaTarget

    p11 = "p11_seq_variants.py:SeqPool"
    opaque = object()
    p04 = "p04_split_k_partial.py"
    calls = []
    for value in (None, 5, 1.5, b"p03_tiled_gemm.py", opaque, "p03\0.py"):
        calls += [(f"load({value!r})", lambda v=value: tilefoundry.load(v), "selection"),
                  (f"load_selection({value!r})", lambda v=value: tilefoundry.load_selection(v), "selection"),
                  (f"load_module_file({value!r})", lambda v=value: tilefoundry.load_module_file(v), "selection"),
                  (f"analyze({value!r})", lambda v=value: tilefoundry.analyze(v), "selection"),
                  (f"run({value!r})", lambda v=value: tilefoundry.run(v), "selection")]
    for pair in ("(None, F)", "(M, None)", "(F, M)", "(M, 5)"):
        def bad_pair(text=pair):
            module, function = _pair()
            return tilefoundry.analyze(eval(text, {"M": module, "F": function}))  # noqa: S307
        calls.append((f"analyze{pair}", bad_pair, "pair"))
    for target in (5, CudaTarget, b"nvidia.h200_sxm", opaque):
        calls += [(f"analyze(target={target!r})",
                   lambda t=target: tilefoundry.analyze(_pair(), families="compute-cost", target=t), "target"),
                  (f"run(target={target!r})", lambda t=target: tilefoundry.run(p04, target=t), "target"),
                  (f"retarget({target!r})", lambda t=target: retarget(_pair()[0], t), "target")]
    for dims in ("seq=96", {"seq": "96"}, {"seq": True}, {5: 96}, [("seq", 96)], {"seq": 96.0}):
        calls += [(f"analyze(dims={dims!r})", lambda d=dims: tilefoundry.analyze(p11, dims=d), "dims"),
                  (f"run(dims={dims!r})", lambda d=dims: tilefoundry.run(p11, dims=d), "dims"),
                  (f"check(dims={dims!r})",
                   lambda d=dims: tilefoundry.check(p11, placed=True, dims=d), "dims")]
    calls += [
        ("analyze(topology=5)", lambda: tilefoundry.analyze(_pair(), families="memory", topology=5), "topology"),
        ("analyze(topology='junk')", lambda: tilefoundry.analyze(_pair(), topology="junk"), "junk"),
        ("analyze(operands='yes')",
         lambda: tilefoundry.analyze(_pair(), families="memory", operands="yes"), "operands"),
        ("check(dims={'seq': []})", lambda: tilefoundry.check(p11, placed=True, dims={"seq": []}), "dims"),
        ("check(placed='yes')", lambda: tilefoundry.check(p04, placed="yes"), "placed"),
        ("check(against=5)", lambda: tilefoundry.check(p04, against=5), "against"),
    ]
    for seed in (-1, "3", 1.5, True):
        calls += [(f"run(seed={seed!r})", lambda s=seed: tilefoundry.run(p04, seed=s), "seed"),
                  (f"check(seed={seed!r})", lambda s=seed: tilefoundry.check(p04, placed=True, seed=s), "seed")]
    for tolerance in ("a", -1.0, math.nan, math.inf, {"output": "x"}):
        calls += [(f"check(rtol={tolerance!r})",
                   lambda r=tolerance: tilefoundry.check(p04, placed=True, rtol=r), "rtol"),
                  (f"check(atol={tolerance!r})",
                   lambda a=tolerance: tilefoundry.check(p04, placed=True, atol=a), "atol")]
    for arrays in (5, opaque, b"in.npz"):
        calls += [(f"run(inputs={arrays!r})", lambda a=arrays: tilefoundry.run(p04, inputs=a), "inputs"),
                  (f"run(weights={arrays!r})", lambda a=arrays: tilefoundry.run(p04, weights=a), "weights")]
    # a test id names the opaque object the same in every process (pytest-xdist
    # workers must collect identical ids), not by its address
    return [(label.replace(repr(opaque), "object()"), call, named) for label, call, named in calls]


CALLS = _hostile_calls()


@pytest.mark.parametrize("label, call, named", CALLS, ids=[c[0] for c in CALLS])
def test_every_public_function_refuses_a_hostile_argument_in_one_line(in_programs, label, call, named):
    with pytest.raises(Exception) as info:
        call()
    error = info.value
    assert isinstance(error, TileFoundryError), f"{label}: {type(error).__name__}: {error}"
    text = str(error)
    assert "\n" not in text and text, text
    assert named in text, text  # the argument (or the value) it refuses is named
    if isinstance(error, (ArgumentError, SelectionError)) and named not in ("junk", "against"):
        assert re.match(r"tilefoundry\.\w+(\.\w+)?: ", text), text  # which call refused


def test_str_of_an_error_is_the_cli_line_and_keeps_its_parts(tmp_path, monkeypatch, capsys):
    """A statement refused by its op raises the reference's two-line form
    inside; the API's str(error) is the CLI's line, its parts attributes."""
    text = (PROGRAMS / "p01_rownorm_mesh.py").read_text()
    written = 'x32 = tf.cast(x_reg, "f32")'
    assert written in text
    (tmp_path / "bad.py").write_text(text.replace(written, written + ' + tf.cast(x_reg, "bf16")'))
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "bad.py"]) == 1
    cli_line = capsys.readouterr().err.strip()
    with pytest.raises(TileFoundryError) as info:
        tilefoundry.load("bad.py")
    error = info.value
    assert cli_line == f"tilefoundry: error: {error}"
    assert "\n" in error.raw  # raised in the two-line form, said in one
    assert error.location and str(error).startswith(f"{error.location}: {error.reason}")
    assert error.value is None or str(error).endswith(f"(value '{error.value}')")
