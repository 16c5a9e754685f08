"""Relation-driven shard propagation (spec §3.2).

``derive_output_shard_layout`` reads only the input types, the relation's
structural access maps (never their bounds), the requested output shape and the
explicit reduction/stride controls. It never judges whether an op commutes with
a reduction: each op's typeinfer does that (``check_partials``) before calling.
"""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dim import dim_mul
from tilefoundry.ir.shard import (
    Broadcast,
    Dynamic,
    Layout,
    Partial,
    ShardLayout,
    Split,
    partial_reductions_by_axis,
)
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.canonical import c_order, partial_axes, regroup

__all__ = [
    "ShardPropagationError",
    "derive_output_shard_layout",
    "partial_reductions_by_axis",
    "real_shard",
    "check_partials",
    "common_mesh",
]


class ShardPropagationError(VerifyError):
    """A propagation refusal; typeinfer re-raises it through ``ctx.error``."""


def real_shard(type_):
    """The value's ShardLayout when it carries real sharding, else None."""
    if not isinstance(type_, TensorType):
        return None
    shard = type_.shard
    if shard is None or shard.is_replicated:
        return None
    return shard


def _axis_label(mesh, m: int) -> str:
    return f"mesh axis {m} ('{mesh.axis_name(m)}')"


def _role(roles, i: int) -> str:
    if roles and i < len(roles) and roles[i] and roles[i] != f"input {i}":
        return f"input {i} ({roles[i]})"
    return f"input {i}"


def common_mesh(input_types, roles=None):
    """The one mesh of the inputs carrying real sharding (None if none)."""
    mesh = None
    for i, type_ in enumerate(input_types):
        shard = real_shard(type_)
        if shard is None:
            continue
        if mesh is None:
            mesh = shard.mesh
        elif shard.mesh != mesh:
            raise ShardPropagationError(
                f"{_role(roles, i)} references a different mesh; reshard it onto the mesh of the "
                "other operands first"
            )
    return mesh


