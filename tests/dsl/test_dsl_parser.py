"""authoring.md §2.3–§5: each construct the parser supports builds the stated IR."""
from __future__ import annotations

import pytest

from tests.dsl.dsl_helpers import calls, needs_ops

pytestmark = needs_ops

MOD = '@module(entry="{entry}", target=CudaTarget("nvidia.h200_sxm"), topologies={topo})\nclass M:\n'
CTA4 = '(Topology("cta", 4),)'


def mod(entry="f", topo=CTA4):
    return MOD.format(entry=entry, topo=topo)


def op_names(expr):
    return [getattr(c.op, "name", None) or type(c.op).__name__ for c in calls(expr)]


def test_2_4_params_tensor_and_consttensor(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4, 8), "bf16"], w: ConstTensor[(8, 2), "bf16"]) -> Tensor[(4, 2), "bf16"]:
        return x @ w
''')
    module, fn = p.load("M")
    assert [(v.name, v.is_const) for v in fn.params] == [("x", False), ("w", True)]
    assert fn.params[0].type.shape == (4, 8) and fn.return_type.shape == (4, 2)
    assert type(fn.body.op).__name__ == "MatMul"
    assert module.weights == {"w": fn.params[1].type}


def test_2_4_unpostponed_annotations_and_dimvars(program):
    p = program('''
N = DimVar("n", 1, 65)
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(x: Tensor[(N, 2 * 4), "f32"], y: Tensor[(N, 8), "f32", "smem"]) -> Tensor[(N, 8), "f32"]:
        return x + tf.reshard(y, storage="gmem", layout=None) if False else x
''', header="from tilefoundry import module\nfrom tilefoundry.dsl import *\nfrom tilefoundry.dsl import tf\nfrom tilefoundry.target import CudaTarget\n")
    with pytest.raises(Exception, match="conditional expression"):
        p.load("M")


def test_3_1_slots_storage_and_dimvar_shape(program):
    p = program('''
from tilefoundry.dsl.storage import smem
N = DimVar("n", 1, 65)
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(x: Tensor[(N, 8), f32, smem], y: Tensor[(), "i64"]) -> Tensor[(N, 8), "f32", smem]:
        return x
''', header="from __future__ import annotations\n" + "from tilefoundry import module\nfrom tilefoundry.dsl import *\nfrom tilefoundry.target import CudaTarget\n")
    _, fn = p.load("M")
    x, y = fn.params
    assert x.type.shape[0].name == "n" and str(x.type.storage) == "smem" and x.type.dtype.name == "f32"
    assert y.type.shape == ()


def test_5_3_operators_build_kinded_ops(program):
    p = program(mod() + '''
    @func
    def f(a: Tensor[(4,), "i64"], b: Tensor[(4,), "i64"]):
        s = a + b - a * b
        q = a // b + a % b
        m = (a < b) and (a >= b)
        n = not (a == b)
        return s, q, m, n, -a
''')
    _, fn = p.load("M")
    kinds = [str(getattr(c.op, "kind", "")) for c in calls(fn.body)]
    text = " ".join(kinds).lower()
    for kind in ("add", "sub", "mul", "floor_div", "mod", "lt", "ge", "and", "eq", "not", "neg"):
        assert kind in text, kind


def test_5_4_float_constant_takes_operand_dtype(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4,), "bf16"]) -> Tensor[(4,), "bf16"]:
        return x + 1e-6
''')
    _, fn = p.load("M")
    const = fn.body.args[1]
    assert type(const).__name__ == "Constant" and const.type.dtype.name == "bf16"
    assert str(const.type.storage) == "umat"


def test_5_2_compile_time_numbers_and_lists(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        k = 2 * 3 + 1
        a, b = 2, 16
        xs = [x * float(i) for i in range(3)] if False else [x, x]
        return xs[-1] * k
''')
    with pytest.raises(Exception, match="conditional expression"):
        p.load("M")
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        k = 2 * 3 + 1
        a, b = 2, 16
        xs = [x * 2.0 for i in range(3)]
        return xs[-1] * (k + a + b + 0.0)
''')
    _, fn = p.load("M")
    assert fn.body.args[1].value == 25.0


