"""companions §5 cost evaluators: every TF op class has one (§5.1), the
classification (§5.2), every row of the per-op table (§5.3: work and the
directions of (*args, result)) and the reference spot checks (§5.5).

Each authored line below carries its expectation as a trailing comment:
``# <OpClass> <work> | <directions>``. ``<work>`` is ``-`` (no work) or
``<dtype|kind>:<count>`` entries (the four service kinds go to service, any
other key to flops); ``<directions>`` gives each of (*args, result) as R, W,
RW or . (nothing). Counts are computed by hand from §5.3 for these shapes."""
from __future__ import annotations

import re

import pytest

from tests.analysis.analysis_helpers import HEADER, load
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.check import iter_nodes
from tilefoundry.analysis.compute_cost import ComputeCostMetadata
from tilefoundry.ir.expr import Call
from tilefoundry.ir.metadata import SourceSpanMetadata
from tilefoundry.semantics.cost import SERVICE_KINDS, CostContext

OPS = """
@module(entry="ops", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Ops:
    @func
    def ops(
        x: Tensor[(8, 64), "f32"],
        w: Tensor[(64, 32), "bf16"],
        g: Tensor[(64,), "f32"],
        b: Tensor[(64,), "f32"],
        q: Tensor[(4, 256), "f32"],
        i: Tensor[(8, 64), "i32"],
        img: Tensor[(1, 3, 8, 8), "f32"],
        ker: Tensor[(4, 3, 3, 3), "f32"],
        kb: Tensor[(4,), "f32"],
        idx: Tensor[(3,), "i64"],
        src: Tensor[(3, 64), "f32"],
        qh: Tensor[(1, 4, 2, 16), "bf16"],
        kh: Tensor[(1, 4, 1, 16), "bf16"],
        cs: Tensor[(256, 16), "bf16"],
        sn: Tensor[(256, 16), "bf16"],
        pos: Tensor[(1, 4), "i64"],
        cache: Tensor[(1, 32, 2, 16), "bf16"],
        cur: Tensor[(), "i32"],
        cnt: Tensor[(), "i32"],
        new: Tensor[(1, 8, 2, 16), "bf16"],
        ma: Tensor[(16, 16), "f16"],
        mb: Tensor[(16, 8), "f16"],
        flag: Tensor[(8, 64), "bool"],
    ):
        c = tf.cast(x, "bf16")  # Cast bf16:512 | R W
        mm = tf.matmul(c, w)  # MatMul bf16:32768 | R R W
        a = x + g  # Binary f32:512 | R R W
        dv = x / a  # Binary f32:512 | R R W
        ng = tf.neg(x)  # Unary f32:512 | R W
        sq = tf.square(x)  # Unary f32:512 | R W
        r = tf.rms_norm(x, g)  # RMSNorm f32:4096 | R R W
        ln = tf.layer_norm(x, g, b, -1, 1e-5)  # LayerNorm f32:4096 | R R R W
        vals, ids = tf.topk(x, 4)  # TopK f32:512 | R W
        lt = tf.cmp_lt(x, a)  # Binary predicate:512 | R R W
        ge = tf.cmp_ge(x, a)  # Binary predicate:512 | R R W
        both = tf.logical_and(lt, ge)  # Binary predicate:512 | R R W
        either = tf.logical_or(both, flag)  # Binary predicate:512 | R R W
        nt = tf.logical_not(either)  # Unary predicate:512 | R W
        wh = tf.where(nt, x, a)  # Where select:512 | R R R W
        e = tf.exp(x)  # Unary special:512 | R W
        rs = tf.rsqrt(x)  # Unary special:512 | R W
        lg = tf.log(x)  # Unary special:512 | R W
        e2 = tf.exp2(x)  # Unary special:512 | R W
        l2 = tf.log2(x)  # Unary special:512 | R W
        ii = i + i  # Binary integer:512 | R R W
        fd = tf.floor_div(ii, i)  # Binary integer:512 | R R W
        md = tf.mod(fd, i)  # Binary integer:512 | R R W
        ab = tf.abs(md)  # Unary integer:512 | R W
        wide = tf.cast(ab, "i64")  # Cast i64:512 | R W
        am = tf.argmax(x)  # ArgMax - | R W
        cc = tf.concat(x, x, axis=0)  # Concat - | R R W
        halves = tf.split(x, axis=0, num_splits=2)  # Split - | R W
        st = tf.stack(x, x, axis=0)  # Stack - | R R W
        t = tf.transpose(x, (1, 0))  # Transpose - | R W
        rsh = tf.reshape(x, (64, 8))  # Reshape - | . .
        ar = tf.arange(Tensor[(8,), "i64"])  # Arange - | .
        z = tf.zeros(Tensor[(8, 64), "f32"])  # Zeros - | W
        fl = tf.full_like(x, 2.0)  # FullLike - | R W
        ri = tf.repeat_interleave(x, 2, 0)  # RepeatInterleave - | R W
        sel = tf.index_select(x, idx, 0)  # IndexSelect - | R R W
        iad = tf.index_add(x, idx, src, 0)  # IndexAdd f32:192 | R R R W
        icp = tf.index_copy(x, idx, src, 0)  # IndexCopy - | . R R W
        win = x[0:4, :]  # Slice - | . R .
        ins = tf.insert_slice(z, src, (2, 0))  # InsertSlice - | . R R W
        upd = tf.cache_update(cache, cur, cnt, new)  # CacheUpdate - | . R R R W
        qr, kr = tf.rope(qh, kh, cs, sn, pos)  # RoPE bf16:576 | R R R R R W
        qv, qs = tf.quant(q, "per_token_group", 128, "fp8e4m3")  # Quant f32:4096 | R W
        conv = tf.conv2d(img, ker, kb, (1, 1), (1, 1), (1, 1), 1)  # Conv2D f32:13824 | R R R W
        sm = tf.softmax(x, -1)  # SoftMax f32:512 | R W
        mean = tf.reduce(x, (-1,), True, ReduceKind.MEAN)  # Reduce f32:512 | R W
        cl = tf.clamp(x, -1.0, 1.0)  # Clamp f32:512 | R W
        re = tf.relu(x)  # ReLU f32:512 | R W
        sg = tf.sigmoid(x)  # Sigmoid f32:512 | R W
        th = tf.tanh(x)  # Tanh f32:512 | R W
        sl = tf.silu(x)  # Silu f32:512 | R W
        gl = tf.gelu(x)  # Gelu f32:512 | R W
        sp = tf.softplus(x)  # Softplus f32:512 | R W
        mma = tf.mma_sm80_16x8x16(ma, mb, "f16", "f16", "f32")  # Mma_SM80_16x8x16 f16:4096 | R R W
        with Mesh(("cta",), (4,), ("c",)) as m:
            moved = tf.reshard(x, (8 @ m.c, 64), "rmem")  # Reshard - | R W
            kept = tf.reshard(moved, (8, 64 @ m.c), "rmem")  # Reshard - | . .
        return (mm, dv, ng, sq, r, ln, vals, ids, wh, e, rs, lg, e2, l2, wide, am, cc, halves,
                st, t, rsh, ar, ins, fl, ri, sel, iad, icp, win, upd, qr, kr, qv, qs, conv, sm,
                mean, cl, re, sg, th, sl, gl, sp, mma, kept)
"""

