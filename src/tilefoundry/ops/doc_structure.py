"""Reference prose of the structure, creation, indexing and sharding ops (``ops.tensor``,
``ops.creation``, ``ops.tensor_index``, ``ops.indexing``, ``ops.sharding``): see ``ops.op_doc``."""
from __future__ import annotations

from tilefoundry.ops.op_doc import OpDoc

_X = "x: Tensor[(8, 64), \"f32\"]"
_MOVES = "No work (companions §5.3): every operand is read and the result written."
_VIEW = "No work and no movement: a view (companions §5.3)."
_NOTHING = "No work and no movement (companions §5.3)."
_KEEPS_DTYPE = "The result keeps `x`'s dtype and storage."


def _example(params: str, call: str, result: str, *, before: str = "") -> str:
    return f"@func\ndef example({params}):\n{before}    return {call}  # {result}"


def _meshed(params: str, lines: str, call: str, result: str) -> str:
    """An example on a 4-CTA mesh (a plain @func declares no topology to open a Mesh over)."""
    return (f"@func(topologies=(Topology(\"cta\", 4),))\ndef example({params}):\n"
            f"    with Mesh((\"cta\",), (4,), (\"row\",)) as grid:\n{lines}"
            f"        return {call}  # {result}")


_INDEX_UPDATE_SHARD = (
    "The result is `dst`'s type: a `Split` of a `dst` axis other than `dim` is kept, a `Split` of `dim` "
    "is refused (rows land at data-dependent positions), and a sharded `index` or `src` is refused "
    "(read whole: reshard it `Broadcast`). Every `Partial` is refused.")