def derive_output_shard_layout(
    input_types: tuple,
    relation,
    output_shape: tuple,
    *,
    partial_reduction_dims: frozenset = frozenset(),
    complete_reduction_dims: frozenset = frozenset(),
    fresh_strides: bool = False,
    output_index: int = 0,
    roles: tuple | None = None,
):
    """The output ShardLayout derived from the inputs' shards through the
    relation (spec §3.2's six rules), or None with no real input sharding."""
    partial_reduction_dims = frozenset(partial_reduction_dims)
    complete_reduction_dims = frozenset(complete_reduction_dims)
    overlap = partial_reduction_dims & complete_reduction_dims
    if overlap:
        raise ShardPropagationError(
            f"reduction dims {sorted(overlap)} are declared both partial and complete; the sets must not overlap"
        )
    output_shape = tuple(output_shape)
    mesh = common_mesh(input_types, roles)
    if mesh is None:
        return None
    out_axes = relation.outputs[output_index].pattern.axes
    if len(out_axes) != len(output_shape):
        raise ShardPropagationError(
            f"output boundary {output_index} has image rank {len(out_axes)} for a rank-{len(output_shape)} shape"
        )
    dim_to_out: dict[int, int] = {}
    other_out_dims: set = set()
    for b, axis in enumerate(out_axes):
        if axis.is_projection:
            dim_to_out.setdefault(axis.dim, b)
        else:
            other_out_dims.update(axis.dims_used())

    carried = _carry_relinearised(input_types, relation, output_shape, dim_to_out, roles, fresh_strides)
    if carried is not None:
        return carried

    states: dict[int, tuple] = {}  # mesh axis -> ("split", dim, index) | ("partial", r) | ("bcast",)
    state_source: dict[int, int] = {}
    chosen: dict[int, tuple] = {}  # output axis -> (extents, first input, index of each factor in extents)
    dim_axes: dict[int, tuple] = {}  # domain dim -> (mesh axes binding it, input)
    candidates: dict[int, tuple] = {}  # output axis -> first unsplit group (extents, input)
    dynamic: set = set()  # mesh axes some input leaves undecided (Dynamic)

    def set_state(m, state, i):
        previous = states.get(m)
        if previous is not None and previous != state:
            raise ShardPropagationError(
                f"{_role(roles, i)} binds {_axis_label(mesh, m)} incompatibly with "
                f"{_role(roles, state_source[m])} ({_describe(previous)} vs {_describe(state)}); "
                "reshard one operand so both use the same mesh axis for the same dim"
            )
        states[m] = state
        state_source.setdefault(m, i)

    for i, type_ in enumerate(input_types):
        shard = real_shard(type_)
        if shard is None:
            continue
        boundary = relation.inputs[i]
        if boundary is None:
            raise ShardPropagationError(f"{_role(roles, i)} is sharded but the relation has no boundary for it")
        axes = boundary.pattern.axes
        gshape = shard.layout.shape
        try:
            groups = regroup(type_.shape, gshape)
            factors = factor_groups(type_.shape, shard)
        except VerifyError as exc:
            raise ShardPropagationError(f"{_role(roles, i)}: {exc}") from None
        # a split is located by its factor index, so unit positions do not shift it
        owner = {}
        for a, group in enumerate(factors):
            for idx, p in enumerate(group):
                owner[p] = (a, idx)
        split_groups = set()
        for m, attr in enumerate(shard.attrs):
            if isinstance(attr, Dynamic):
                dynamic.add(m)  # undecided stays undecided: never claimed Broadcast
                continue
            if isinstance(attr, Partial):
                set_state(m, ("partial", attr.reduction), i)
                continue
            if not isinstance(attr, Split):
                continue
            if attr.axis not in owner:
                raise ShardPropagationError(
                    f"{_role(roles, i)}: split position {attr.axis} on {_axis_label(mesh, m)} belongs to no logical axis"
                )
            a, idx = owner[attr.axis]
            amap = axes[a]
            if not amap.is_projection:
                raise ShardPropagationError(
                    f"{_role(roles, i)} is split on {_axis_label(mesh, m)} along its axis {a}, which the op "
                    "reads through a non-projection access (translated, scaled, constant or data-dependent); "
                    f"the split cannot be propagated (fail closed); reshard it with '{mesh.axis_name(m)}' "
                    "Broadcast first"
                )
            d = amap.dim
            if d in dim_to_out:
                b = dim_to_out[d]
                extents = tuple(gshape[p] for p in groups[a])
                if not _same_extent(extents, output_shape[b]):
                    raise ShardPropagationError(
                        f"{_role(roles, i)} is split on {_axis_label(mesh, m)} along axis {a}, whose extent "
                        "differs from the output axis it maps to; reshard it first"
                    )
                mine = tuple(gshape[p] for p in factors[a])
                prior = chosen.get(b)
                if prior is not None and _factor_extents(prior) != mine:
                    raise ShardPropagationError(
                        f"{_role(roles, i)} splits domain dim {d} on {_axis_label(mesh, m)} factored as {mine} "
                        f"but {_role(roles, prior[1])} factors it as {_factor_extents(prior)}; incompatible "
                        "mesh axes for one domain dim; reshard one operand onto the other's layout"
                    )
                if prior is None:  # binders that agree give the output their positions
                    chosen[b] = (extents, i, tuple(groups[a].index(p) for p in factors[a]))
                elif prior[0] != extents:
                    # they differ only by unit positions: the output keeps none, whatever the order
                    chosen[b] = (mine, prior[1], tuple(range(len(mine))))
                split_groups.add(a)
                set_state(m, ("split", d, idx), i)
            elif d in other_out_dims:
                raise ShardPropagationError(
                    f"{_role(roles, i)} is split on {_axis_label(mesh, m)} along domain dim {d}, which the "
                    "output reaches only through a non-projection access (fail closed); reshard it first"
                )
            elif d in partial_reduction_dims:
                set_state(m, ("partial", "sum"), i)
            elif d in complete_reduction_dims:
                set_state(m, ("bcast",), i)
            else:
                raise ShardPropagationError(
                    f"{_role(roles, i)} is split on {_axis_label(mesh, m)} along reduction dim {d}, which "
                    "the op declares neither partial nor complete (fail closed)"
                )
        # rule 6: two inputs binding one domain dim to different mesh axes
        bound: dict[int, list] = {}
        for m, attr in enumerate(shard.attrs):
            if isinstance(attr, Split) and attr.axis in owner:
                amap = axes[owner[attr.axis][0]]
                if amap.is_projection:
                    bound.setdefault(amap.dim, []).append(m)
        for d, ms in bound.items():
            prior = dim_axes.get(d)
            if prior is not None and prior[0] != tuple(ms):
                names = lambda axes_: ", ".join(_axis_label(mesh, x) for x in axes_)  # noqa: E731
                raise ShardPropagationError(
                    f"{_role(roles, i)} binds domain dim {d} to {names(ms)} but {_role(roles, prior[1])} "
                    f"binds it to {names(prior[0])}; incompatible mesh axes for one domain dim; reshard "
                    "one operand onto the other's mesh axis"
                )
            dim_axes.setdefault(d, (tuple(ms), i))
        # unsplit groups still give the output its factor structure
        for a, amap in enumerate(axes):
            if a in split_groups or not amap.is_projection or amap.dim not in dim_to_out:
                continue
            b = dim_to_out[amap.dim]
            extents = tuple(gshape[p] for p in groups[a])
            if b not in candidates and _same_extent(extents, output_shape[b]):
                candidates[b] = (extents, i)

    gshape_out: list = []
    offsets = []
    for b, extent in enumerate(output_shape):
        offsets.append(len(gshape_out))
        inherited = chosen[b][0] if b in chosen else candidates.get(b, ((),))[0]
        # an axis inheriting no position (extent 1, or no input reaches it) is one position
        gshape_out.extend(inherited or (extent,))
    attrs = []
    for m in range(mesh.rank):
        state = states.get(m)
        if m in dynamic:
            attrs.append(Dynamic())
        elif state is None or state[0] == "bcast":
            attrs.append(Broadcast())
        elif state[0] == "partial":
            attrs.append(Partial(state[1]))
        else:
            _, d, idx = state
            b = dim_to_out[d]
            attrs.append(Split(offsets[b] + chosen[b][2][idx]))
    gshape_t = tuple(gshape_out)
    strides = None
    if not fresh_strides:
        # preserve the physical layout of the equal-shape operands when they agree
        found = set()
        for type_ in input_types:
            if not isinstance(type_, TensorType):
                continue
            shard = type_.shard
            if shard is not None and tuple(type_.shape) == output_shape and shard.layout.shape == gshape_t:
                found.add(shard.layout.strides)
        if len(found) == 1:
            strides = found.pop()
    if strides is None:
        strides = c_order(gshape_t)
    return ShardLayout(Layout(gshape_t, strides), tuple(attrs), mesh)


