"""Issue 38 item 4: tensor files in and out. bf16, f16 and fp8 from safetensors
and npz (what ``run --save`` writes reads back); a dtype a format cannot hold
refused by name on ``--save``; ``--save`` writes exactly the file named and
refuses any other extension; each file kind truncated or oversized is one
line; an npz member is held against its parameter from its header, before it
is decompressed; a key named twice is refused; nested tuple outputs have their
own names; converters apply wherever a weight comes from; random f8e8m0 draws
are finite and slice starts respect the stride on every axis."""
from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tilefoundry.cli.main import main
from tilefoundry.errors import EvaluationError
from tilefoundry.execute.tensor_files import LazyTensor, read_tensor_file, save_tensor_file

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"

_PROGRAM = '''
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

H200 = CudaTarget("nvidia.h200_sxm")


@module(entry="scale", target=H200)
class Low:
    @func
    def scale(a: Tensor[(4, 8), "bf16"], b: Tensor[(4, 8), "f16"], c: Tensor[(4, 8), "fp8e4m3"]) -> Tensor[(4, 8), "bf16"]:
        return a * tf.cast(b, "bf16") + tf.cast(c, "bf16")


@module(entry="pair", target=H200)
class Nested:
    @func
    def inner(a: Tensor[(2, 2), "f32"]):
        return a, a + a

    @func
    def pair(a: Tensor[(2, 2), "f32"]):
        return inner(a), a


@module(entry="windows", target=H200)
class Windows:
    @func
    def windows(x: Tensor[(16, 40), "f32"], starts: Tensor[(2,), "i32"]) -> Tensor[(3, 4), "f32"]:
        return tf.slice(x, starts, sizes=(3, 4), strides=(5, 9))


@module(entry="norm", target=H200)
class Offset:
    @func
    def norm(x: Tensor[(4,), "f32"], w: ConstTensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x * w

    @norm.converter("w")
    def _(w_raw: ConstTensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return w_raw + 1.0


@module(entry="scales", target=H200)
class Scales:
    @func
    def scales(s: Tensor[(64,), "f8e8m0"]) -> Tensor[(64,), "f32"]:
        return tf.cast(s, "f32")
'''


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture()
def programs(tmp_path):
    path = tmp_path / "programs.py"
    path.write_text(_PROGRAM)
    return path


def _low_inputs():
    rng = np.random.default_rng(0)
    return {"a": rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16),
            "b": rng.standard_normal((4, 8)).astype(np.float16),
            "c": rng.standard_normal((4, 8)).astype(ml_dtypes.float8_e4m3fn)}


# ---------------------------------------------------------------- reading low-precision inputs


def test_bf16_f16_fp8_inputs_read_from_safetensors_and_npz(capsys, tmp_path, programs):
    from safetensors.numpy import save_file

    from tilefoundry.execution import run

    arrays = _low_inputs()
    save_file(arrays, str(tmp_path / "in.safetensors"))
    np.savez(tmp_path / "in.npz", **arrays)  # ml_dtypes arrays arrive as raw |V2/|V1 bytes
    want = run(f"{programs}:Low", inputs=arrays)["output"]
    for name in ("in.safetensors", "in.npz"):
        got = run(f"{programs}:Low", inputs=str(tmp_path / name))["output"]
        assert got.dtype == ml_dtypes.bfloat16 and np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_what_run_save_writes_reads_back(capsys, tmp_path, programs):
    from tilefoundry.execution import run

    inputs = tmp_path / "in.safetensors"
    from safetensors.numpy import save_file

    save_file(_low_inputs(), str(inputs))
    out = tmp_path / "out.safetensors"
    code, _, err = _run(capsys, "run", "--inputs", str(inputs), "--save", str(out), f"{programs}:Low")
    assert (code, err) == (0, "")
    saved = {k: v.load() for k, v in read_tensor_file(str(out)).items()}
    assert saved["output"].dtype == ml_dtypes.bfloat16
    assert np.array_equal(saved["output"].view(np.uint16),
                          run(f"{programs}:Low", inputs=str(inputs))["output"].view(np.uint16))


def test_save_refuses_a_dtype_its_format_cannot_hold(capsys, tmp_path, programs):
    code, _, err = _run(capsys, "run", "--save", str(tmp_path / "out.npz"), f"{programs}:Low")
    assert code == 1 and "output 'output' is bf16, which npz cannot hold; save to .safetensors" in _one_line(err)
    assert not (tmp_path / "out.npz").exists()
    with pytest.raises(EvaluationError, match="is f4e2m1fn, which safetensors cannot hold|which safetensors cannot hold"):
        save_tensor_file({"x": np.zeros(4, ml_dtypes.float4_e2m1fn)}, str(tmp_path / "x.safetensors"))


def test_save_writes_exactly_the_file_named_and_refuses_other_extensions(capsys, tmp_path):
    p04 = str(PROGRAMS / "p04_split_k_partial.py")
    code, _, err = _run(capsys, "run", "--save", str(tmp_path / "out.npz"), p04)
    assert (code, err) == (0, "") and sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]
    for name in ("out.npy", "out", "out.npz.txt"):
        code, _, err = _run(capsys, "run", "--save", str(tmp_path / name), p04)
        assert code == 1 and "name a .npz or .safetensors file" in _one_line(err)
        assert not (tmp_path / name).exists()


# ---------------------------------------------------------------- damaged files