_EXPECT = re.compile(r"#\s+(\w+) (\S+) \| (.+)$")


def _expectations() -> dict[int, tuple]:
    """file line -> (op class, work, directions) from the trailing comments."""
    rows = {}
    offset = len(HEADER.splitlines())
    for number, line in enumerate(OPS.splitlines(), start=offset + 1):
        match = _EXPECT.search(line)
        if match:
            op, work, dirs = match.groups()
            rows[number] = (op, work, tuple(dirs.split()))
    return rows


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ops")
    module, function = load(tmp, OPS, "Ops")
    result = analyze(module, function, analysis="compute-cost")
    rows: dict[int, list] = {}
    for node in iter_nodes(result.function.body):
        if isinstance(node, Call):
            span = node.get_metadata(SourceSpanMetadata)
            rows.setdefault(span.line if span else -1, []).append(node)
    return rows


def _work(record) -> str:
    pairs = [f"{k}:{v}" for k, v in record.flops] + [f"{k}:{v}" for k, v in record.service]
    return ",".join(pairs) or "-"


def _directions(call) -> tuple:
    from tilefoundry.semantics.op_registry import COST_EVALUATORS

    cost = COST_EVALUATORS[type(call.op)](call, CostContext(None).bind(call))
    assert len(cost.traffic) == len(call.args) + 1
    return tuple(("R" if t.read else "") + ("W" if t.write else "") or "." for t in cost.traffic)