def test_5_5_subscripts_static_int_and_strided(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4, 8, 16), "f32"]):
        a = x[:, 2:6, 0:16:2]
        b = x[1, :, -1]
        return a, b
''')
    _, fn = p.load("M")
    a, b = fn.body.fields
    assert a.type.shape == (4, 4, 8)
    assert b.type.shape == (8,)
    assert type(b.op).__name__ == "Reshape" and type(b.args[0].op).__name__ == "Slice"


def test_5_6_tile_loop_with_carry_and_window(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(64, 8), "f32"]) -> Tensor[(16, 8), "f32"]:
        acc = tf.zeros(Tensor[(16, 8), "f32"])
        for w in tile(64, 16):
            acc = acc + x[w, :]
        return acc
''')
    _, fn = p.load("M")
    from tilefoundry.ir.expr import GridRegionExpr

    grid = fn.body
    assert isinstance(grid, GridRegionExpr) and grid.kind == "tile"
    assert (grid.start, grid.extent, grid.step) == (0, 64, 16)
    assert [c.name for c in grid.carried] == ["acc"]
    window = grid.yields[0].args[1]
    assert window.type.shape == (16, 8)


def test_5_6_range_loop_several_carries_and_moved_window(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(64, 8), "f32"]):
        s = tf.zeros(Tensor[(1, 8), "f32"])
        m = tf.zeros(Tensor[(8, 8), "f32"])
        for i in range(0, 4):
            s = s + x[i:i + 1, :]
            for w in tile(32, 8):
                m = tf.maximum(m, x[w + 8, :])
        return s, m
''')
    _, fn = p.load("M")
    s, m = fn.body.fields
    assert type(s.op).__name__ == "TupleGetItem" and s.args[0] is m.args[0]
    outer = s.args[0]
    assert outer.kind == "range" and [c.name for c in outer.carried] == ["s", "m"]


def test_5_7_tuple_return_and_unpacking(program):
    p = program(mod() + '''
    @func
    def pair(x: Tensor[(4, 8), "f32"]):
        return x, x * 2.0

    @func
    def f(x: Tensor[(4, 8), "f32"]):
        a, b = pair(x)
        return a + b
''')
    _, fn = p.load("M")
    assert type(fn.body.args[0].op).__name__ == "TupleGetItem"
    call = fn.body.args[0].args[0]
    assert call.op.name == "pair"
    from tilefoundry.ir.tensor_type import TupleType

    assert isinstance(call.type, TupleType)


def test_4_2_nested_meshes_compose_and_sugar_factorizes(program):
    p = program(mod(topo='(Topology("cta", 8), Topology("thread", 128))') + '''
    @func
    def f(x: Tensor[(8, 2048), "f32"]):
        with Mesh(("cta",), (8,), ("row",)) as g:
            with Mesh(("thread",), layout=(4, 32), names=("w", "l")) as t:
                return tf.reshard(x, (8 @ g.row, 2048 @ (t.w, t.l)), "rmem")
''')
    _, fn = p.load("M")
    layout = fn.body.type.layout
    assert layout.layout.shape == (8, 4, 32, 16) and layout.layout.strides is not None
    assert [t.name for t in layout.mesh.topologies] == ["cta", "thread"]
    assert layout.mesh.names == ("row", "w", "l")
    assert repr(layout.attrs) == "(S(0), S(1), S(2))"
    from tilefoundry.ir.metadata import ExecutionDomainMetadata

    domain = fn.body.get_metadata(ExecutionDomainMetadata)
    assert len(domain.scopes) == 2


def test_4_4_sugar_canonical_factorization_and_partial_set(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(128, 64), "f32"]):
        with Mesh(("cta",), (4,), ("c",)) as m:
            a = tf.reshard(x, (128 @ m.c, 64), "smem")
            b = tf.reshard(x, ((128, 64), (64, 1), {m.c @ P("sum")}), "gmem")
            return a, b
''')
    _, fn = p.load("M")
    a, b = fn.body.fields
    assert a.op.layout.layout.shape == (4, 32, 64) and a.op.layout.layout.strides is None
    assert repr(b.op.layout.attrs) == '(P("sum"),)' and b.op.layout.layout.strides == (64, 1)


