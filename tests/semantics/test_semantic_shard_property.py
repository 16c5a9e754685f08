"""Spec §3.2 property: a derived layout must reproduce the unsharded result.

Random elementwise / matmul / reduce programs on random 1-2 axis meshes; numpy
arrays are sharded per mesh position by the input layouts, each op runs locally
on every position, and every derived output layout is checked against the
global result (Split: the position holds exactly its block; Broadcast: the
position holds the whole axis; Partial: the local values summed over that mesh
axis give the block). The idea behind DTensor's strategy validation.
"""
import itertools

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Var
from tilefoundry.ir.shard import B, Broadcast, Layout, Mesh, Partial, S, Split, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.ops import Binary, BinaryKind as BK, MatMul, Reduce, ReduceKind as RK, Unary, UnaryKind as UK
from tilefoundry.semantics.canonical import canonical_shard_layout, regroup
from tilefoundry.semantics.typeinfer import build_call

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def positions(mesh):
    return list(itertools.product(*(range(e) for e in mesh.shape)))


def held_indices(type_, p):
    """Per logical axis, the sorted logical indices position ``p`` holds."""
    shard = type_.shard
    if shard is None:
        return [np.arange(e) for e in type_.shape]
    g = shard.layout.shape
    splits = {}
    for m, attr in enumerate(shard.attrs):
        if isinstance(attr, Split):
            splits.setdefault(attr.axis, []).append(m)
    out = []
    for group in regroup(type_.shape, g):
        idx = np.array([0])
        for k in group:
            ms = splits.get(k, [])
            if ms:
                count = int(np.prod([shard.mesh.shape[m] for m in ms]))
                chunk = g[k] // count
                coord = 0
                for m in ms:
                    coord = coord * shard.mesh.shape[m] + p[m]
                held = np.arange(coord * chunk, (coord + 1) * chunk)
            else:
                held = np.arange(g[k])
            idx = (idx[:, None] * g[k] + held[None, :]).ravel()
        out.append(idx)
    return out


def block(arr, type_, p):
    idx = held_indices(type_, p)
    return arr[np.ix_(*idx)] if idx else arr


def read_local(type_, local_arr, p, needed):
    """The values position ``p`` reads: ``needed`` indices per axis, which must
    lie inside what the position holds (else the derived layout is wrong)."""
    held = held_indices(type_, p)
    picks = []
    for h, n in zip(held, needed):
        assert np.isin(n, h).all(), (type_, p, n, h)
        picks.append(np.searchsorted(h, n))
    return local_arr[np.ix_(*picks)] if picks else local_arr


def broadcast_needed(type_, out_idx):
    off = len(out_idx) - type_.rank
    return [np.array([0]) if (type_.shape[j] == 1 and len(out_idx[j + off]) != 1) or type_.shape[j] == 1
            else out_idx[j + off] for j in range(type_.rank)]


def check_layout(value_type, global_arr, local, mesh):
    """Every position's local values, reduced over Partial axes, equal its block."""
    shard = value_type.shard
    partial_axes = [m for m, a in enumerate(shard.attrs) if isinstance(a, Partial)] if shard else []
    for p in positions(mesh):
        total = None
        for q in positions(mesh):
            if any(q[m] != p[m] for m in range(mesh.rank) if m not in partial_axes):
                continue
            total = local[q] if total is None else total + local[q]
        expected = block(global_arr, value_type, p)
        assert total.shape == expected.shape, (value_type, p, total.shape, expected.shape)
        assert np.array_equal(total, expected), (value_type, p)


@st.composite
def mesh_and_layouts(draw, shapes_rule):
    rank = draw(st.integers(1, 2))
    extents = tuple(draw(st.sampled_from([1, 2, 3])) for _ in range(rank))
    mesh = Mesh((Topology("cta", int(np.prod(extents))),), Layout(extents), names=("a", "b")[:rank])
    return mesh


def random_attrs(draw, mesh, rank):
    return tuple(draw(st.sampled_from([B()] + [S(a) for a in range(rank)])) for _ in range(mesh.rank))


def shape_for(draw, mesh, attrs, rank):
    shape = []
    for a in range(rank):
        factor = 1
        for m, attr in enumerate(attrs):
            if isinstance(attr, Split) and attr.axis == a:
                factor *= mesh.shape[m]
        shape.append(factor * draw(st.integers(1, 2)))
    return shape


def typed_input(name, shape, mesh, attrs):
    layout = canonical_shard_layout(tuple(shape), mesh, attrs)
    return Var(name, TensorType(tuple(shape), DType.f32, layout, SK.GMEM))


def local_inputs(var, arr, mesh):
    return {p: block(arr, var.type, p) for p in positions(mesh)}


