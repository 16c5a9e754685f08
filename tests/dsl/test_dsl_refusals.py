"""authoring.md §5.1, §7: every unsupported construct is refused with one line
naming file:line:col and the construct."""
from __future__ import annotations

import pytest

from tilefoundry.errors import TileFoundryError, VerifyError
from tests.dsl.dsl_helpers import needs_ops

pytestmark = needs_ops

HEAD = '@module(entry="f", target=CudaTarget("nvidia.h200_sxm"), topologies=(Topology("cta", 4), Topology("thread", 64)))\nclass M:\n    @func\n    def f(x: Tensor[(64, 8), "f32"]) -> Tensor[(64, 8), "f32"]:\n'


def body(text: str) -> str:
    return HEAD + "".join("        " + line + "\n" for line in text.strip("\n").splitlines())


CASES = [
    # (id, body, needle located, message fragment)
    ("while", "while True:\n    x = x\nreturn x", "while", "While"),
    ("if", "if True:\n    x = x\nreturn x", "if True", "If"),
    ("try", "try:\n    x = x\nexcept Exception:\n    pass\nreturn x", "try", "Try"),
    ("nested_def", "def g(y):\n    return y\nreturn x", "def g", "nested def"),
    ("augassign", "x += x\nreturn x", "x += x", "augmented assignment"),
    ("docstring", '"""doc"""\nreturn x', '"""doc"""', "docstring"),
    ("bare_expr", "tf.exp(x)\nreturn x", "tf.exp(x)", "bare expression"),
    ("lambda", "y = lambda: x\nreturn x", "lambda", "lambda"),
    ("setcomp", "y = {x for i in range(2)}\nreturn x", "{x for", "set comprehension"),
    ("listcomp_in_arg", "return tf.concat([x for i in range(2)], axis=0)", "[x for", "list comprehension"),
    ("list_arg", "return tf.concat([x, x], axis=0)", "[x, x]", "list literal"),
    ("multi_target", "y = z = x\nreturn x", "y = z", "multi-target"),
    ("attr_target", "x.y = x\nreturn x", "x.y", "attribute"),
    ("return_none", "return", "return", "needs a value"),
    ("unknown_op", "return tf.frobnicate(x)", "tf.frobnicate", "unknown Op name 'tf.frobnicate'"),
    ("unknown_call", "return math.sqrt(x)", "math.sqrt", "unknown Op name 'math.sqrt'"),
    ("chained", "return tf.cast(0 < x < 1, 'f32')", "0 < x", "chained comparisons"),
    ("pow", "return x ** 2", "x ** 2", "operator **"),
    ("bitwise", "return x | x", "x | x", "BitOr"),
    ("uplus", "return +x", "+x", "unary +"),
    ("string_literal", "return x + 'a'", "'a'", "unsupported literal type str"),
    ("with_non_mesh", "with open('f') as h:\n    return x", "with", "non-Mesh"),
    ("mesh_bare_string", "with Mesh('cta', (4,)) as m:\n    return x", "'cta'", "tuple"),
    ("mesh_topology_kw", "with Mesh(topologies=('cta',), layout=(4,)) as m:\n    return x", "('cta',)", "topologies="),
    ("mesh_undeclared", "with Mesh(('warp',), (4,)) as m:\n    return x", "'warp'", "topology 'warp' is not declared"),
    ("mesh_straddle", "with Mesh(('cta', 'thread'), (8, 32)) as m:\n    return x", "Mesh((", "do not land on the boundary of level 'cta'"),
    ("with_in_loop", "for i in range(2):\n    with Mesh(('cta',), (4,)) as m:\n        x = x\nreturn x", "with", "inside a loop body"),
    ("loop_return", "for i in range(2):\n    return x\nreturn x", "return x", "tile-for body" if False else "range-for body"),
    ("tile_one_arg", "for i in tile(64):\n    x = x\nreturn x", "tile(64)", "exactly two arguments"),
    ("loop_iter", "for i in [1, 2]:\n    x = x\nreturn x", "[1, 2]", "tile(extent, step) or range"),
    ("tile_outside_loop", "return tile(4, 2)", "tile(4, 2)", "iterator of a `for` loop"),
    ("subscript_rank", "return x[0]", "x[0]", "one indexer per axis"),
    ("subscript_ellipsis", "return x[..., 0]", "...", "`...`"),
    ("index_range", "return x[64, :]", "x[64", "out of range"),
    ("sugar_not_multiple", "with Mesh(('cta',), (4,), ('c',)) as m:\n    return tf.reshard(x, (63 @ m.c, 8), 'gmem')", "(63 @", "not a multiple"),
    ("sugar_no_mesh", "return tf.reshard(x, (64, 8), 'gmem')", "tf.reshard", "names no mesh"),
    ("unknown_attr", "return tf.exp(x, axis=1)", "1)", "unknown attribute 'axis'"),
    ("input_kw", "return tf.exp(x=x)", "x)", "positionally"),
    ("missing_attr", "return tf.softmax(x)", "tf.softmax", "missing attribute(s) ['axis']"),
    ("bad_enum", "return tf.reduce(x, (0,), True, 'avg')", "tf.reduce", "unknown value 'avg'"),
    ("pass_mixed", "pass\nreturn x", "pass", "entire body"),
    ("where_bad_head", "y: int = x\nreturn x", "int", "only `where(...)`"),
    ("where_bad_field", "y: where(speed=1) = x\nreturn x", "where(", "unknown field 'speed'"),
    ("tuple_unpack_tensor", "a, b = x\nreturn x", "a, b", "tuple-typed"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_5_1_refused_construct_names_location(program, case):
    _, text, needle, fragment = case
    p = program(body(text))
    with pytest.raises(TileFoundryError) as info:
        p.load("M")
    message = str(info.value)
    assert "\n" not in message, message
    assert fragment in message, message
    line = p.locate(needle.rstrip("\n"), after=8).rsplit(":", 2)[1]
    assert message.startswith(f"{p.path}:{line}:"), message


def test_2_4_unannotated_param(program):
    p = program('''
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(x):
        return x
''')
    with pytest.raises(VerifyError) as info:
        p.load("M")
    assert str(info.value) == f"{p.locate('x):')}: @tilefoundry.func param 'x' must be annotated"


def test_3_3_inconsistent_dimvar_bounds(program):
    p = program('''
@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def f(x: Tensor[(DimVar("n", 1, 9),), "f32"], y: Tensor[(DimVar("n", 1, 5),), "f32"]):
        return x
''')
    with pytest.raises(VerifyError, match="inconsistent DimVar bounds for 'n'"):
        p.load("M")


def test_2_7_forward_sibling_is_unknown(program):
    p = program('''
@module(entry="outer", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def outer(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return inner(x)

    @func
    def inner(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x
''')
    with pytest.raises(VerifyError) as info:
        p.load("M")
    assert str(info.value) == f"{p.locate('inner(x)')}: unknown Op name 'inner'"


def test_2_8_call_arity_and_keywords(program):
    p = program('''
@module(entry="g", target=CudaTarget("nvidia.h200_sxm"))
class M:
    @func
    def h(x: Tensor[(4,), "f32"], w: ConstTensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return x * w

    @func
    def g(x: Tensor[(4,), "f32"]) -> Tensor[(4,), "f32"]:
        return h(x)
''')
    with pytest.raises(VerifyError, match="'h' takes 2 argument"):
        p.load("M")


def test_2_8_child_module_activation_count(program):
    p = program('''
@module(entry="scale")
class Leaf:
    @func
    def scale(x: Tensor[(8,), "f32"], s: ConstTensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return x * s

@module(entry="run", target=CudaTarget("nvidia.h200_sxm"))
class Root:
    leaf = Leaf

    @func
    def run(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return leaf(x, x)
''')
    with pytest.raises(VerifyError, match=r"takes 1 activation\(s\)"):
        p.load("Root")


def test_2_8_module_not_attached(program):
    p = program('''
@module(entry="scale")
class Leaf:
    @func
    def scale(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return x

@module(entry="run", target=CudaTarget("nvidia.h200_sxm"))
class Root:
    @func
    def run(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return Leaf(x)
''')
    with pytest.raises(VerifyError, match="not attached in this class body"):
        p.load("Root")