def test_4_2_sliced_mesh_scope(program):
    p = program(mod(topo='(Topology("cta", 6),)') + '''
    @func
    def f(x: Tensor[(64, 8), "f32"]):
        with Mesh(("cta",), (6,), ("u",)) as g:
            with g[:4] as left:
                return tf.reshard(x, (64 @ left.u, 8), "gmem")
''')
    _, fn = p.load("M")
    mesh = fn.body.op.layout.mesh
    assert mesh.is_sliced and mesh.shape == (4,)


@pytest.mark.parametrize("head, scope", [
    ("", 'Mesh(("cta",), (6,), ("u",))[:4]'),  # sliced where it is written
    ('WHOLE = Mesh(("cta",), (6,), ("u",))\n', "WHOLE[:4]"),  # built at module level
    ('LEFT = Mesh(("cta",), (6,), ("u",))[:4]\n', "LEFT"),
])
def test_4_2_a_mesh_built_outside_the_body_takes_the_declared_levels(program, head, scope):
    """A Mesh evaluated as Python (an inline slice, a module-level value) names
    its levels as strings; in a `with` they are the module's declared
    Topologies, as for `with Mesh(...)` (was an internal AttributeError)."""
    p = program(head + mod(topo='(Topology("cta", 6),)') + f'''
    @func
    def f(x: Tensor[(64, 8), "f32"]):
        with {scope} as left:
            return tf.reshard(x, (64 @ left.u, 8), "gmem")
''')
    module, fn = p.load("M")
    mesh = fn.body.op.layout.mesh
    assert mesh.is_sliced and mesh.shape == (4,)
    from tilefoundry.api import analyze
    from tilefoundry.ir.shard import Topology

    assert mesh.topologies == (Topology("cta", 6),)

    assert "memory" in analyze(module, families=("memory",)).summary()  # analysed, not crashed


def test_4_2_a_mesh_built_outside_the_body_names_only_declared_levels(program):
    p = program('WHOLE = Mesh(("thread",), (6,), ("u",))\n' + mod(topo='(Topology("cta", 6),)') + '''
    @func
    def f(x: Tensor[(64, 8), "f32"]):
        with WHOLE as left:
            return tf.reshard(x, (64 @ left.u, 8), "gmem")
''')
    with pytest.raises(Exception, match="topology 'thread' is not declared .* available levels: \\['cta'\\]"):
        p.load("M")


def test_4_5_mesh_coordinate_as_value(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(64, 8), "f32"]):
        with Mesh(("cta",), (4,), ("c",)) as m:
            base = m.c * 16
            return x[base:base + 16, :]
''')
    _, fn = p.load("M")
    assert fn.body.type.shape == (16, 8)


def test_5_8_call_metadata(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]):
        with Mesh(("cta",), (4,), ("c",)) as m:
            y = tf.exp(x)
            return y
''')
    _, fn = p.load("M")
    from tilefoundry.ir.metadata import BindingMetadata, ExecutionDomainMetadata, SourceSpanMetadata

    span = fn.body.get_metadata(SourceSpanMetadata)
    assert f"{span.file}:{span.line}:{span.column}" == p.locate("tf.exp")
    assert fn.body.get_metadata(BindingMetadata).name == "y"
    assert fn.body.get_metadata(ExecutionDomainMetadata).scopes[0].names == ("c",)


def test_6_1_calling_convention_positional_and_keywords(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]):
        a = tf.reduce(x, (-1,), True, ReduceKind.SUM)
        b = tf.reduce(x, axes=(0,), kind="max", keepdim=False)
        c = tf.concat(x, x, axis=0)
        return a, b, c
