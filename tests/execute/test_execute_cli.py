"""`tilefoundry run` and `tilefoundry check` (issue 20 items 2, 4, 5): outputs,
twins with explicit or derived bounds, exit codes, and one line for every
hostile input, never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tilefoundry.cli.main import main

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
P04 = str(PROGRAMS / "p04_split_k_partial.py")
P08 = str(PROGRAMS / "p08_shape_ops.py")


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_run_prints_every_output_with_statistics(capsys):
    code, out, err = _run(capsys, "run", P04)
    assert (code, err) == (0, "")
    rows = [line for line in out.splitlines() if line.startswith("output")]
    assert len(rows) == 2
    assert rows[0].startswith("output[0]: f32[128, 64] min=") and "nonfinite=0 sha256:" in rows[0]


def test_run_json_matches_the_api_and_the_schema(capsys):
    from tilefoundry.execution import run
    from tilefoundry.render.json_contract import validation_errors

    code, out, _ = _run(capsys, "run", "--json", "--seed", "5", P04)
    document = json.loads(out)
    assert code == 0 and validation_errors("run", document) == []
    outputs = run(P04, seed=5)
    mean = float(outputs["output[0]"].astype(np.float64).mean())
    assert document["outputs"][0]["mean"] == pytest.approx(mean, rel=1e-12)
    assert [i["name"] for i in document["inputs"]] == ["a", "b"]


def test_run_reads_inputs_and_saves_outputs(capsys, tmp_path):
    """Inputs from an .npz by parameter name; --save writes what was computed."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", a=a, b=b)
    saved = tmp_path / "out.npz"
    code, _, err = _run(capsys, "run", "--inputs", str(tmp_path / "in.npz"), "--save", str(saved), P04)
    assert (code, err) == (0, "")
    with np.load(saved) as data:
        np.testing.assert_allclose(data["output[0]"], (a.astype(np.float64) @ b) * 0.5, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("content,expected", [
    ({"a": np.zeros((128, 1024), np.float32), "c": np.zeros(3)}, "key 'c' names no parameter"),
    ({"a": np.zeros((128, 1000), np.float32)}, "key 'a' holds float32[128, 1000], expected f32[128, 1024]"),
    ({"a": np.zeros((128, 1024), np.float64)}, "key 'a' holds float64[128, 1024], expected f32[128, 1024]"),
])
def test_hostile_input_files_give_one_line(capsys, tmp_path, content, expected):
    path = tmp_path / "in.npz"
    np.savez(path, **content)
    code, out, err = _run(capsys, "run", "--inputs", str(path), P04)
    assert code == 1 and out == ""
    assert expected in _one_line(err)


def test_unreadable_and_wrong_kind_files_give_one_line(capsys, tmp_path):
    bad = tmp_path / "in.npz"
    bad.write_text("not a zip")
    code, _, err = _run(capsys, "run", "--inputs", str(bad), P04)
    assert code == 1 and "not a readable npz file" in _one_line(err)
    code, _, err = _run(capsys, "run", "--inputs", str(tmp_path / "in.csv"), P04)
    assert code == 1 and "give a .npz or .safetensors file" in _one_line(err)


def test_nan_inputs_are_counted_not_crashed_on(capsys, tmp_path):
    a = np.full((128, 1024), np.nan, np.float32)
    np.savez(tmp_path / "in.npz", a=a)
    code, out, err = _run(capsys, "run", "--json", "--inputs", str(tmp_path / "in.npz"), P04)
    document = json.loads(out)
    assert code == 0 and err == ""
    assert document["outputs"][0]["nonfinite"] == 128 * 64


def test_index_input_out_of_range_is_one_line(capsys, tmp_path):
    """p08's cache position is an index input: given out of range it is
    refused naming the value and the range."""
    from tilefoundry.execution import prepare

    names = {name: param for param, name, _ in prepare(P08).names}
    index_names = [n for n, p in names.items() if p.type.dtype.is_int]
    assert index_names, "p08 reads an integer index input"
    arrays = {n: np.full(tuple(int(e) for e in names[n].type.shape), 10**6,
                         dtype=np.int32 if names[n].type.dtype.name == "i32" else np.int64)
              for n in index_names}
    np.savez(tmp_path / "in.npz", **arrays)
    code, _, err = _run(capsys, "run", "--inputs", str(tmp_path / "in.npz"), P08)
    line = _one_line(err)
    assert code == 1 and "1000000" in line and "range" in line


def test_safetensors_checkpoint_keys_are_dotted_weight_names(capsys, tmp_path):
    """p06's weights are promoted under their dotted Module path (blk0.w_q ...):
    a full bf16 checkpoint runs; one missing a key is refused naming the key
    and the expected type; a wrong dtype names the found and expected types."""
    import ml_dtypes
    from safetensors.numpy import save_file

    from tilefoundry.execution import prepare

    source = str(PROGRAMS / "p06_module_tree.py") + ":MiniStack"
    weights = {name: param.type for param, name, is_weight in prepare(source).names if is_weight}
    assert "blk1.w_q" in weights
    full = {name: np.full(tuple(int(e) for e in t.shape), 0.01, np.float32).astype(ml_dtypes.bfloat16)
            for name, t in weights.items()}
    save_file(full, str(tmp_path / "full.safetensors"))
    code, _, err = _run(capsys, "run", "--weights", str(tmp_path / "full.safetensors"), source)
    assert (code, err) == (0, "")
    partial = {k: v for k, v in full.items() if k != "blk1.w_q"}
    save_file(partial, str(tmp_path / "partial.safetensors"))
    code, _, err = _run(capsys, "run", "--weights", str(tmp_path / "partial.safetensors"), source)
    assert code == 1 and "no key 'blk1.w_q' (expected bf16[256, 256])" in _one_line(err)
    wrong = dict(full, **{"blk1.w_q": np.zeros((256, 256), np.float32)})
    save_file(wrong, str(tmp_path / "wrong.safetensors"))
    code, _, err = _run(capsys, "run", "--weights", str(tmp_path / "wrong.safetensors"), source)
    assert code == 1 and "key 'blk1.w_q' holds float32[256, 256], expected bf16[256, 256]" in _one_line(err)


_TWIN = '''
import numpy as np

def gemm(a, b):
    out = (a.astype(np.float64) @ b.astype(np.float64)) * 0.5
    return out, out.sum(axis=1, keepdims=True)

def wrong(a, b):
    out = (a.astype(np.float64) @ b.astype(np.float64))
    return out, out.sum(axis=1, keepdims=True)
'''


def test_check_against_a_python_twin(capsys, tmp_path):
    twin = tmp_path / "impl.py"
    twin.write_text(_TWIN)
    code, out, err = _run(capsys, "check", "--against", f"{twin}:gemm", P04)
    assert (code, err) == (0, ""), out
    assert "output[0]: PASS" in out and "bound f32 output: |program - reference| <= min(W_program + W_reference, " in out
    code, out, _ = _run(capsys, "check", "--json", "--against", f"{twin}:wrong", P04)
    document = json.loads(out)
    assert code == 1 and document["passed"] is False
    verdict = document["bindings"][0]["verdicts"][0]
    assert verdict["passed"] is False and verdict["max_rel"] > 0.4


def test_check_explicit_bounds_per_output(capsys, tmp_path):
    """--rtol NAME=X bounds one output; a loose bound passes the wrong twin's
    second output only where it is stated."""
    twin = tmp_path / "impl.py"
    twin.write_text(_TWIN)
    code, out, _ = _run(capsys, "check", "--against", f"{twin}:wrong", "--rtol", "output[1]=2",
                        "--atol", "0", P04)
    assert code == 1
    assert "output[1]: PASS" in out and "output[0]: FAIL" in out


@pytest.mark.parametrize("seed", ["0", "3"])
def test_check_against_a_second_program(capsys, seed):
    """A program checked against itself passes with a derived bound, at any
    seed: the twin is given the same arrays, never a draw of its own (at seed 0
    a fresh draw would match by chance)."""
    code, out, _ = _run(capsys, "check", "--seed", seed, "--against", f"{P04}:SplitKGemm", P04)
    assert code == 0 and out.count("PASS") >= 3, out


def test_check_placed_over_a_dim_list(capsys):
    code, out, err = _run(capsys, "check", "--placed", "--dim", "seq=96,1024",
                          str(PROGRAMS / "p11_seq_variants.py") + ":SeqPool")
    assert (code, err) == (0, "")
    assert out.count("placed: PASS") == 2


@pytest.mark.parametrize("argv,code,text", [
    (("check", P04), 2, "name a twin"),
    (("run", "--dim", "seq=1,2", str(PROGRAMS / "p11_seq_variants.py")), 1, "one binding"),
    (("check", "--placed", "--rtol", "x", P04), 2, "X a number"),
])
def test_usage_errors_are_one_line(capsys, argv, code, text):
    got, _, err = _run(capsys, *argv)
    assert got == code and text in _one_line(err)


_TORCH_TWIN = '''
import numpy as np
import fake_torch as torch

def gemm(a, b):
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    out = torch.from_numpy((a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)) * 0.5)
    return out, torch.from_numpy(out.numpy().sum(axis=1, keepdims=True))
'''

_FAKE_TORCH = '''
"""The slice of torch's API a twin's conversion uses (torch is optional here)."""
import numpy as np

__name__ = "torch"
bfloat16 = "torch.bfloat16"


class Tensor:
    def __init__(self, array, dtype=None):
        self._array = np.asarray(array)
        self.dtype = dtype or f"torch.{self._array.dtype.name}"

    def to(self, dtype):
        return Tensor(self._array, dtype)

    def detach(self):
        return self

    def cpu(self):
        return self

    def float(self):
        return Tensor(self._array.astype(np.float32))

    def numpy(self):
        return self._array


def from_numpy(array):
    return Tensor(array)
'''


def test_a_twin_whose_file_imports_torch_gets_tensors(capsys, tmp_path, monkeypatch):
    """A twin module that imports torch is handed tensors and may return them
    (a stand-in module keeps torch optional: the conversion is what is tested)."""
    (tmp_path / "fake_torch.py").write_text(_FAKE_TORCH)
    (tmp_path / "impl.py").write_text(_TORCH_TWIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = _run(capsys, "check", "--against", f"{tmp_path / 'impl.py'}:gemm", P04)
    assert (code, err) == (0, ""), out
    assert out.count("]: PASS") == 2