def _safetensors_bytes(arrays: dict) -> bytes:
    from safetensors.numpy import save

    return save(arrays)


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_safetensors_truncated_and_oversized_are_one_line(tmp_path):
    data = _safetensors_bytes({"x": np.ones((4, 8), np.float32)})
    with pytest.raises(EvaluationError, match="ends at byte 128 of a 100-byte data section"):
        read_tensor_file(_write(tmp_path / "short.safetensors", data[:-28]))
    with pytest.raises(EvaluationError, match="holds 5 bytes past its last tensor"):
        read_tensor_file(_write(tmp_path / "long.safetensors", data + b"\0" * 5))
    with pytest.raises(EvaluationError, match="header in a"):
        read_tensor_file(_write(tmp_path / "head.safetensors", struct.pack("<Q", 2**40) + data[8:]))
    with pytest.raises(EvaluationError, match="short of the 8-byte header length"):
        read_tensor_file(_write(tmp_path / "tiny.safetensors", b"\1\2"))


def test_safetensors_key_named_twice_is_refused(tmp_path):
    header = b'{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    data = struct.pack("<Q", len(header)) + header + b"\0" * 4
    with pytest.raises(EvaluationError, match="names 'x' twice"):
        read_tensor_file(_write(tmp_path / "twice.safetensors", data))


def _npz(members: list) -> bytes:
    """An npz archive of (name, .npy bytes) members, names repeated if asked."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, payload in members:
            archive.writestr(name, payload)
    return buffer.getvalue()


def _npy(array, cut: int = 0, extra: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    data = buffer.getvalue()
    return (data[:-cut] if cut else data) + extra


def test_npz_truncated_and_oversized_members_are_one_line(tmp_path):
    x = np.ones((4, 8), np.float32)
    with pytest.raises(EvaluationError, match="array 'x' is truncated"):
        read_tensor_file(_write(tmp_path / "short.npz", _npz([("x.npy", _npy(x, cut=8))])))
    with pytest.raises(EvaluationError, match="array 'x' is longer than its header states"):
        read_tensor_file(_write(tmp_path / "long.npz", _npz([("x.npy", _npy(x, extra=b"\0" * 8))])))
    with pytest.raises(EvaluationError, match="not a readable npz file"):
        read_tensor_file(_write(tmp_path / "junk.npz", b"PK\3\4 not really"))


def test_npz_key_named_twice_is_refused(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it writes
        data = _npz([("x.npy", _npy(np.ones(2))), ("x.npy", _npy(np.zeros(2)))])
    with pytest.raises(EvaluationError, match="holds 'x.npy' twice"):
        read_tensor_file(_write(tmp_path / "twice.npz", data))


def test_npz_member_is_held_against_its_parameter_before_it_is_decompressed(tmp_path):
    """A member whose header states 2^31 elements is refused by its header alone:
    its data is never read (``load`` is never called)."""
    from tilefoundry.execute.inputs import checked_array
    from tilefoundry.ir.dtype import DType
    from tilefoundry.ir.tensor_type import TensorType

    def never():
        raise AssertionError("decompressed before its shape was checked")

    huge = LazyTensor(np.dtype(np.float32), (2**31,), never)
    with pytest.raises(EvaluationError, match=r"key 'a' holds float32\[2147483648\], expected f32\[4, 8\]"):
        checked_array(huge, TensorType((4, 8), DType.from_name("f32")), "a", "--inputs in.npz")
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
    header["shape"] = (2**31,)
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    with pytest.raises(EvaluationError, match="is truncated"):  # the data is not there at all
        read_tensor_file(_write(tmp_path / "huge.npz", _npz([("a.npy", buffer.getvalue())])))


# ---------------------------------------------------------------- names, converters, draws


def test_nested_tuple_outputs_have_their_own_names(programs):
    from tilefoundry.execution import run

    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    outputs = run(f"{programs}:Nested", inputs={"a": a})
    assert sorted(outputs) == ["output[0][0]", "output[0][1]", "output[1]"]
    assert np.array_equal(outputs["output[0][1]"], a + a)


def test_converter_applies_wherever_the_weight_comes_from(tmp_path, programs):
    """A weight with a converter (stored w, read as 1 + w, as Gemma-2's norms) is
    converted whether it comes from --weights, --inputs or a mapping the caller passes."""
    from safetensors.numpy import save_file

    from tilefoundry.execution import run

    x = np.arange(1, 5, dtype=np.float32)
    stored = np.full(4, 0.5, np.float32)
    save_file({"w": stored}, str(tmp_path / "w.safetensors"))
    save_file({"x": x, "w": stored}, str(tmp_path / "both.safetensors"))
    for outputs in (run(f"{programs}:Offset", inputs={"x": x, "w": stored}),
                    run(f"{programs}:Offset", inputs={"x": x}, weights=str(tmp_path / "w.safetensors")),
                    run(f"{programs}:Offset", inputs=str(tmp_path / "both.safetensors"))):
        assert np.array_equal(outputs["output"], x * 1.5)


def test_random_f8e8m0_draws_are_finite(programs):
    from tilefoundry.execution import run

    for seed in range(3):
        out = run(f"{programs}:Scales", seed=seed)["output"]
        assert np.all(np.isfinite(out)) and np.all(out > 0)


def test_random_slice_starts_respect_stride_and_every_axis(programs):
    """x is 16 x 40, windows 3 x 4 with strides 5 and 9: starts must lie in [0, 6) and
    [0, 13); a draw ignoring the stride (or taking one range for both axes) fails."""
    from tilefoundry.execution import prepare, run

    firsts = set()
    for seed in range(40):
        p = prepare(f"{programs}:Windows", seed=seed)
        starts = p.by_name()["starts"]
        assert 0 <= starts[0] < 6 and 0 <= starts[1] < 13
        firsts.add(int(starts[1]))
        run(f"{programs}:Windows", seed=seed)  # no window leaves x
    assert max(firsts) >= 6  # the second axis uses its own, wider, range
