"""Arguments of a run: random (seeded, per dtype), from ``.npz`` or
``.safetensors`` files, and ConstTensor weights from a checkpoint.

Names: an entry parameter by its authored name; a ConstTensor weight by its
promoted name, the dot-joined Module path and weight name (analysis §2: the
names runtime checkpoint keys use).

Random draws (``numpy.random.default_rng(seed)``, in parameter order):

- a float input: uniform with mean 0 and variance 1 (uniform rather than
  normal: a layer's weights are a quarter-billion draws, and a uniform one is
  several times cheaper); a float weight of rank >= 2: the same scaled to
  standard deviation 1/sqrt(fan-in) (its second-to-last extent), so a layer of
  random weights keeps activations of order one; a rank-1 float weight (a norm
  scale or a bias): 1 + 0.1·(the unit draw);
- an integer input that indexes (positions, page tables, token ids): uniform
  inside the range every op that reads it as an index admits; an integer that
  reaches an index only through arithmetic has no range we can state, and the
  run names it and asks for ``--inputs``; an integer never used as an index:
  uniform in [0, 16);
- an f8e8m0 value (an exponent-only scale): 2^k, k uniform in [-4, 4] (finite);
- a slice's start vector: on each axis inside [0, extent - (size - 1)·stride), so
  every window fits, its stride included;
- a bool: fair coin.
"""
from __future__ import annotations

from math import sqrt

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.expr import Call, postorder
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.op_numerics import np, numpy_dtype, to_dtype

__all__ = ["parameter_names", "random_arguments", "bind_arguments", "index_ranges", "checked_array"]

#: values an integer flows through unchanged on its way to an index
_TRANSPARENT = {"reshape", "transpose", "reshard", "local", "cast", "tuple_get_item"}


def parameter_names(function, promoted: dict) -> list[tuple]:
    """(param Var, name, is weight) in parameter order."""
    return [(p, promoted.get(p, p.name), p in promoted or p.is_const) for p in function.params]


def _index_use(call: Call, position: int):
    """(lo, hi) the operand at ``position`` of ``call`` may take as an index,
    or None when the op does not read it as one."""
    name = call.op.name
    types = [a.type for a in call.args]
    if name == "index_select" and position == 1:
        return 0, int(types[0].shape[call.op.dim])
    if name in ("index_add", "index_copy") and position == 1:
        return 0, int(types[0].shape[call.op.dim])
    if name == "rope" and position == 4:
        return 0, int(types[2].shape[0])
    if name == "slice" and position == 1:
        # a window of `size` elements `stride` apart starts at most at extent - 1 - (size - 1)·stride
        limits = [int(e) - (int(s) - 1) * int(t) for e, s, t in
                  zip(types[0].shape, call.op.sizes, call.op.strides)]
        return 0, _per_axis(limits, types[1])
    if name == "insert_slice" and position == 2:
        limits = [int(d) - int(u) + 1 for d, u in zip(types[0].shape, types[1].shape)]
        return 0, _per_axis(limits, types[2])
    if name == "cache_update" and position in (1, 2):
        # rows [cur_pos, cur_pos + s) of the sequence axis (1) take new's first s rows
        cache_len, new_len = int(types[0].shape[1]), int(types[3].shape[1])
        if position == 2:
            return 1, min(new_len, cache_len) + 1
        return 0, cache_len - new_len + 1
    return None


def _per_axis(limits: list, starts_type):
    """Each axis's own bound where the starts are one vector (element a starts axis a),
    else the bound every axis admits."""
    if not limits:
        return 1
    if isinstance(starts_type, TensorType) and tuple(int(e) for e in starts_type.shape) == (len(limits),):
        return tuple(max(limit, 1) for limit in limits)
    return max(min(limits), 1)


def _tighter(hi, other):
    if hi is None:
        return other
    if isinstance(hi, tuple) or isinstance(other, tuple):
        return tuple(int(v) for v in np.minimum(np.asarray(hi), np.asarray(other)))
    return min(hi, other)