''')
    _, fn = p.load("M")
    a, b, c = fn.body.fields
    assert a.type.shape == (4, 1) and b.type.shape == (8,) and c.type.shape == (8, 8)


def test_2_8_child_module_call_fills_weights(program):
    p = program('''
@module(entry="scale")
class Leaf:
    @func
    def scale(x: Tensor[(8,), "f32"], s: ConstTensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return x * s

@module(entry="run", target=CudaTarget("nvidia.h200_sxm"))
class Root:
    leaf = Leaf
    layers = tuple(Leaf.renamed(f"layer{i}") for i in range(2))

    @func
    def run(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return leaf(x)

    def forward(self, x):
        return x
''')
    module, fn = p.load("Root")
    assert [m.name for m in module.modules] == ["leaf", "layer0", "layer1"]
    assert "forward" in module.methods
    args = fn.body.args
    assert len(args) == 2 and args[1].is_const and args[1].name == "s"
    assert module.child("leaf").owner is module


def test_2_3_func_with_target_is_a_module(program):
    p = program('''
@func(target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 2),))
def solo(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
    with Mesh(("cta",), (2,), ("u",)) as g:
        return tf.reshard(x, (8 @ g.u,), "gmem")
''')
    module, fn = p.load("solo")
    assert module.name == "solo" and module.entry == "solo" and fn.name == "solo"


def test_3_4_where_annotation_attaches_record(program):
    p = program(mod() + '''
    @func
    def f(x: Tensor[(8, 64), "f32"]):
        n = 8
        y: where(layout=((n @ cta, _), {thread @ B()}), storage="rmem") = tf.exp(x)
        return y
''')
    _, fn = p.load("M")
    from tilefoundry.ir.core.constraints import WhereMetadata

    record = fn.body.get_metadata(WhereMetadata)
    assert record.layout == ((8, "cta"), None) and record.bindings == (("thread", "B"),)
    assert str(record.storage) == "rmem"


def test_2_5_variants_partition_and_converter(program):
    p = program('''
S = DimVar("s", 1, 100)
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(x: Tensor[(S, 4), "f32"], w: ConstTensor[(4,), "f32"]) -> Tensor[(S, 4), "f32"]:
        pass

    @f.specialize(DimVarRangePat("s", 1, 50))
    def small(x: Tensor[(S, 4), "f32"], w: ConstTensor[(4,), "f32"]) -> Tensor[(S, 4), "f32"]:
        return x * w

    @f.specialize(DimVarRangePat("s", 50, 100))
    def big(x: Tensor[(S, 4), "f32"], w: ConstTensor[(4,), "f32"]) -> Tensor[(S, 4), "f32"]:
        return x + w

    @f.converter("w")
    def _(raw: Tensor[(4,), "bf16"]) -> Tensor[(4,), "f32"]:
        return tf.cast(raw, "f32")
''')
    module, fn = p.load("M")
    assert [f.name for f in module.functions] == ["f"]
    assert [(pat.lo, pat.hi, v.name, v.label) for pat, v in fn.variants] == [(1, 50, "f", "small"), (50, 100, "f", "big")]
    assert fn.converters["w"].name == "f.converter[w]"
    assert fn.is_prototype and fn.sealed


def test_2_9_factory_and_nested_module_inherit_topologies(program):
    p = program('''
def build(width):
    W = DimVar("w", 1, 2 * width)

    @module(entry="run", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4),))
    class Root:
        @module
        class inner:
            @func
            def act(x: Tensor[(W, width), "f32"]) -> Tensor[(W, width), "f32"]:
                with Mesh(("cta",), (4,), ("c",)) as m:
                    return tf.reshard(x, (W, width @ m.c), "gmem")

        @func
        def run(x: Tensor[(W, width), "f32"]) -> Tensor[(W, width), "f32"]:
            return x * 2.0

    return Root

Built = build(8)
''')
    module, fn = p.load("Built")
    child = module.child("inner")
    assert child is not None and child.owner is module
    act = child.functions[0]
    assert act.body.op.layout.layout.shape[-2:] == (4, 2)
    assert fn.params[0].type.shape[1] == 8