def _is_relinearised(type_, shard) -> bool:
    """Whether a layout position straddles logical axes (companions §2.6), so
    the layout has no per-axis factoring to rebuild."""
    try:
        groups = regroup(type_.shape, shard.layout.shape)
    except VerifyError:
        return False  # the per-axis rules below report it
    positions = [p for group in groups for p in group]
    return len(positions) != len(set(positions))


def _carry_relinearised(input_types, relation, output_shape, dim_to_out, roles, fresh_strides):
    """A relinearised input layout cannot be rebuilt axis by axis; it is carried
    whole, and only through an identity access onto an equal-shape output, with
    every other split input on the very same layout. None when no input is
    relinearised."""
    shards = {i: real_shard(t) for i, t in enumerate(input_types) if real_shard(t) is not None}
    straddling = [i for i, shard in shards.items() if _is_relinearised(input_types[i], shard)]
    if not straddling:
        return None
    first = shards[straddling[0]]
    for i, shard in shards.items():
        axes = relation.inputs[i].pattern.axes
        identity = tuple(input_types[i].shape) == output_shape and all(
            amap.is_projection and dim_to_out.get(amap.dim) == a for a, amap in enumerate(axes))
        if not identity:
            raise ShardPropagationError(
                f"{_role(roles, i)} is laid out as a row-major relinearisation (a layout position "
                "straddles logical axes), which propagates only through an identity access onto an "
                "equal-shape output; reshard it first"
            )
        if (shard.layout.shape, shard.attrs) != (first.layout.shape, first.attrs):
            raise ShardPropagationError(
                f"{_role(roles, i)} and {_role(roles, straddling[0])} have different layouts and one "
                "is a row-major relinearisation; reshard one operand onto the other's layout"
            )
    strides = {shard.layout.strides for shard in shards.values()}
    keep = not fresh_strides and len(strides) == 1 and None not in strides
    layout = first.layout if keep else Layout(first.layout.shape, c_order(first.layout.shape))
    return ShardLayout(layout, first.attrs, first.mesh)


def factor_groups(shape: tuple, shard: ShardLayout) -> tuple:
    """Per logical axis, the layout positions that are its factors.

    An unsplit extent-1 position is no factor: it adds nothing to the extent and
    carries no sharding, so ``(1, 4 @ m.a)`` and ``(4 @ m.a,)`` are one
    factorisation of one binding (spec §3.2 rule 6 refuses only incompatible
    mesh axes; companions §2.5 canonical form has no such position). An
    extent-1 axis is then left with no factors at all."""
    gshape = shard.layout.shape
    split = set(shard.split_positions())
    return tuple(tuple(p for p in group if gshape[p] != 1 or p in split)
                 for group in regroup(shape, gshape))


def _factor_extents(binding) -> tuple:
    """The factor extents of a chosen (extents, input, factor indices) binding."""
    extents, _, at = binding
    return tuple(extents[k] for k in at)


def _same_extent(extents, extent) -> bool:
    total = 1
    for e in extents:
        total = dim_mul(total, e)
    return total == extent


def _describe(state) -> str:
    if state[0] == "split":
        return f"split of domain dim {state[1]}"
    if state[0] == "partial":
        return f"Partial({state[1]})"
    return "Broadcast"


def check_partials(ctx, allowed, *, roles=None, what: str = "this op", prefix: str = "") -> dict:
    """Inspect every tensor input for a Partial; reject one the op cannot carry.

    ``allowed(index, mesh_axis, reduction) -> bool`` is the op's own commuting
    judgment. Returns {mesh axis: reduction} of the Partials that pass."""
    passed: dict = {}
    for i, type_ in enumerate(ctx.arg_types):
        if not isinstance(type_, TensorType):
            continue
        shard = type_.shard
        for m, reduction in partial_axes(shard).items():
            role = roles[i] if roles and i < len(roles) else f"operand {i}"
            if not allowed(i, m, reduction):
                name = shard.mesh.axis_name(m)
                ctx.error(
                    f"{prefix}{role} (operand {i}) carries Partial({reduction}) on mesh axis {m} ('{name}'), "
                    f"which does not commute with {what}; insert reshard({role}, ...) with '{name}' "
                    "Broadcast before this consumer"
                )
            passed[m] = reduction
    return passed