DOCS = {
    "reshape": OpDoc(
        dtypes=(f"{_KEEPS_DTYPE} `new_shape` holds ints or dims; static element counts must match, and "
                "`-1` is not inferred (a negative extent is refused)."),
        shard=("A sharded layout is carried when it regroups over `new_shape` (canonical regroup, "
               "companions §2.6): its positions are re-factored along the new axes, and a split "
               "position must stay one position -- one that would have to be factored refuses the "
               "reshape (reshard first). `Partial` states pass unchanged. An unsharded value with a "
               "plain `Layout` gets a fresh C-order layout over the new shape; none stays none."),
        access=("Each result element reads the source element of the same row-major linear index (with "
                "a symbolic extent the source is read whole)."),
        cost=_VIEW,
        example=_example(_X, "tf.reshape(x, (4, 128))", "Tensor[(4, 128), \"f32\"]"),
        example_cost="no work",
    ),
    "transpose": OpDoc(
        dtypes=f"{_KEEPS_DTYPE} `perm` has one entry per axis (negative from the end).",
        shard=("The layout's positions move with their axes: each `Split` follows its axis and the "
               "strides are permuted (a transpose that only moves extent-1 axes of a canonically laid "
               "out value restates it fresh). `Partial` states pass unchanged."),
        access="The result at the permuted index reads `x` at the original one.",
        cost="No work; `x` is read and the result written (a transpose materialises its result).",
        example=_example(_X, "tf.transpose(x, (1, 0))", "Tensor[(64, 8), \"f32\"]"),
        example_cost="no work",
    ),
    "reduce": OpDoc(
        dtypes=(f"{_KEEPS_DTYPE} Floats accumulate in f32 whatever their dtype and are rounded once; "
                "integers are exact; a `bool` `x` is refused when evaluated. `axes` names at least one "
                "axis; `kind` is `\"mean\"` (default), `\"sum\"`, `\"max\"` or `\"abs_max\"` (no min)."),
        shard=("A `Split` of a kept axis carries; a `Split` of a reduced axis is completed by the op: "
               "the result is `Broadcast` on that mesh axis (the relation declares the reduction "
               "complete). A kept reduced axis becomes one unsplit extent-1 position, strides C-order "
               "with extent-1 positions 0; a replicated `x` keeps its placement. `Partial`: `sum` and "
               "`mean` carry `Partial(\"sum\")`, `max` carries `Partial(\"max\")`; `abs_max`, and any "
               "other reduction, is refused."),
        access=("Iteration space `x`'s shape: `x` is read elementwise; the result is written at the index "
                "with the reduced axes dropped (at 0 with `keepdim`)."),
        cost="`numel(x)` flops under `x`'s dtype (`mean` included); `x` read, the result written.",
        example=_example(_X, "tf.reduce(x, axes=(-1,), kind=\"sum\")", "Tensor[(8, 1), \"f32\"]"),
        example_cost="flops=f32:512",
    ),
    "argmax": OpDoc(
        dtypes="The result is `i64`, `axis` removed; storage kept.",
        shard=("As `reduce` over `axis` without `keepdim`: a `Split` of another axis carries, a `Split` "
               "of `axis` gives `Broadcast` on that mesh axis, a replicated `x` keeps its placement. "
               "Every `Partial` is refused."),
        access="As `reduce` over `axis`: `x` read elementwise, the result written without that axis.",
        cost=_MOVES,
        example=_example(_X, "tf.argmax(x, axis=-1)", "Tensor[(8,), \"i64\"]"),
        example_cost="no work",
    ),
    "topk": OpDoc(
        dtypes=("The result is the pair (values: `x`'s dtype, indices: `i64`), `shape[axis] = k`; `k` is "
                "an int or a dim in `[1, extent]`."),
        shard=("A `Split` of another axis carries to both results; a `Split` of `axis` is refused (it is "
               "scanned: neither a partial nor a complete reduction). An all-`Broadcast` `x` gives "
               "results with no layout. Every `Partial` is refused."),
        access=("Iteration space (result shape, scanned index): each kept position reads `x` along "
                "`axis` at every scanned index; values and indices are written elementwise."),
        cost="`numel(x)` flops under `x`'s dtype; `x` read, both results written.",
        example=_example(_X, "tf.topk(x, k=4)",
                         "Tuple[Tensor[(8, 4), \"f32\"], Tensor[(8, 4), \"i64\"]]"),
        example_cost="flops=f32:512",
        also="unpack it: `values, indices = tf.topk(x, k=4)`.",
    ),
    "tuple_get_item": OpDoc(
        dtypes="The field's type.",
        shard="The field's type as it is: nothing propagates.",
        access="The field is read elementwise and is the result.",
        cost=_VIEW,
        example=_example(_X, "tf.tuple_get_item(t, index=1)", "Tensor[(8, 4), \"i64\"]",
                         before="    t = tf.topk(x, k=4)\n"),
        example_cost="no work",
        also="what tuple unpacking (`a, b = f(...)`) and `t[k]` on a tuple build.",
    ),
    "full_like": OpDoc(
        dtypes=("Exactly `x`'s type. A float result holds `value` rounded once to its dtype; an integer "
                "or bool result takes only a value it holds exactly. The idiom for a constant of the "
                "right dtype next to a tensor."),
        shard=("Exactly `x`'s type, layout and storage included; a `Partial` `x` is refused (a constant "
               "would be summed once per shard)."),
        access="`x` is read elementwise (its type gives the result's), the result written.",
        cost=_MOVES,
        example=_example(_X, "tf.full_like(x, 0.5)", "Tensor[(8, 64), \"f32\"]"),
        example_cost="no work",
    ),
    "zeros": OpDoc(
        dtypes="Exactly the stated `type` (a `Tensor[...]` literal, positional or `type=`).",
        shard=("The stated type: its layout sugar places it (`tf.zeros(Tensor[(M @ grid.mt, N), \"f32\", "
               "\"rmem\"])`); nothing is propagated."),
        access="No input; the result is written at every index.",
        cost="No work; the result is written.",
        example=_example(_X, "tf.zeros(Tensor[(8, 64), \"f32\"])", "Tensor[(8, 64), \"f32\"]"),
        example_cost="no work",
    ),
    "arange": OpDoc(
        dtypes=("Exactly the stated `type`, a rank-1 `i32` or `i64` tensor; `step` a positive int, "
                "`start` an int or a dim."),
        shard="The stated type; nothing is propagated.",
        access="No input; the result is written at every index.",
        cost=_NOTHING,
        example=_example(_X, "tf.arange(Tensor[(16,), \"i64\"], start=2)", "Tensor[(16,), \"i64\"]"),
        example_cost="no work",
    ),
    "shape_of": OpDoc(
        dtypes="A rank-1 `i64` host-side value (`umat`) of length `rank(x)`.",
        shard="No layout, whatever `x`'s.",
        access="`x` has no boundary: its values are not read.",
        cost=_NOTHING,
        example=_example(_X, "tf.shape_of(x)", "Tensor[(2,), \"i64\", \"umat\"]"),
        example_cost="no work",
        also="`tf.shape_of(x)[k]` is a rank-0 `i64` `umat` extent.",
    ),
    "rank": OpDoc(
        dtypes="A rank-0 `i64` host-side value (`umat`).",
        shard="No layout, whatever `x`'s.",
        access="`x` has no boundary: its values are not read.",
        cost=_NOTHING,
        example=_example(_X, "tf.rank(x)", "Tensor[(), \"i64\", \"umat\"]"),
        example_cost="no work",
    ),
    "concat": OpDoc(
        dtypes=("One rank and dtype for all inputs, equal extents except along `axis`, whose extents "
                "add up. Storage anchored on every input. `axis` is a keyword (every positional "
                "argument is an input)."),
        shard=("A `Split` of an axis other than `axis` carries (every input split alike); a `Split` of "
               "`axis` is refused (each input is read at translated positions). A `Partial` passes "
               "only when every input carries the same reduction on that mesh axis. Fresh C-order "
               "strides; an all-`Broadcast` input set gives a result with no layout."),
        access=("Input `i` is read at its own slice of the result along `axis` (translated by the "
                "extents before it), identity on the other axes; the result is written once."),
        cost=_MOVES,
        example=_example("x: Tensor[(8, 64), \"f32\"], y: Tensor[(4, 64), \"f32\"]",
                         "tf.concat(x, y, axis=0)", "Tensor[(12, 64), \"f32\"]"),
        example_cost="no work",
    ),
    "stack": OpDoc(
        dtypes="Inputs of one shape and dtype; a new axis of extent `len(inputs)` at `axis`.",
        shard=("Every `Split` carries to its (shifted) axis; a `Partial` passes only when every input "
               "carries the same reduction on that mesh axis. Fresh C-order strides."),
        access="Input `i` is read at the result's index whose new axis is `i`.",
        cost=_MOVES,
        example=_example("x: Tensor[(8, 64), \"f32\"], y: Tensor[(8, 64), \"f32\"]",
                         "tf.stack(x, y, axis=0)", "Tensor[(2, 8, 64), \"f32\"]"),
        example_cost="no work",
    ),
    "split": OpDoc(
        dtypes=("A tuple of `num_splits` equal pieces of `x`'s dtype; `x`'s extent on `axis` is static "
                "and divisible by `num_splits`."),
        shard=("A `Split` of an axis other than `axis` carries to every piece; a `Split` of `axis` is "
               "refused (a piece past the first is read at translated positions). Any `Partial` "
               "passes to every piece."),
        access="`x` is read elementwise; piece `p` is written from `[p e / n, (p + 1) e / n)` along `axis`.",
        cost=_MOVES,
        example=_example(_X, "tf.split(x, axis=1, num_splits=2)",
                         "Tuple[Tensor[(8, 32), \"f32\"], Tensor[(8, 32), \"f32\"]]"),
        example_cost="no work",
        also="unpack it: `q, k, v = tf.split(qkv, axis=-1, num_splits=3)`.",
    ),
    "repeat_interleave": OpDoc(
        dtypes=f"{_KEEPS_DTYPE} `shape[axis] *= repeats`.",
        shard=("The result has no layout; a really split `x` is refused (the read at "
               "`floor(d / repeats)` is no projection), and so is any `Partial`."),
        access="Result index `d` along `axis` reads `x` at `floor(d / repeats)`.",
        cost=_MOVES,
        example=_example("kv: Tensor[(1, 2, 8, 64), \"bf16\"]",
                         "tf.repeat_interleave(kv, repeats=4, axis=1)", "Tensor[(1, 8, 8, 64), \"bf16\"]"),
        example_cost="no work",
    ),
    "slice": OpDoc(
        dtypes=(f"{_KEEPS_DTYPE} `starts` holds one rank-0 integer per axis (literals or run-time "
                "values); `sizes` and positive `strides` are static, one per axis; result shape `sizes`."),
        shard=("A split axis must be taken whole (start 0, stride 1, its full extent): its `Split` "
               "carries; a window of a split axis is refused. Any `Partial` passes (a window of a "
               "partial sum is the partial sum of the windows). An all-`Broadcast` `x` gives a result "
               "with no layout."),
        access=("Result index `d` reads `x` at `start + stride * d` on each axis (a run-time start is a "
                "parameter, guarded to keep the window inside `x`); `starts` is read whole."),
        cost="No work: a view; only the run-time `starts` are read.",
        example=_example(_X, "tf.slice(x, (0, 16), sizes=(8, 16), strides=(1, 1))",
                         "Tensor[(8, 16), \"f32\"]"),
        example_cost="no work",
        also=("subscripts `x[:, 16:32]`, `x[r]`, `x[:, kk]` with `kk` a `tile` window (authoring "
              "§5.5) build it."),
    ),
    "insert_slice": OpDoc(
        dtypes=("`dst` and `update` have one rank and dtype; `offsets` holds one integer per axis (one "
                "scalar for a rank-1 `dst`); the window `[off, off + update.shape)` lies inside `dst`. "
                "The result is `dst`'s type."),
        shard=("The result is `dst`'s type. `update` may be split only as `dst`'s layout already "
               "carries it (else refused: reshard `update` onto `dst`'s layout, or `Broadcast`). A "
               "`Partial` passes only when `dst` and `update` carry the same reduction on that mesh "
               "axis."),
        access=("`dst` is read outside the window and `update` inside it (translated by `offsets`); "
                "only the window of the result is written; `offsets` is read whole."),
        cost="No work; `update` and `offsets` are read and the result written (`dst` moves nothing).",
        example=_example("d: Tensor[(8, 64), \"f32\"], u: Tensor[(8, 16), \"f32\"]",
                         "tf.insert_slice(d, u, (0, 16))", "Tensor[(8, 64), \"f32\"]"),
        example_cost="no work",
    ),
    "index_select": OpDoc(
        dtypes=f"{_KEEPS_DTYPE} `index` is a rank-1 `i32` or `i64` tensor; `shape[dim] = len(index)`.",
        shard=("A `Split` of an axis other than `dim` carries; a `Split` of `dim` is refused (it is read "
               "at data-dependent positions); a split `index` splits the result's `dim` axis. `x` may "
               "be `Partial` (it passes to the result); `index` may not."),
        access=("The result at `(..., j, ...)` reads `x` at `(..., index[j], ...)`: `x`'s `dim` axis is "
                "data-dependent (free in the relation), `index` is read at `j`."),
        cost=(_MOVES + " The traffic counts `x` whole, as the spec decides for a read at runtime "
              "positions: \"Non-affine runtime indices retain the widest legal access "
              "approximation\" (analysis.md, Scope and Access; companions §5.3: \"IndexSelect "
              "sources ... are charged whole by their relations\"). Beside it the report states what "
              "the indices select: `gathered rows=R bytes=B of=T` on the statement (JSON "
              "`calls[].gathered`: `rows` = len(index), `bytes` = the rows' bytes, `of_bytes` = the "
              "whole `x`), so an embedding lookup of one 8 KiB row of a 1.05 GB table (Llama-3-8B's "
              "`embed`) reads as both."),
        example=_example("table: Tensor[(1000, 64), \"bf16\"], ids: Tensor[(8,), \"i64\"]",
                         "tf.index_select(table, ids, dim=0)", "Tensor[(8, 64), \"bf16\"]"),
        example_cost="no work",
    ),
    "index_add": OpDoc(
        dtypes=("`dst` and `src` have one dtype; `index` is rank-1 `i32` or `i64`; `src`'s shape is "
                "`dst`'s with axis `dim` replaced by `len(index)`. The result is `dst`'s type."),
        shard=_INDEX_UPDATE_SHARD,
        access="`dst` is read and written elementwise; `index` and `src` are read whole.",
        cost="`numel(src)` flops under `src`'s dtype; every operand read, the result written.",
        example=_example("d: Tensor[(16, 64), \"f32\"], ids: Tensor[(8,), \"i64\"], "
                         "src: Tensor[(8, 64), \"f32\"]", "tf.index_add(d, ids, src, dim=0)",
                         "Tensor[(16, 64), \"f32\"]"),
        example_cost="flops=f32:512",
    ),
    "index_copy": OpDoc(
        dtypes=("As `index_add`, but `index` must be `i64`. The result is `dst`'s type."),
        shard=_INDEX_UPDATE_SHARD,
        access="`dst` is read and written elementwise; `index` and `src` are read whole.",
        cost="No work; `index` and `src` are read and the result written (`dst` moves nothing).",
        example=_example("d: Tensor[(16, 64), \"f32\"], ids: Tensor[(8,), \"i64\"], "
                         "src: Tensor[(8, 64), \"f32\"]", "tf.index_copy(d, ids, src, dim=0)",
                         "Tensor[(16, 64), \"f32\"]"),
        example_cost="no work",
    ),
    "cache_update": OpDoc(
        dtypes=("`cache` and `new` are rank 4 `[B, len, H, D]` of one dtype with equal B, H and D; "
                "`cur_pos` and `s` are `i32` scalars (rank 0 or all-1 extents). The result is "
                "`cache`'s type."),
        shard=("The result is `cache`'s type; `new` may be split only as the cache's layout already "
               "carries it (else refused: reshard `new` onto it). Every `Partial` is refused."),
        access=("`cache` is read outside rows `[cur_pos, cur_pos + s)` of axis 1, `new` inside them "
                "(shifted by `cur_pos`); only that window of the result is written; `cur_pos` and `s` "
                "are read at their one point."),
        cost="No work; `cur_pos`, `s` and `new` are read and the result written (the cache moves nothing).",
        example=_example("cache: Tensor[(1, 32, 2, 16), \"bf16\"], cur: Tensor[(), \"i32\"], "
                         "cnt: Tensor[(), \"i32\"],\n            new: Tensor[(1, 8, 2, 16), \"bf16\"]",
                         "tf.cache_update(cache, cur, cnt, new)", "Tensor[(1, 32, 2, 16), \"bf16\"]"),
        example_cost="no work",
    ),
    "reshard": OpDoc(
        dtypes="The dtype and logical shape are kept; the layout and/or storage are replaced.",
        shard=(
            "The op that changes a layout or a mesh. The result has the stated layout (layout sugar or a "
            "`ShardLayout`; its domain holds `x`'s elements and regroups over its shape, each split "
            "extent divisible by its mesh axis) in the stated storage (default: `x`'s). It is the only "
            "completion of a `Partial`: stating `Broadcast` on a mesh axis where `x` is `Partial` is the "
            "cross-unit reduction. Strides the sugar leaves unset are materialised by direction: to a "
            "lower storage level split positions get stride 0 and the rest C-order over the local "
            "shape; to a higher level C-order over the global layout shape; at the same level the "
            "source's form (authoring §6.4). Storage `umat` is refused, and a storage change needs "
            "`layout=`."),
        access="Identity: element `i` of `x` is element `i` of the result, wherever each is placed.",
        cost=("No work; `x` is read and the result written when the storage level changes, otherwise "
              "nothing moves."),
        example=_meshed("x: Tensor[(256, 128), \"f32\"]", "",
                        "tf.reshard(x, (256 @ grid.row, 128), \"rmem\")",
                        "Tensor[(256, 128), \"f32\", ((4 @ cta.row, 64, 128), (0, 128, 1)), \"rmem\"]"),
        example_cost="no work",
        also="positional `tf.reshard(x, layout, storage)` or keywords `layout=`, `storage=`.",
    ),
    "local": OpDoc(
        dtypes=_KEEPS_DTYPE,
        shard=("`x` must carry a `ShardLayout` with no `Partial` (the pending reduction would be dropped: "
               "reshard first). The result is one participant's part: the layout domain with each split "
               "position divided by its mesh extent, the inner strides, and no mesh."),
        access="`x` has no boundary: the result is a view of the part one participant holds.",
        cost=_VIEW,
        example=_meshed("x: Tensor[(256, 128), \"f32\"]",
                        "        band = tf.reshard(x, (256 @ grid.row, 128), \"rmem\")\n",
                        "tf.local(band)", "Tensor[(1, 64, 128), \"f32\", \"rmem\"]"),
        example_cost="no work",
        also="mesh coordinates read as values (authoring §4.5) use it implicitly.",
    ),
}
