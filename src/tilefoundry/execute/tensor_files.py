"""Tensor files in and out: ``.safetensors`` and ``.npz``, read member by
member after every header is checked, written to exactly the path named.

Reading never trusts a size it has not checked: a safetensors header is read
as JSON (a key named twice refused) and each tensor's bytes must be exactly
its dtype's width times its shape, inside the file, with nothing after the
last one; an npz member's ``.npy`` header (shape, dtype) is read before its
data is decompressed, its uncompressed size must match it, a name inside the
zip archive twice is refused, and nothing is unpickled. A member is loaded
only when the run binds it (``LazyTensor.load``), after its shape and dtype
were held against the parameter that reads it.

dtypes: safetensors holds f32, f16, bf16, fp8 (e4m3, e5m2, e8m0), i32, i64 and
bool (and f64, which a parameter never takes); npz holds numpy's own dtypes,
and a bf16 or fp8 array an ``ml_dtypes`` user saved with ``numpy.savez``
arrives as raw bytes (``|V2``/``|V1``) that a parameter of that width reads
as its own dtype. ``--save`` refuses a dtype its format cannot hold, by name.
"""
from __future__ import annotations

import json
import os
import struct
from math import prod

from tilefoundry.errors import EvaluationError
from tilefoundry.semantics.op_numerics import dtype_name, np

__all__ = ["LazyTensor", "read_tensor_file", "save_tensor_file", "check_holds", "SAFETENSORS_DTYPES"]

#: safetensors dtype string -> (module, attribute) of the numpy type (the format's own list)
SAFETENSORS_DTYPES = {
    "F64": ("numpy", "float64"), "F32": ("numpy", "float32"), "F16": ("numpy", "float16"),
    "BF16": ("ml_dtypes", "bfloat16"), "F8_E4M3": ("ml_dtypes", "float8_e4m3fn"),
    "F8_E5M2": ("ml_dtypes", "float8_e5m2"), "F8_E8M0": ("ml_dtypes", "float8_e8m0fnu"),
    "I64": ("numpy", "int64"), "I32": ("numpy", "int32"), "I16": ("numpy", "int16"),
    "I8": ("numpy", "int8"), "U8": ("numpy", "uint8"), "BOOL": ("numpy", "bool_"),
}
_HEADER_LIMIT = 100 * 2**20  # the safetensors format's own cap on its JSON header


def _numpy_type(code: str):
    import importlib

    module, attribute = SAFETENSORS_DTYPES[code]
    return np.dtype(getattr(importlib.import_module(module), attribute))


class LazyTensor:
    """One member of a tensor file: its dtype and shape from the header, its
    data read by ``load()``."""

    __slots__ = ("dtype", "shape", "_load")

    def __init__(self, dtype, shape: tuple, load):
        self.dtype = dtype
        self.shape = shape
        self._load = load

    def load(self):
        return self._load()


def read_tensor_file(path: str) -> dict:
    """name -> LazyTensor of a ``.npz`` or ``.safetensors`` file, every header checked."""
    kind = "safetensors" if path.endswith(".safetensors") else "npz"
    try:
        return _read_safetensors(path) if kind == "safetensors" else _read_npz(path)
    except FileNotFoundError:
        raise EvaluationError(f"{path}: no such file") from None
    except EvaluationError:
        raise
    except (OSError, ValueError, KeyError, EOFError, struct.error) as exc:
        raise EvaluationError(f"{path}: not a readable {kind} file ({type(exc).__name__}: {exc})") from None


def _refuse(path: str, what: str):
    raise EvaluationError(f"{path}: {what}")


def _unique_pairs(path):
    def pairs(items):
        found = {}
        for key, value in items:
            if key in found:
                _refuse(path, f"the header names '{key}' twice; each tensor is named once")
            found[key] = value
        return found
    return pairs


def _read_safetensors(path: str) -> dict:
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            _refuse(path, f"holds {len(head)} bytes, short of the 8-byte header length a safetensors file starts with")
        length = struct.unpack("<Q", head)[0]
        if length > min(_HEADER_LIMIT, size - 8):
            _refuse(path, f"states a {length:,}-byte header in a {size:,}-byte file (truncated, or not safetensors)")
        header = json.loads(handle.read(length).decode("utf-8"), object_pairs_hook=_unique_pairs(path))
    if not isinstance(header, dict):
        _refuse(path, "the header is not a JSON object of tensors")
    base, data_size, spans = 8 + length, size - 8 - length, []
    members = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        members[name], span = _safetensors_member(path, name, entry, base, data_size)
        spans.append(span)
    end = max((stop for _, stop in spans), default=0)
    if end != data_size:
        _refuse(path, f"holds {data_size - end:,} bytes past its last tensor (a damaged or padded file)")
    return members


