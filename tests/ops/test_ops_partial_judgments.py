"""Each op's own commuting judgment for a Partial input (spec §3.2 rule 4).

A Partial passes only where op(reduce(x_0..x_n)) == reduce(op(x_0)..op(x_n)) holds
for that reduction; everywhere else the op refuses it, naming the operand, the
mesh axis and the Reshard remedy. Where it passes, the output keeps the Partial on
the same mesh axis.
"""
import pytest

from tilefoundry.errors import VerifyError
from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Var
from tilefoundry.ir.shard import B, Layout, Mesh, P, ShardLayout, Topology
from tilefoundry.ir.storage import StorageKind as SK
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.ops import (
    ArgMax, Binary, BinaryKind as BK, CacheUpdate, Cast, Clamp, Concat, Conv2D, FullLike, Gelu, IndexAdd,
    IndexSelect, InsertSlice, LayerNorm, MatMul, Quant, Reduce, ReduceKind as RK, ReLU, Reshape, Reshard,
    RMSNorm, RoPE, Sigmoid, Silu, Slice, SoftMax, Softplus, Split, Stack, Tanh, TopK, Transpose,
    TupleGetItem, Unary, UnaryKind as UK, Where,
)
from tilefoundry.ir.expr import Constant, Tuple
from tilefoundry.ir.tensor_type import TupleType, umat_scalar
from tilefoundry.semantics.typeinfer import build_call

MESH = Mesh((Topology("cta", 4),), Layout((4,), (1,)), names=("u",))


def ints(*values):
    t = umat_scalar(DType.i64)
    return Tuple(tuple(Constant(v, t) for v in values), TupleType((t,) * len(values)))


def V(name, shape, dtype="f32"):
    return Var(name, TensorType(tuple(shape), DType.from_name(dtype), None, SK.SMEM))


def pv(reduction="sum", shape=(8, 16), dtype="f32"):
    """A value carrying Partial(reduction) on mesh axis 0."""
    layout = ShardLayout(Layout(tuple(shape)), (P(reduction),), MESH)
    return build_call(Reshard(layout, SK.SMEM), (V("p", shape, dtype),))


def passes(op, *args):
    out = build_call(op, tuple(args))
    t = out.type.fields[0] if hasattr(out.type, "fields") else out.type
    return t.layout.attrs


def refused(op, *args, role=None):
    with pytest.raises(VerifyError) as err:
        build_call(op, tuple(args))
    first = str(err.value).splitlines()[0]
    assert "carries Partial(" in first and "mesh axis 0 ('u')" in first and "reshard(" in first, first
    if role:
        assert f"{role} (operand" in first, first
    return first


@pytest.mark.parametrize("kind", list(UK))
def test_ops_partial_unary_kinds(kind):
    if kind in (UK.CAST, UK.NOT):
        return  # cast has its own op; not needs bool (a bool Partial is not a sum)
    # sum: only negation is linear
    if kind == UK.NEG:
        assert passes(Unary(kind), pv("sum")) == (P("sum"),)
    else:
        refused(Unary(kind), pv("sum"), role="x")
    # max: monotone non-decreasing kinds commute with max
    if kind in (UK.EXP, UK.EXP2, UK.LOG, UK.LOG2, UK.CEIL, UK.ROUND, UK.RELU):
        assert passes(Unary(kind), pv("max")) == (P("max"),)
    else:
        refused(Unary(kind), pv("max"))


def test_ops_partial_activations_and_clamp():
    for op in (Softplus(), Sigmoid(), Tanh(), ReLU(), Clamp(-1.0, 1.0)):  # monotone
        assert passes(op, pv("max")) == (P("max"),)
        assert passes(op, pv("min")) == (P("min"),)
        refused(op, pv("sum"))
    for op in (Silu(), Gelu()):  # not monotone
        refused(op, pv("max"))
        refused(op, pv("sum"))


def test_ops_partial_cast_float_to_float_only():
    assert passes(Cast(DType.bf16), pv("sum")) == (P("sum"),)
    refused(Cast(DType.i32), pv("sum"))
    refused(Cast(DType.f32), pv("sum", dtype="i32"))