def program_from(draw):
    """Mesh, op kind and value generator, drawn through ``draw`` (``st.data()``'s,
    live for the whole example: the op shapes are drawn while building it)."""
    mesh = draw(mesh_and_layouts(None))
    kind = draw(st.sampled_from(["unary", "binary", "matmul", "reduce"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return mesh, kind, rng, draw


def run_and_check(mesh, kind, rng, draw):
    def arr(shape):
        return rng.integers(-3, 4, size=tuple(shape)).astype(np.float64)

    if kind in ("unary", "binary", "reduce"):
        attrs = random_attrs(draw, mesh, 2)
        shape = shape_for(draw, mesh, attrs, 2)
        x = typed_input("x", shape, mesh, attrs)
        xg = arr(shape)
        xl = local_inputs(x, xg, mesh)
        if kind == "unary":
            ukind = draw(st.sampled_from([UK.NEG, UK.EXP]))
            f = np.negative if ukind == UK.NEG else np.exp
            out = build_call(Unary(ukind), (x,))
            if out.type.shard is not None:
                local = {p: f(read_local(x.type, xl[p], p, held_indices(out.type, p))) for p in xl}
                check_layout(out.type, f(xg), local, mesh)
            return
        if kind == "reduce":
            axis = draw(st.integers(0, 1))
            keep = draw(st.booleans())
            out = build_call(Reduce((axis,), keep, RK.SUM), (x,))
            local = {}
            for p in positions(mesh):  # a complete reduction: the op combines every shard of the axis
                acc = None
                for q in positions(mesh):
                    if any(q[m] != p[m] for m, a in enumerate(attrs) if not (isinstance(a, Split) and a.axis == axis)):
                        continue
                    part = xl[q].sum(axis=axis, keepdims=keep)
                    acc = part if acc is None else acc + part
                local[p] = acc
            if out.type.shard is not None:
                check_layout(out.type, xg.sum(axis=axis, keepdims=keep), local, mesh)
            return
        yattrs = random_attrs(draw, mesh, 2)
        yshape = list(shape)
        if draw(st.booleans()):
            yattrs = tuple(B() if isinstance(a, Split) and a.axis == 0 else a for a in yattrs)
            yshape[0] = 1
        ok = all(not isinstance(a, Split) or shape_for_ok(mesh, yattrs, yshape) for a in yattrs)
        assume(ok)
        y = typed_input("y", yshape, mesh, yattrs)
        yg = arr(yshape)
        yl = local_inputs(y, yg, mesh)
        bkind = draw(st.sampled_from([BK.ADD, BK.MUL, BK.MAX]))
        f = {BK.ADD: np.add, BK.MUL: np.multiply, BK.MAX: np.maximum}[bkind]
        try:
            out = build_call(Binary(bkind), (x, y))
        except VerifyError:
            assume(False)
        if out.type.shard is not None:
            local = {}
            for p in positions(mesh):
                oi = held_indices(out.type, p)
                local[p] = f(read_local(x.type, xl[p], p, broadcast_needed(x.type, oi)),
                             read_local(y.type, yl[p], p, broadcast_needed(y.type, oi)))
            check_layout(out.type, f(xg, yg), local, mesh)
        return
    # matmul, optionally followed by a replicated scale and a SUM reduce (Partial must survive)
    la = random_attrs(draw, mesh, 2)
    ra = random_attrs(draw, mesh, 2)
    m_, k_, n_ = (draw(st.integers(1, 2)) for _ in range(3))
    dims = [m_, k_, n_]
    for attrs, axes in ((la, (0, 1)), (ra, (1, 2))):
        for mi, attr in enumerate(attrs):
            if isinstance(attr, Split):
                dims[axes[attr.axis]] *= mesh.shape[mi]
    m_, k_, n_ = dims
    lshape, rshape = [m_, k_], [k_, n_]
    assume(shape_for_ok(mesh, la, lshape) and shape_for_ok(mesh, ra, rshape))
    lhs, rhs = typed_input("a", lshape, mesh, la), typed_input("w", rshape, mesh, ra)
    ag, wg = arr(lshape), arr(rshape)
    al, wl = local_inputs(lhs, ag, mesh), local_inputs(rhs, wg, mesh)
    try:
        out = build_call(MatMul(), (lhs, rhs))
    except VerifyError:
        assume(False)
    if out.type.shard is None:
        return
    local = fix_partial_locals(out.type, lhs.type, rhs.type, al, wl, mesh, None)
    check_layout(out.type, ag @ wg, local, mesh)
    scale = Var("s", TensorType((1, 1), DType.f32, None, SK.GMEM))
    scaled = build_call(Binary(BK.MUL), (out, scale))
    check_layout(scaled.type, (ag @ wg) * 2.0, {p: v * 2.0 for p, v in local.items()}, mesh)
    red = build_call(Reduce((-1,), True, RK.SUM), (out,))
    partials = lambda t: [m for m, a in enumerate(t.shard.attrs) if isinstance(a, Partial)]  # noqa: E731
    assert partials(red.type) == partials(out.type)  # a sum-Partial passes through Reduce SUM


def fix_partial_locals(out_type, lt, rt, al, wl, mesh, local):
    """A K split on one operand only: the other operand is whole on that position,
    so the local product reads the matching K block of it (what the op does)."""
    shard = out_type.shard
    result = {}
    for p in positions(mesh):
        o_idx = held_indices(out_type, p)
        k = np.intersect1d(held_indices(lt, p)[1], held_indices(rt, p)[0])
        a_block = read_local(lt, al[p], p, [o_idx[0], k])
        w_block = read_local(rt, wl[p], p, [k, o_idx[1]])
        result[p] = a_block @ w_block
    _ = shard
    return result


def shape_for_ok(mesh, attrs, shape):
    for a in range(len(shape)):
        factor = 1
        for m, attr in enumerate(attrs):
            if isinstance(attr, Split) and attr.axis == a:
                factor *= mesh.shape[m]
        if shape[a] % factor:
            return False
    return True


@SETTINGS
@given(st.data())
def test_property_3_2_derived_layout_reproduces_global_result(data):
    run_and_check(*program_from(data.draw))


_ = (Broadcast,)