ROWS = sorted(_expectations().items())


@pytest.mark.parametrize("line, expected", ROWS, ids=[f"{v[0]}@{k}" for k, v in ROWS])
def test_compute_cost_5_3_per_op_work_and_directions(measured, line, expected):
    op, work, dirs = expected
    calls = [c for c in measured.get(line, []) if type(c.op).__name__ == op]
    assert len(calls) == 1, f"line {line}: {[type(c.op).__name__ for c in measured.get(line, [])]}"
    record = calls[0].get_metadata(ComputeCostMetadata)
    assert _work(record) == work
    # per-unit equals whole on unsharded operands (§5.5 is taken at `cta`, unsharded)
    assert record.flops_per_unit == record.flops and record.service_per_unit == record.service
    for key, _ in record.service:
        assert key in SERVICE_KINDS
    assert not (record.flops and record.service)  # never both (§5.1)
    assert _directions(calls[0]) == dirs


def test_compute_cost_5_1_every_tf_op_class_has_an_evaluator_and_is_exercised():
    import tilefoundry.ops  # noqa: F401
    from tilefoundry.semantics.op_registry import COST_EVALUATORS, TF_NAMES

    classes = {entry.op_class for entry in TF_NAMES.values()}
    assert sorted(c.__name__ for c in classes if c not in COST_EVALUATORS) == []
    exercised = {op for op, _, _ in _expectations().values()}
    # the table above reaches every class but the ones needing no authored line
    unreached = sorted(c.__name__ for c in classes if c.__name__ not in exercised)
    assert unreached == ["Local", "Rank", "ShapeOf", "TupleGetItem", "Wgmma_SM90_64x128x16"]


def test_compute_cost_5_5_spot_check_three_trip_loop(tmp_path):
    """A 3-trip loop over cast + add of 128 f32: Function record f32:768."""
    module, function = load(tmp_path, """
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
class Trips:
    @func
    def f(x: Tensor[(128,), "f32"]) -> Tensor[(128,), "f32"]:
        acc = x
        for k in range(3):
            acc = tf.cast(acc, "f32") + x
        return acc
""", "Trips")
    result = analyze(module, function, analysis="compute-cost")
    assert result.function.get_metadata(ComputeCostMetadata).flops == (("f32", 768),)


def test_compute_cost_1_2_1_dim_arithmetic_has_no_evaluator_and_names_its_location(tmp_path):
    """companions §1.4: `i * 4` on an induction variable stays a DimMul call."""
    from tilefoundry.errors import AnalysisError

    module, function = load(tmp_path, """
@module(entry="f", target=CpuTarget())
class DimOps:
    @func
    def f(x: Tensor[(32, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        acc = tf.zeros(Tensor[(4, 8), "f32"])
        for i in range(8):
            acc = acc + x[i * 4 : i * 4 + 4, :]
        return acc
""", "DimOps")
    with pytest.raises(AnalysisError) as info:
        analyze(module, function, analysis="compute-cost")
    assert info.value.reason == "DimMul: no cost evaluator registered for DimMul"
    assert re.fullmatch(r"\S+\.py:11:\d+: DimMul: no cost evaluator registered for DimMul "
                        r"\(value '\w+'\)", str(info.value))