def index_ranges(function) -> dict:
    """id(param) -> (lo, hi) for integer params read as indices, or the name of
    the op through which one reaches an index by arithmetic ("unknown")."""
    users: dict = {}
    for node in postorder(function.body):
        if isinstance(node, Call):
            for position, arg in enumerate(node.args):
                users.setdefault(id(arg), []).append((node, position))
    ranges: dict = {}
    for param in function.params:
        if isinstance(param.type, TensorType) and param.type.dtype.is_int:
            ranges[id(param)] = _range_of(param, users)
    return ranges


def _range_of(param, users: dict):
    lo, hi = 0, None
    stack = [(param, None)]
    seen = set()
    while stack:
        node, via = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for call, position in users.get(id(node), ()):
            found = _index_use(call, position)
            if found is not None:
                if via is not None:
                    return f"unknown:{via}"
                lo = max(lo, found[0])
                hi = _tighter(hi, found[1])
            elif call.op.name in _TRANSPARENT:
                stack.append((call, via))
            else:
                stack.append((call, via or call.op.name))
    if hi is None:
        return None
    if isinstance(hi, tuple):
        return lo, tuple(max(h, lo + 1) for h in hi)
    return lo, max(hi, lo + 1)


def _random_value(rng, type_, is_weight: bool, index_range):
    shape = tuple(int(e) for e in type_.shape)
    dtype = type_.dtype
    if dtype.is_bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.is_int:
        lo, hi = index_range if isinstance(index_range, tuple) else (0, 16)
        if isinstance(hi, tuple):  # one bound per axis, along the starts vector
            hi = np.asarray(hi, dtype=np.int64)
        return rng.integers(lo, hi, size=shape).astype(numpy_dtype(dtype))
    if dtype.name == "f8e8m0":
        # an exponent-only type (no sign, no mantissa): a power of two 2^k, k in [-4, 4], always finite
        return to_dtype(np.exp2(rng.integers(-4, 5, size=shape)).astype(np.float32), dtype)
    # uniform of unit variance, scaled in place: a normal draw costs several times
    # as much, and a layer's weights are a quarter-billion elements
    scale = sqrt(3.0) * 2.0
    spread = 0.1 if is_weight and len(shape) == 1 else (
        1.0 / sqrt(max(shape[-2], 1)) if is_weight and len(shape) >= 2 else 1.0)
    offset = 1.0 if is_weight and len(shape) == 1 else 0.0
    if dtype.name == "bf16":
        return _bf16_draw(rng, shape, np.float32(scale * spread), np.float32(offset), numpy_dtype(dtype))
    return to_dtype(_uniform(rng.random(size=shape, dtype=np.float32), scale * spread, offset), dtype)


def _uniform(draw, scale: float, offset: float):
    """A unit draw in [0, 1) made uniform about ``offset`` with width ``scale``, in place."""
    draw -= np.float32(0.5)
    draw *= np.float32(scale)
    if offset:
        draw += np.float32(offset)
    return draw


#: f32 draws made at a time for a bf16 value (1 MB: they stay in cache)
_DRAW_BLOCK = 1 << 18


def _bf16_draw(rng, shape: tuple, scale, offset, bf16):
    """The f32 draw's top 16 bits, a bf16 value (no rounding needed, several times
    cheaper than round-to-nearest), made a block at a time: the same numbers as
    one whole draw (the generator's stream is read in the same order), without
    an f32 array twice the value's size."""
    count = int(np.prod(shape, dtype=np.int64))
    out = np.empty(count, dtype=np.uint16)
    high = 1 if np.little_endian else 0  # which half of each f32 holds its top bits
    for start in range(0, count, _DRAW_BLOCK):
        draw = _uniform(rng.random(size=min(_DRAW_BLOCK, count - start), dtype=np.float32), scale, offset)
        out[start:start + draw.size] = draw.view(np.uint16)[high::2]
    return out.view(bf16).reshape(shape)