def test_ops_partial_binary_kinds():
    r = V("r", (8, 16))
    assert passes(Binary(BK.ADD), pv(), pv()) == (P("sum"),)
    assert passes(Binary(BK.SUB), pv(), pv()) == (P("sum"),)
    refused(Binary(BK.ADD), pv(), r, role="lhs")  # the replicated r would be added once per shard
    assert passes(Binary(BK.MUL), r, pv()) == (P("sum"),)
    refused(Binary(BK.MUL), pv(), pv())
    assert passes(Binary(BK.DIV), pv(), r) == (P("sum"),)
    refused(Binary(BK.DIV), r, pv(), role="rhs")
    assert passes(Binary(BK.MAX), pv("max"), r) == (P("max"),)
    assert passes(Binary(BK.MIN), pv("min"), pv("min")) == (P("min"),)
    refused(Binary(BK.MAX), pv("sum"), r)
    refused(Binary(BK.ADD), pv("max"), pv("max"))
    for kind in (BK.LT, BK.EQ):
        refused(Binary(kind), pv(), r)


def test_ops_partial_matmul_reduce():
    w = V("w", (16, 4))
    assert passes(MatMul(), pv(), w) == (P("sum"),)
    refused(MatMul(), pv(), pv(shape=(16, 4)))
    assert passes(Reduce((1,), True, RK.SUM), pv()) == (P("sum"),)
    assert passes(Reduce((1,), True, RK.MEAN), pv()) == (P("sum"),)
    assert passes(Reduce((1,), True, RK.MAX), pv("max")) == (P("max"),)
    refused(Reduce((1,), True, RK.ABS_MAX), pv())
    refused(Reduce((1,), True, RK.MAX), pv("sum"))


def test_ops_partial_data_movement_commutes():
    assert passes(Transpose((1, 0)), pv()) == (P("sum"),)
    assert passes(Reshape((16, 8)), pv()) == (P("sum"),)
    assert passes(Slice((4, 16), (1, 1)), pv(), ints(0, 0)) == (P("sum"),)
    assert passes(Split(0, 2), pv()) == (P("sum"),)
    assert passes(TupleGetItem(1), build_call(Split(0, 2), (pv(),))) == (P("sum"),)
    assert passes(IndexSelect(0), pv(), V("i", (3,), "i64")) == (P("sum"),)
    assert passes(Concat(0), pv(), pv()) == (P("sum"),)
    assert passes(Stack(0), pv(), pv()) == (P("sum"),)
    refused(Concat(0), pv(), V("r", (8, 16)))
    refused(Stack(0), V("r", (8, 16)), pv())
    assert passes(InsertSlice(), pv(), pv(shape=(4, 16)), ints(0, 0)) == (P("sum"),)
    refused(InsertSlice(), pv(), V("u", (4, 16)), ints(0, 0), role="dst")


def test_ops_partial_refused_by_non_commuting_ops():
    x = pv()
    for op, args, role in (
        (Where(), (V("c", (8, 16), "bool"), x, V("o", (8, 16))), "input"),
        (FullLike(0.0), (x,), "x"),
        (SoftMax(-1), (x,), "x"),
        (RMSNorm(), (x, V("w", (16,))), "x"),
        (LayerNorm(-1, 1e-5), (x, V("w", (16,)), V("b", (16,))), "x"),
        (TopK(2), (x,), "x"),
        (ArgMax(), (x,), "x"),
        (Quant("per_token_group", 16), (x,), "x"),
        (IndexAdd(0), (x, V("i", (2,), "i64"), V("s", (2, 16))), "dst"),
        (Conv2D(1, 0, 1, 1), (pv(shape=(1, 2, 4, 4)), V("w", (3, 2, 1, 1)), V("b", (3,))), "input"),
        (RoPE(), (pv(shape=(1, 4, 8)), pv(shape=(1, 4, 8)), V("c", (8, 8)), V("s", (8, 8)),
                  V("p", (4,), "i32")), "q"),
    ):
        refused(op, *args, role=role)
    cache = pv("sum", (1, 16, 2, 8), "bf16")
    refused(CacheUpdate(), cache, V("p", (), "i32"), V("s", (), "i32"), V("n", (1, 2, 2, 8), "bf16"), role="cache")


def test_ops_partial_only_reshard_completes():
    done = build_call(Reshard(ShardLayout(Layout((8, 16)), (B(),), MESH), SK.SMEM), (pv(),))
    assert done.type.layout.attrs == (B(),)
