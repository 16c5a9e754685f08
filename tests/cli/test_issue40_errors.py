"""Issue 40 item 7: errors of the same form everywhere. One line naming
`file:line:col` where there is a source location, the value, the rule and the remedy:
a level the target cannot run points at its `Topology(...)`, a `--dim` out of range at its
`DimVar(...)`; Python callers are told `dims={...}`, command lines `--dim`; a misspelt op's
`VerifyError.location` is its `file:line:col`; a wrong family name is an ArgumentError;
`run` warns of (or with --strict refuses) a program `analyze --memory` refuses."""
from __future__ import annotations

import pytest

from tests.conftest import PROGRAMS
from tilefoundry.cli.main import main

HEADER = '''\
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget
'''
TOO_MANY_THREADS = HEADER + '''
LEVELS = (Topology("cta", 1), Topology("thread", 2048))


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Scale:
    @func
    def f(x: Tensor[(8, 64), "f32"]) -> Tensor[(8, 64), "f32"]:
        return x * 2.0
'''
OPEN_COLS = HEADER + '''
COLS = DimVar("cols", 1, 64)


@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 1),))
class Cols:
    @func
    def f(x: Tensor[(8, COLS), "f32"]) -> Tensor[(8, COLS), "f32"]:
        return x * 2.0
'''
MISSPELT = OPEN_COLS.replace("return x * 2.0", "return tf.exq(x)")


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "prog.py"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _at(path: str, text: str, token: str) -> str:
    """``path:line:col`` (1-based) of the first ``token`` in ``text``."""
    offset = text.index(token)
    line = text.count("\n", 0, offset) + 1
    return f"{path}:{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _error(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("tilefoundry: error: ")
    return err.removeprefix("tilefoundry: error: ").rstrip("\n")


def test_item7_a_level_the_target_cannot_run_points_at_its_topology(tmp_path, capsys):
    path = _write(tmp_path, TOO_MANY_THREADS)
    where = _at(path, TOO_MANY_THREADS, 'Topology("thread", 2048)')
    assert _error(capsys, "analyze", "--memory", path) == (
        f"{where}: program topology level 'thread' with extent 2048 is invalid: CudaTarget (cuda): "
        "topology 'thread' extent 2048 must satisfy 1 <= extent <= 1024; declare the level with "
        "an extent the target runs, or analyse for another --target")


def test_item7_a_dim_out_of_range_points_at_its_dimvar_with_the_remedy(tmp_path, capsys):
    path = _write(tmp_path, OPEN_COLS)
    where = _at(path, OPEN_COLS, 'DimVar("cols", 1, 64)')
    assert _error(capsys, "analyze", "--memory", "--dim", "cols=100", path) == (
        f"{where}: analyze: dimension 'cols' was declared over [1, 64) and cannot take 100; bind "
        "an extent in that range (--dim cols=63 is the largest) or widen the DimVar's range "
        "where it is declared")


def _analyze(path: str, dims=None):
    """The library's analyze of a file selection (what tilefoundry.analyze runs)."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(path)
    return analyze(module, function, analysis=("memory",), dims=dims)


def test_item7_python_callers_are_told_dims_not_the_flag(tmp_path, capsys):
    from tilefoundry.errors import AnalysisError

    path = _write(tmp_path, OPEN_COLS)
    with pytest.raises(AnalysisError) as info:
        _analyze(path)
    assert str(info.value) == ("analyze needs one EXTENT for every open dimension: cols is declared "
                               'as [1, 64); bind it with dims={"cols": EXTENT} (try 1, 2, 32, 63)')
    with pytest.raises(AnalysisError) as info:
        _analyze(path, dims={"cols": 64})
    assert 'dims={"cols": 63} is the largest' in str(info.value)
    assert info.value.location == _at(path, OPEN_COLS, 'DimVar("cols", 1, 64)')
    # the command line, in the same process, still says --dim
    assert "bind it with --dim cols=EXTENT" in _error(capsys, "analyze", "--memory", path)


def test_item7_a_misspelt_op_error_carries_its_location(tmp_path):
    from tilefoundry.errors import VerifyError

    path = _write(tmp_path, MISSPELT)
    with pytest.raises(VerifyError) as info:
        _analyze(path, dims={"cols": 8})
    where = _at(path, MISSPELT, "tf.exq")
    assert info.value.location == where
    assert str(info.value) == f"{where}: unknown Op name 'tf.exq'; did you mean 'tf.exp'?"


def test_item7_a_wrong_family_name_is_an_argument_error():
    from tilefoundry.api import families_of
    from tilefoundry.errors import AnalysisError, ArgumentError

    with pytest.raises(ArgumentError) as info:  # tilefoundry.analyze's check of families=
        families_of("memroy")
    assert not isinstance(info.value, AnalysisError) and isinstance(info.value, TypeError)
    assert str(info.value).endswith("did you mean 'memory'?")


OVERFLOW = str(PROGRAMS / "p12_smem_overflow.py")
# p12 stages each CTA's (64 / 2, width) f32 rows of `a` in smem: 32 * 8192 * 4 = 1 MiB at
# width 8192, past the H200's 232448 B of shared memory per CTA
OVER = (f"p12_smem_overflow.py:29:19: value 'a_s' of function 'staged_product' (v0 in the "
        f"analysed program) needs {32 * 8192 * 4} B in smem, more than the 232448 B the target states")


def test_item7_run_warns_of_a_program_analyze_refuses_for_capacity(capsys):
    code = main(["run", "--dim", "width=8192", OVERFLOW])
    out, err = capsys.readouterr()
    assert code == 0 and "output: f32[64, 8192]" in out
    assert err.startswith("tilefoundry: warning: analyze --memory refuses this program: ")
    assert OVER in err
    assert err.rstrip().endswith("numpy runs it without the target's capacities (--strict refuses it)")


def test_item7_run_strict_refuses_it_and_a_program_that_fits_runs_silently(capsys):
    line = _error(capsys, "run", "--strict", "--dim", "width=8192", OVERFLOW)
    assert "more than the 232448 B the target states" in line and line.endswith("(gmem)")
    code = main(["run", "--strict", "--dim", "width=64", OVERFLOW])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")


def test_item7_the_site_named_is_in_the_program_analysed(tmp_path):
    """Two files declare a `cols` (as every zoo model declares `ctx_len`): a refusal of
    the first program's binding points into its own file, whichever loaded last."""
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import AnalysisError

    first = tmp_path / "first.py"
    first.write_text(OPEN_COLS, encoding="utf-8")
    second = tmp_path / "second.py"
    second.write_text("\n\n" + OPEN_COLS, encoding="utf-8")  # declared two lines lower
    module, function = load_selection(str(first))
    load_selection(str(second))
    from tilefoundry.analysis.analyze import analyze

    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis=("memory",), dims={"cols": 64})
    assert info.value.location == _at(str(first), OPEN_COLS, 'DimVar("cols", 1, 64)')
