"""The answer as a program: a placement written as authoring-DSL source.

Each choice is written as a person writes a placed kernel (the golden programs
p03 tiled GEMM, p04 split-K, and the zoo's placed roots): named constants, one
Module over the level the search placed on, a ``with Mesh(...)`` whose axes are
the splits chosen, reshards that stage each operand, a ``for kk in tile(...)``
K loop with an f32 accumulator, and a reshard of the result to gmem. A mesh
axis of extent 1 is left out, so the text names only the splits it makes.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MatmulChoice", "RowsChoice", "fits_level", "on_level", "program_text"]


@dataclass(frozen=True, order=True)
class MatmulChoice:
    """A GEMM / GEMV placement: CTA grid ``grid_m x grid_n x split_k`` (split-K
    reduces K partials over ``split_k`` CTAs), each walking its K range in
    ``tile_k`` steps with both operand tiles staged in ``staging``."""

    grid_m: int
    grid_n: int
    split_k: int
    tile_k: int
    staging: str = "smem"
    grid_b: int = 1  # CTAs over a batched matmul's batch

    @property
    def ctas(self) -> int:
        return self.grid_b * self.grid_m * self.grid_n * self.split_k

    def describe(self) -> str:
        parts = [f"grid {self.grid_m}x{self.grid_n}"]
        if self.grid_b > 1:
            parts = [f"batch over {self.grid_b} CTAs", *parts]
        if self.split_k > 1:
            parts.append(f"split-K {self.split_k}")
        parts.append(f"K tile {self.tile_k}")
        parts.append(f"staged in {self.staging}")
        return ", ".join(parts)


@dataclass(frozen=True, order=True)
class RowsChoice:
    """A rows-kernel placement: the rows split over ``grid`` CTAs, every operand
    staged in ``staging`` (smem or rmem) for the row-wise body; with ``cols`` > 1
    each row's output columns are written by ``cols`` CTAs, each computing the
    whole row (a row's reduction stays in one CTA; the reads repeat through L2,
    the writes and the launch's latency are shared)."""

    grid: int
    staging: str = "smem"
    cols: int = 1
    outer: int = 1  # of ``grid``, the CTAs over the first of two row axes ((B, S, H) values)

    @property
    def ctas(self) -> int:
        return self.grid * self.cols

    def describe(self) -> str:
        batch = f" ({self.outer} over the batch)" if self.outer > 1 else ""
        text = f"rows over {self.grid} CTA{'s' if self.grid != 1 else ''}{batch}, staged in {self.staging}"
        return text + (f", each row's columns written by {self.cols} CTAs" if self.cols > 1 else "")


def _class_name(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) + "Placed"


def _annotation(operand) -> str:
    head = "ConstTensor" if operand.const else "Tensor"
    shape = ", ".join(str(d) for d in operand.shape)
    return f'{head}[({shape}{"," if len(operand.shape) == 1 else ""}), "{operand.dtype}"]'


def _target_import(target) -> tuple[str, str]:
    """(import line, spelling) of the Target value, as a person writes it."""
    cls = type(target)
    from tilefoundry import target as targets

    home = "tilefoundry.target" if getattr(targets, cls.__name__, None) is cls else cls.__module__
    return f"from {home} import {cls.__name__}", repr(target)


def _header(kernel, doc: str, constants: list, level: str, ctas: int) -> list:
    imported, spelled = _target_import(kernel.target)
    lines = ['"""' + doc.strip() + '\n"""', "", "from tilefoundry import module",
             "from tilefoundry.dsl import *", imported, ""]
    lines += [f"{name} = {value}" for name, value in constants]
    lines += ["", "", f'@module(entry="{kernel.name}", target={spelled}, '
              f'topologies=(Topology("{level}", {ctas}),))', f"class {_class_name(kernel.name)}:",
              "    @func"]
    params = ", ".join(f"{p.name}: {_annotation(p)}" for p in kernel.params)
    shape, dtype = kernel.result
    result = f'Tensor[({", ".join(str(d) for d in shape)}), "{dtype}"]'
    lines.append(f"    def {kernel.name}({params}) -> {result}:")
    return lines


def _mesh(level: str, axes: list) -> tuple[str, dict]:
    """``with Mesh(...)`` over the axes of extent > 1 (one axis of 1 when none is)."""
    kept = [(name, size) for name, size in axes if size > 1] or [(axes[0][0], 1)]
    names = ", ".join(f'"{n}"' for n, _ in kept)
    sizes = ", ".join(str(s) for _, s in kept)
    one = "," if len(kept) == 1 else ""
    return (f'with Mesh(("{level}",), ({sizes}{one}), ({names}{one})) as g:',
            {name: size for name, size in kept})


def _dim(extent: str, axis: str, mesh: dict) -> str:
    return f"{extent} @ g.{axis}" if mesh.get(axis, 1) > 1 else extent


def _matmul_body(kernel, choice: MatmulChoice, level: str) -> tuple[list, list, str]:
    a, b = kernel.params[:2]
    m, k, n = kernel.dims["M"], kernel.dims["K"], kernel.dims["N"]
    consts = [("M", m), ("K", k), ("N", n), ("TILE_K", choice.tile_k)]
    axes = [("mt", choice.grid_m), ("nt", choice.grid_n), ("ks", choice.split_k)]
    if "B" in kernel.dims:
        return _batched_body(kernel, choice, level, consts, axes)
    with_line, mesh = _mesh(level, axes)
    rows, cols = _dim("M", "mt", mesh), _dim("N", "nt", mesh)

    # the operands share one dtype (matmul's rule): a narrow one goes to the
    # tensor cores as it is, the product accumulated in f32 (matmul's out_dtype)
    product = "tf.matmul(a_t, b_t)" if a.dtype == "f32" else 'tf.matmul(a_t, b_t, out_dtype="f32")'

    stage = choice.staging
    body = [with_line]
    if choice.split_k == 1:
        zeros = f'tf.zeros(Tensor[({rows}, {cols}), "f32", "rmem"])'
        if choice.ctas == 1:  # an unsplit annotation states no layout: the reshard gives the body's
            zeros = f'tf.reshard({zeros}, ({rows}, {cols}), "rmem")'
        body += [
            f"    acc = {zeros}",
            "    for kk in tile(K, TILE_K):",
            f'        a_t = tf.reshard({a.name}[:, kk], ({rows}, TILE_K), "{stage}")',
            _b_tile(kernel, cols, stage),
            f'        acc = acc + tf.reshard({product}, ({rows}, {cols}), "rmem")',
            "    total = acc",
        ]
    else:
        consts.append(("SPLIT_K", choice.split_k))
        split = _dim("SPLIT_K", "ks", mesh)
        body += [
            f'    acc = tf.zeros(Tensor[({split}, {rows}, {cols}), "f32", "rmem"])',
            "    for kk in tile(K, TILE_K * SPLIT_K):",
            "        # window kk holds SPLIT_K tiles of K: tile s is CTA s's share",
            f"        a_w = tf.reshape({a.name}[:, kk], (M, SPLIT_K, TILE_K))",
            _b_window(kernel),
            "        # each CTA stages its own tile, then puts the split axis first in smem",
            f'        a_t = tf.transpose(tf.reshard(a_w, ({rows}, {split}, TILE_K), "{stage}"), (1, 0, 2))',
            _b_split_tile(kernel, split, cols, stage),
            f'        acc = acc + tf.reshard({product}, ({split}, {rows}, {cols}), "rmem")',
            "    # the split axis summed: a Partial over `ks` that the reshard completes",
            f'    total = tf.reshard(tf.reduce(acc, (0,), False, ReduceKind.SUM), ({rows}, {cols}), "smem")',
        ]
    # the epilogue's operands where the total is: the accumulator's rmem, or smem after a split-K sum
    body += _epilogue_lines(kernel, rows, cols, "rmem" if choice.split_k == 1 else "smem")
    shown = f"({n}x{k})^T" if kernel.b_transposed else f"{k}x{n}"
    doc = (f"{kernel.name}: a {m}x{k} @ {shown} {'GEMV' if m == 1 else 'GEMM'} placed by "
           f"`tilefoundry place`: {choice.describe()}.")
    return consts, body, doc


def cast_to(value: str, dtype: str) -> str:
    """``value`` (f32 source text) as ``dtype``: a cast written only where it rounds."""
    return value if dtype == "f32" else f'tf.cast({value}, "{dtype}")'


def _epilogue_lines(kernel, rows: str, cols: str, level: str) -> list:
    """The product's f32 total to the result: cast to the dtype the logical product
    has (it rounds there), then the epilogue's elementwise ops as written, each
    operand staged over the CTA's own rows and columns, and written to gmem."""
    if not kernel.lines:
        return [f'    return tf.reshard({cast_to("total", kernel.result[1])}, ({rows}, {cols}), "gmem")']
    lines = [f'    mm = {cast_to("total", kernel.product)}']
    renamed = {}
    for p in kernel.params[2:]:
        layout = f"({rows}, {cols})" if len(p.shape) == 2 else f"({cols},)"
        lines.append(f'    {p.name}_s = tf.reshard({p.name}, {layout}, "{level}")')
        renamed[p.name] = f"{p.name}_s"
    lines += [f"    {name} = {_renamed(text, renamed)}" for name, text in kernel.lines]
    return lines + [f'    return tf.reshard({kernel.returned}, ({rows}, {cols}), "gmem")']


def _batched_body(kernel, choice: MatmulChoice, level: str, consts: list, axes: list) -> tuple:
    """A batch of products: the batch split over ``bt`` CTAs beside the row and
    column grid, each CTA's K range walked in tiles (no split-K: the batch is the
    parallelism a split-K would add)."""
    a, b = kernel.params[:2]
    batch = kernel.dims["B"]
    with_line, mesh = _mesh(level, [("bt", choice.grid_b), *axes])
    lead, rows, cols = _dim("B", "bt", mesh), _dim("M", "mt", mesh), _dim("N", "nt", mesh)
    product = "tf.matmul(a_t, b_t)" if a.dtype == "f32" else 'tf.matmul(a_t, b_t, out_dtype="f32")'
    stage = choice.staging
    if kernel.b_transposed:
        b_tile = f'tf.transpose(tf.reshard({b.name}[:, :, kk], ({lead}, {cols}, TILE_K), "{stage}"), (0, 2, 1))'
    else:
        b_tile = f'tf.reshard({b.name}[:, kk, :], ({lead}, TILE_K, {cols}), "{stage}")'
    zeros = f'tf.zeros(Tensor[({lead}, {rows}, {cols}), "f32", "rmem"])'
    if choice.ctas == 1:  # an unsplit annotation states no layout: the reshard gives the body's
        zeros = f'tf.reshard({zeros}, ({lead}, {rows}, {cols}), "rmem")'
    out = cast_to("acc", kernel.result[1])
    body = [
        with_line,
        f"    acc = {zeros}",
        "    for kk in tile(K, TILE_K):",
        f'        a_t = tf.reshard({a.name}[:, :, kk], ({lead}, {rows}, TILE_K), "{stage}")',
        f"        b_t = {b_tile}",
        f'        acc = acc + tf.reshard({product}, ({lead}, {rows}, {cols}), "rmem")',
        f'    return tf.reshard({out}, ({lead}, {rows}, {cols}), "gmem")',
    ]
    m, k, n = kernel.dims["M"], kernel.dims["K"], kernel.dims["N"]
    doc = (f"{kernel.name}: a batch of {batch} {m}x{k} @ {k}x{n} products placed by "
           f"`tilefoundry place`: {choice.describe()}.")
    return [("B", batch), *consts], body, doc


def _b_tile(kernel, cols: str, stage: str) -> str:
    """B's (TILE_K, cols) tile; a B given (N, K) is staged as it lies and turned
    in place, as a K-major operand feeds the tensor cores."""
    b = kernel.params[1].name
    if kernel.b_transposed:
        return f'        b_t = tf.transpose(tf.reshard({b}[:, kk], ({cols}, TILE_K), "{stage}"), (1, 0))'
    return f'        b_t = tf.reshard({b}[kk, :], (TILE_K, {cols}), "{stage}")'


def _b_window(kernel) -> str:
    b = kernel.params[1].name
    if kernel.b_transposed:
        return f"        b_w = tf.reshape({b}[:, kk], (N, SPLIT_K, TILE_K))"
    return f"        b_w = tf.reshape({b}[kk, :], (SPLIT_K, TILE_K, N))"


def _b_split_tile(kernel, split: str, cols: str, stage: str) -> str:
    if kernel.b_transposed:
        return f'        b_t = tf.transpose(tf.reshard(b_w, ({cols}, {split}, TILE_K), "{stage}"), (1, 2, 0))'
    return f'        b_t = tf.reshard(b_w, ({split}, TILE_K, {cols}), "{stage}")'


def _rows_body(kernel, choice: RowsChoice, level: str) -> tuple[list, list, str]:
    *lead, hidden = kernel.result[0]
    names = ["ROWS"] if len(lead) == 1 else ["BATCH", "ROWS"]
    consts = list(zip(names, lead))
    axes = [("r", choice.grid)] if len(lead) == 1 else [("o", choice.outer), ("r", choice.grid // choice.outer)]
    with_line, mesh = _mesh(level, [*axes, ("c", choice.cols)])
    row = ", ".join(_dim(name, axis, mesh) for name, (axis, _) in zip(names, axes))
    out_cols = _dim(str(hidden), "c", mesh)
    body = [with_line]
    renamed = {}
    for p in kernel.params:
        staged = f"{p.name}_s"
        layout = f"({row}, {p.shape[-1]})" if len(p.shape) > 1 else f"({p.shape[0]},)"
        body.append(f'    {staged} = tf.reshard({p.name}, {layout}, "{choice.staging}")')
        renamed[p.name] = staged
    for name, text in kernel.lines:
        body.append(f"    {name} = {_renamed(text, renamed)}")
    body.append(f'    return tf.reshard({kernel.returned}, ({row}, {out_cols}), "gmem")')
    doc = f"{kernel.name}: a rows kernel placed by `tilefoundry place`: {choice.describe()}."
    return consts, body, doc


def _renamed(text: str, renamed: dict) -> str:
    """``text`` with each parameter name replaced by its staged value's name."""
    import re

    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: renamed.get(m.group(0), m.group(0)), text)


def program_text(kernel, choice, level: str = "cta") -> str:
    """The placed program of ``kernel`` under ``choice``: a complete, loadable file."""
    if isinstance(choice, MatmulChoice):
        consts, body, doc = _matmul_body(kernel, choice, level)
    else:
        consts, body, doc = _rows_body(kernel, choice, level)
    lines = _header(kernel, doc, consts, level, choice.ctas)
    lines += [f"        {line}" for line in body]
    lines += list(kernel.converters)  # the logical kernel's weight converters, as written
    return "\n".join(lines) + "\n"


def _mesh_parts(line: str):
    """(indent, level, shape, names, alias) of a one-level ``with Mesh(...) as a:`` line, else None."""
    import re

    found = re.fullmatch(r'(\s*)with Mesh\(\("(\w+)",\), \(([\d, ]+?),?\), \(([^()]*?),?\)\) as (\w+):', line)
    if found is None:
        return None
    indent, level, shape, names, alias = found.groups()
    return indent, level, tuple(int(d) for d in shape.split(",")), names, alias


def fits_level(shape, declared: int) -> bool:
    """Whether a mesh of ``shape`` CTAs can run on the first CTAs of a level of
    ``declared``: a slice of the leading axis of a ``(declared / rest, *rest)``
    mesh, so the trailing axes' product divides the level."""
    rest = 1
    for extent in shape[1:]:
        rest *= extent
    return declared % rest == 0 and rest * shape[0] <= declared


def on_level(line: str, declared: int) -> str:
    """A block's ``with Mesh(...)`` line over fewer CTAs than the ``declared``
    level as a slice of it: ``Mesh(("cta",), (declared / rest, *rest), names)[0:a]``
    holds the mesh ``(a, *rest)`` on the level's first CTAs, the rest idle
    (a mesh must cover its level; the estimate prices the slice's CTAs alone)."""
    parts = _mesh_parts(line)
    if parts is None:
        return line
    indent, level, shape, names, alias = parts
    total = 1
    for extent in shape:
        total *= extent
    if total == declared:
        return line
    if not fits_level(shape, declared):
        raise ValueError(f"a mesh {shape} is no slice of a level of {declared} CTAs")
    base = (declared * shape[0] // total,) + shape[1:]
    sizes = ", ".join(str(d) for d in base) + ("," if len(base) == 1 else "")
    one = "," if len(shape) == 1 else ""
    return f'{indent}with Mesh(("{level}",), ({sizes}), ({names}{one}))[0:{shape[0]}] as {alias}:'