def _check_argument_elements(function, promoted: dict, given: dict) -> None:
    """The arguments are live values of the run: their elements are counted
    against TILEFOUNDRY_MAX_EVAL_ELEMENTS before any is drawn."""
    from tilefoundry.execute.interpreter import type_elements
    from tilefoundry.limits import check

    total = sum(type_elements(param.type) for param, _, _ in parameter_names(function, promoted))
    check("EVAL_ELEMENTS", total, f"the arguments of '{function.name}' hold {total:,} elements")


def random_arguments(function, promoted: dict, seed: int, given: dict) -> dict:
    """param Var -> array: ``given`` (name -> array) where it names one, else a
    seeded random draw; refuses an integer index input it cannot range."""
    _check_argument_elements(function, promoted, given)
    rng = np.random.default_rng(seed)
    ranges = index_ranges(function)
    arguments = {}
    for param, name, is_weight in parameter_names(function, promoted):
        if name in given:
            arguments[param] = given[name]
            continue
        index_range = ranges.get(id(param))
        if isinstance(index_range, str):
            raise EvaluationError(
                f"input '{name}' ({param.type.dtype}) reaches an index through "
                f"'{index_range.split(':', 1)[1]}', so no range for a random draw can be stated; "
                f"give it with --inputs FILE.npz (a key '{name}')")
        arguments[param] = _random_value(rng, param.type, is_weight, index_range)
    return arguments


def bind_arguments(function, promoted: dict, given: dict, *, source: str,
                   require: str | None = None) -> dict:
    """Check each given array against its parameter: the key exists, the shape
    and the dtype agree. ``require`` ("weights"/"inputs") demands every one."""
    names = {name: (param, is_weight) for param, name, is_weight in parameter_names(function, promoted)}
    unknown = sorted(set(given) - set(names))
    if unknown:
        from tilefoundry.errors import did_you_mean

        raise EvaluationError(f"{source}: key '{unknown[0]}' names no parameter or weight of the "
                              f"program{did_you_mean(unknown[0], names)}; it reads {sorted(names)}")
    checked = {}
    for name, (param, is_weight) in names.items():
        if name not in given:
            if require == "weights" and is_weight:
                raise EvaluationError(f"{source}: checkpoint has no key '{name}' "
                                      f"(expected {_type_text(param.type)})")
            continue
        checked[name] = checked_array(given[name], param.type, name, source)
    return checked


def _type_text(type_) -> str:
    shape = tuple(int(e) for e in type_.shape)
    return f"{type_.dtype.name}{list(shape)}"


def checked_array(array, type_, name: str, source: str):
    """``array`` (or a file member, checked from its header before it is read)
    if it has the parameter's shape and dtype; raw bytes of the dtype's width
    (how numpy's npz stores an ml_dtypes bf16 or fp8 array) read as that dtype."""
    from tilefoundry.execute.tensor_files import LazyTensor

    expected = numpy_dtype(type_.dtype)
    shape = tuple(int(e) for e in type_.shape)
    if isinstance(array, LazyTensor):
        if tuple(array.shape) != shape or not _reads_as(array.dtype, expected):
            _wrong(array.dtype, array.shape, type_, name, source)
        array = array.load()
    array = np.asarray(array)
    if _raw(array.dtype, expected):
        array = array.view(expected)
    if tuple(array.shape) != shape or array.dtype != expected:
        _wrong(array.dtype, array.shape, type_, name, source)
    return array


def _raw(dtype, expected) -> bool:
    return dtype.kind == "V" and dtype.fields is None and dtype.itemsize == expected.itemsize \
        and dtype != expected and dtype.name == f"void{8 * dtype.itemsize}"


def _reads_as(dtype, expected) -> bool:
    return dtype == expected or _raw(dtype, expected)


def _wrong(dtype, shape, type_, name, source):
    found = f"{dtype.name}{list(shape)}"
    raise EvaluationError(f"{source}: key '{name}' holds {found}, expected "
                          f"{_type_text(type_)}; convert it to that dtype and shape")