def _safetensors_member(path, name, entry, base, data_size):
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        _refuse(path, f"tensor '{name}' lacks dtype, shape or data_offsets in the header")
    code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if code not in SAFETENSORS_DTYPES:
        _refuse(path, f"tensor '{name}' has dtype {code!r}, which no parameter takes "
                      f"(readable: {', '.join(SAFETENSORS_DTYPES)})")
    if not (isinstance(shape, list) and all(isinstance(e, int) and e >= 0 for e in shape)
            and isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) and o >= 0 for o in offsets)):
        _refuse(path, f"tensor '{name}' has a malformed shape {shape!r} or data_offsets {offsets!r}")
    dtype = _numpy_type(code)
    start, stop = offsets
    need = prod(shape) * dtype.itemsize
    if stop - start != need:
        _refuse(path, f"tensor '{name}' spans {stop - start:,} bytes where {code}{shape} needs {need:,}")
    if stop > data_size:
        _refuse(path, f"tensor '{name}' ends at byte {stop:,} of a {data_size:,}-byte data section "
                      "(the file is truncated)")

    def load():
        with open(path, "rb") as handle:
            handle.seek(base + start)
            data = handle.read(need)
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    return LazyTensor(dtype, tuple(shape), load), (start, stop)


def _read_npz(path: str) -> dict:
    import zipfile

    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        _refuse(path, f"not a readable npz file ({exc})")
    names = [info.filename for info in archive.infolist()]
    seen = set()
    for name in names:
        if name in seen:
            _refuse(path, f"the archive holds '{name}' twice; each array is named once")
        seen.add(name)
    members = {}
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            _refuse(path, f"member '{info.filename}' is not a .npy array")
        key = info.filename[:-4]
        members[key] = _npz_member(path, archive, info, key)
    return members


def _npz_member(path, archive, info, key):
    with archive.open(info) as handle:
        version = np.lib.format.read_magic(handle)
        reader = {(1, 0): np.lib.format.read_array_header_1_0,
                  (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if reader is None:
            _refuse(path, f"array '{key}' has .npy format version {version}, which we do not read")
        shape, fortran, dtype = reader(handle)
        start = handle.tell()
    if dtype.hasobject:
        _refuse(path, f"array '{key}' holds Python objects; only numeric arrays are read (nothing is unpickled)")
    need = start + prod(shape) * dtype.itemsize
    if info.file_size != need:
        state = "truncated" if info.file_size < need else "longer than its header states"
        _refuse(path, f"array '{key}' is {state}: {info.file_size:,} bytes where "
                      f"{dtype.name}{list(shape)} needs {need:,}")

    def load():
        with archive.open(info) as handle:
            return np.lib.format.read_array(handle, allow_pickle=False)

    return LazyTensor(dtype, tuple(shape), load)


# ---------------------------------------------------------------- writing

_NPZ_DTYPES = {"float32", "float16", "float64", "int32", "int64", "bool"}
_SAFETENSORS_NAMES = {"float32", "float16", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2",
                      "float8_e8m0fnu", "int32", "int64", "int16", "int8", "uint8", "bool"}


def _format_of(path: str, flag: str):
    if path.endswith(".safetensors"):
        return "safetensors", _SAFETENSORS_NAMES
    if path.endswith(".npz"):
        return "npz", _NPZ_DTYPES
    raise EvaluationError(f"{flag} {path}: name a .npz or .safetensors file (the extension "
                          "decides the format)")


def check_holds(dtypes: dict, path: str, flag: str = "--save") -> None:
    """Refuse, by name, an output whose dtype (name -> numpy dtype) the format of
    ``path`` cannot hold: before a run, from the output types."""
    fmt, holds = _format_of(path, flag)
    for name, dtype in dtypes.items():
        if np.dtype(dtype).name not in holds:
            other = "; save to .safetensors, which keeps it" if fmt == "npz" else ""
            raise EvaluationError(f"{flag} {path}: output '{name}' is {dtype_name(dtype)}, "
                                  f"which {fmt} cannot hold{other}")


def save_tensor_file(arrays: dict, path: str, flag: str = "--save") -> None:
    """Write ``arrays`` to exactly ``path``; its extension decides the format."""
    fmt, _ = _format_of(path, flag)
    check_holds({name: np.asarray(array).dtype for name, array in arrays.items()}, path, flag)
    arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    try:
        if fmt == "safetensors":
            from safetensors.numpy import save

            data = save(arrays)
            with open(path, "wb") as handle:
                handle.write(data)
        else:
            with open(path, "wb") as handle:  # a handle: numpy adds no extension to it
                np.savez(handle, **arrays)
    except OSError as exc:
        raise EvaluationError(f"cannot write {flag} {path}: {exc.strerror}") from None
