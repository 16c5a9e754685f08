"""One op of a sequence's glue as authoring-DSL lines (placer/sequence.py), with
the two rewrites that read less and compute the same values: RoPE of one
position reads one row of each table, an index_select of a few rows reads those
rows."""
from __future__ import annotations

__all__ = ["MAX_SELECTED_ROWS", "op_lines"]


def op_lines(call, names, elements) -> list:
    """The call as (assigned names, op text) lines: one, or, for a RoPE of one
    position, the position read as a scalar first (see ``_rope_rows``)."""
    from tilefoundry.placer.op_source import op_text

    refs = [names.of(a) for a in call.args]
    lines = []
    targets = ", ".join(elements[id(call)]) if id(call) in elements else names.of(call)
    name = getattr(call.op, "name", None)
    if name == "rope" and tuple(call.args[4].type.shape) == (1,):
        at = f"{names.of(call)}_at"
        lines.append((at, f"tf.reshape({refs[4]}, ())"))
        refs = _rope_rows(refs, at)
    if name == "index_select" and _few_rows(call):
        return _selected_rows(call, refs, targets)
    return lines + [(targets, op_text(call.op, refs))]


#: the most rows an index_select is written as one slice per row (a MoE's top-k)
MAX_SELECTED_ROWS = 16


def _few_rows(call) -> bool:
    index = call.args[1].type.shape
    return len(index) == 1 and isinstance(index[0], int) and index[0] <= MAX_SELECTED_ROWS


def _selected_rows(call, refs: list, target: str) -> list:
    """``index_select(x, ids, d)`` of a few rows as the rows themselves: each id
    read as a scalar, ``x`` sliced at it along ``d``, the slices joined along ``d``
    (the same values, in the same order); the kernel then reads the rows chosen,
    not the whole of ``x`` (the zoo's placed experts read each chosen expert as a
    run-time window the same way)."""
    x, ids = refs
    rank, axis = len(call.args[0].type.shape), call.op.dim % len(call.args[0].type.shape)
    lines, parts = [], []
    for j in range(call.args[1].type.shape[0]):
        at = f"{target}_at{j}"
        lines.append((at, f"tf.reshape({ids}[{j} : {j + 1}], ())"))
        index = ", ".join(f"{at} : {at} + 1" if i == axis else ":" for i in range(rank))
        parts.append(f"{x}[{index}]")
    return lines + [(target, f"tf.concat({', '.join(parts)}, axis={axis})")]


def _rope_rows(refs: list, at: str) -> list:
    """RoPE of one position reads one row of each table: the tables cut to that
    row and the position 0 within it are the same rotation (``tf.rope`` reads
    ``table[pos]``), and the kernel then reads two rows, not two whole tables,
    as the zoo's placed decode attention does (``cos_t[p : p + 1, :]``)."""
    q, k, cos, sin, _ = refs
    return [q, k, f"{cos}[{at} : {at} + 1, :]", f"{sin}[{at} : {at} + 1, :]", 'tf.zeros(Tensor[(1,), "i32"])']
