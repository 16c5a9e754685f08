"""Issue 38 items 2 and 3: ``check --against`` names its sides ``program`` and
``reference``, and a twin cannot fool or crash it: each abuse (sys.exit, any
BaseException, prints at import or call time, a complex, string, object or
ragged result, a wrong shape or kind, an in-place change of its inputs) is one
line naming the twin and what it returned, exit 1, with nothing it printed in
``--json`` output."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilefoundry.cli.main import main

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
P04 = str(PROGRAMS / "p04_split_k_partial.py")

_PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget


@module(entry="same", target=CudaTarget("nvidia.h200_sxm"))
class Same:
    @func
    def same(a: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        return tf.reshape(a, (4, 8))


@module(entry="same", target=CudaTarget("nvidia.h200_sxm"))
class OtherTypes:
    @func
    def same(a: Tensor[(4, 8), "f16"]) -> Tensor[(4, 8), "f32"]:
        return tf.cast(a, "f32")
'''

_GEMM = '''
import numpy as np

def gemm(a, b):
    out = (a.astype(np.float64) @ b.astype(np.float64)) * 0.5
    return out, out.sum(axis=1, keepdims=True)
'''


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("noise")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture()
def same(tmp_path):
    path = tmp_path / "same.py"
    path.write_text(_PROGRAM)
    return f"{path}:Same"


def _twin(tmp_path, body: str, name: str = "twin") -> str:
    path = tmp_path / f"{name}_file.py"
    path.write_text("import numpy as np\nimport sys\n" + body)
    return f"{path}:{name}"


def test_sides_are_named_program_and_reference(capsys, tmp_path):
    """Text and JSON say program/reference; a PASS never prints max_rel=inf."""
    twin = tmp_path / "gemm.py"
    twin.write_text(_GEMM)
    code, out, err = _run(capsys, "check", "--against", f"{twin}:gemm", P04)
    assert code == 0 and err == ""
    assert "program " in out and "reference " in out and "expected" not in out and "got" not in out
    assert "max_rel=inf" not in out
    code, out, _ = _run(capsys, "check", "--json", "--against", f"{twin}:gemm", P04)
    verdict = json.loads(out)["bindings"][0]["verdicts"][0]
    assert {"program", "reference", "allowed", "rel_floor"} <= set(verdict)
    assert "expected" not in verdict and "actual" not in verdict


def test_program_and_reference_are_not_swapped(tmp_path):
    """The program's own value is reported as ``program``: a reference of 3x the
    program reports the smaller number on the program's side."""
    from tilefoundry.execution import check

    def triple(a, b):
        out = (a.astype("f8") @ b.astype("f8")) * 0.5
        return out * 3, out.sum(axis=1, keepdims=True) * 3

    verdict = check(P04, against=triple)[0].verdicts[0]
    assert not verdict.passed
    assert verdict.reference_value == pytest.approx(3 * verdict.program_value, rel=1e-3)


ABUSES = [
    ("sys.exit at call", "def twin(a):\n    sys.exit(3)\n", "raised SystemExit: 3"),
    ("BaseException", "class Boom(BaseException):\n    pass\n\ndef twin(a):\n    raise Boom('no')\n",
     "raised Boom: no"),
    ("complex", "def twin(a):\n    return a * 1j\n", "is complex"),
    ("string", "def twin(a):\n    return 'yes'\n", "is text"),
    ("object", "def twin(a):\n    return np.array([object()] * 32, dtype=object).reshape(4, 8)\n",
     "Python object array"),
    ("ragged", "def twin(a):\n    return [[1.0, 2.0], [3.0]]\n", "numpy cannot hold as one array"),
    ("wrong shape", "def twin(a):\n    return a.T\n", "has shape [8, 4] where the program's is [4, 8]"),
    ("wrong kind", "def twin(a):\n    return a.astype(np.int32)\n", "is integer (int32) where the program's is float"),
    ("nested tuple", "def twin(a):\n    return ((a, a),)\n", ("numpy cannot hold", "has shape")),
    ("unknown name", "def twin(a):\n    return {'out': a}\n", "names no output of the program"),
]


@pytest.mark.parametrize("kind,body,says", ABUSES, ids=[a[0] for a in ABUSES])
def test_twin_abuse_is_one_line_naming_the_twin(capsys, tmp_path, same, kind, body, says):
    twin = _twin(tmp_path, body)
    code, out, err = _run(capsys, "check", "--json", "--against", twin, same)
    line = _one_line(err)
    assert code == 1 and out == "", kind
    says = (says,) if isinstance(says, str) else says
    assert f"--against {twin}" in line and any(s in line for s in says), line


def test_twin_exit_at_import_is_one_line(capsys, tmp_path, same):
    twin = _twin(tmp_path, "sys.exit('bye')\n\ndef twin(a):\n    return a\n")
    code, out, err = _run(capsys, "check", "--against", twin, same)
    assert code == 1 and "running the file failed (SystemExit: bye)" in _one_line(err)


def test_twin_prints_never_reach_json_output(capsys, tmp_path, same):
    twin = _twin(tmp_path, "print('noise at import')\n\ndef twin(a):\n    print('noise at call')\n"
                           "    return a\n")
    code, out, err = _run(capsys, "check", "--json", "--against", twin, same)
    assert code == 0 and json.loads(out)["passed"] is True
    assert "noise at import" in err and "noise at call" in err


def test_twin_changing_its_inputs_in_place_cannot_fool_the_check(capsys, tmp_path, same):
    """The program's output is a reshape of its input (a view in numpy): a twin that
    doubles its argument in place and returns it is wrong, and fails."""
    twin = _twin(tmp_path, "def twin(a):\n    a *= 2\n    return a\n")
    code, out, _ = _run(capsys, "check", "--against", twin, same)
    assert code == 1 and "output: FAIL" in out


def test_program_twin_inputs_are_checked_against_its_own_types(capsys, tmp_path, same):
    other = same.replace(":Same", ":OtherTypes")
    code, _, err = _run(capsys, "check", "--against", other, same)
    line = _one_line(err)
    assert code == 1 and "key 'a' holds float32[4, 8], expected f16[4, 8]" in line


def test_max_rel_is_stated_above_a_floor_and_never_inf_on_a_pass():
    """An element whose reference is 0 (where any difference is an infinite relative
    one) is held to its bound but left out of max_rel, which names its floor."""
    import numpy as np

    from tilefoundry.execute.compare import REL_FLOOR, compare, derived_bound

    reference = np.array([0.0, 1e-9, 2.0, -4.0])
    program = reference + np.array([1e-7, 1e-7, 2e-6, 0.0])
    verdict = compare("output", program, reference, derived_bound(np.full(4, 1e-5), "test"))
    assert verdict.passed and verdict.rel_floor == REL_FLOOR * 4.0
    assert verdict.max_rel == pytest.approx(1e-6)  # 2e-6 / 2.0: the elements below the floor not counted
    failing = compare("output", program, reference, derived_bound(np.full(4, 1e-8), "test"))
    assert not failing.passed and failing.worst_index == (2,)
    assert (failing.program_value, failing.reference_value, failing.allowed_value) == (program[2], 2.0, 1e-8)
