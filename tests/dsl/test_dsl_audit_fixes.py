"""Audit of authoring.md §2.2, §2.4, §2.7, §2.8, §5.6: constructs that were
silently mis-read, or refused without a location, before the audit pass."""
from __future__ import annotations

import pytest

from tilefoundry.errors import TileFoundryError
from tests.dsl.dsl_helpers import calls, needs_ops

pytestmark = needs_ops

MOD = '@module(entry="f", target=CudaTarget("nvidia.h200_sxm"))\nclass M:\n'


def refusal(p, selector="M") -> str:
    with pytest.raises(TileFoundryError) as info:
        p.load(selector)
    message = str(info.value)
    assert "\n" not in message, message
    return message


# ---------------------------------------------------------------- §5.6 loops


def test_authoring_5_6_number_rebound_in_loop_is_refused_not_lost(program):
    # ref: `s` is not carried and the loop's work is silently dropped (s == 0.0)
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        s = 0.0
        for i in range(3):
            s = s + x
        return s
''')
    message = refusal(p)
    assert message.startswith(p.locate("for i in range(3)").rsplit(":", 1)[0] + ":")
    assert "'s' is the compile-time value 0.0 before the loop" in message and "tf.full_like" in message


def test_authoring_5_6_list_rebound_in_loop_is_refused(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        xs = [x, x]
        for i in range(3):
            xs = [xs[1], xs[0] + x]
        return xs[0]
''')
    assert "'xs' is a list before the loop" in refusal(p)


def test_authoring_5_6_body_local_read_after_loop_names_the_loop(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        for i in range(3):
            h = x * 2.0
        return h
''')
    message = refusal(p)
    line = p.locate("for i in range(3)").split(":")[-2]
    ret_line, ret_col = p.locate("return h").rsplit(":", 2)[1:]
    assert message.startswith(f"{p}:{ret_line}:{int(ret_col) + len('return ')}: "), message
    assert f"'h' is bound only inside the loop of line {line}" in message


def test_authoring_5_6_loop_variable_read_after_loop_is_refused(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]):
        y = x
        for i in range(3):
            y = y + 1.0
        return y, i
''')
    assert "'i' is the loop variable of line" in refusal(p)


def test_authoring_5_6_loop_local_does_not_fall_back_to_a_global(program):
    # a global of the same name must not stand in for the body-local value
    p = program('h = 3.0\n' + MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        for i in range(3):
            h = x * 2.0
        return x * h
''')
    assert "'h' is bound only inside the loop" in refusal(p)


def test_authoring_5_6_compile_time_value_bound_in_loop_survives(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        acc = x
        for i in range(3):
            half = 8 // 2
            acc = acc + 1.0
        return tf.reshape(acc, (half, 8))
''')
    _, fn = p.load("M")
    assert fn.body.op.new_shape == (4, 8)


def test_authoring_5_6_tuple_rebinding_in_loop_is_carried(program):
    # ref: a name rebound only through tuple unpacking is not carried (result lost)
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]):
        a = x
        b = x * 2.0
        for i in range(3):
            a, b = b, a + b
        return a, b
''')
    _, fn = p.load("M")
    loop = fn.body.fields[0].args[0]
    assert type(loop).__name__ == "GridRegionExpr"
    assert [v.name for v in loop.carried] == ["a", "b"]
    assert loop.yields[0] is loop.carried[1]  # a <- b
    assert str(loop.yields[1].op.kind.value) == "add"


def test_authoring_5_6_carry_changing_type_is_refused_at_the_loop(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        a = x
        for i in range(3):
            a = tf.cast(a, "bf16")
        return a
''')
    message = refusal(p)
    assert message.startswith(p.locate("for i in range(3)").rsplit(":", 1)[0] + ":")
    assert "'a' enters the loop as f32[4, 8] in gmem but the body rebinds it to bf16[4, 8]" in message


# ---------------------------------------------------------------- §2.8 calls


def test_authoring_2_8_child_member_by_attribute_is_refused(program):
    p = program('''
@module(entry="g")
class Inner:
    @func
    def g(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        return x
''' + MOD + '''
    inner = Inner

    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        return inner.g(x)
''')
    message = refusal(p)
    assert message.startswith(p.locate("inner.g(x)").rsplit(":", 1)[0])
    assert "by attribute (`inner.g(...)`) is refused" in message and "`inner(...)`" in message


# ---------------------------------------------------------------- §2.4 parameters


def test_authoring_2_4_parameter_defaults_are_ignored(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"], y: Tensor[(4, 8), "f32"] = None) -> Tensor[(4, 8), "f32"]:
        return x + y
''')
    _, fn = p.load("M")
    assert [v.name for v in fn.params] == ["x", "y"] and fn.body.op.kind.value == "add"


def test_authoring_2_4_keyword_only_parameter_is_refused(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"], *, y: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        return x
''')
    assert "parameter 'y': only plain positional parameters are read" in refusal(p)


# ---------------------------------------------------------------- §2.2 members


@pytest.mark.parametrize("member, line_text, kind", [
    ("    N = 4\n", "N = 4", "int"),
    ("    @staticmethod\n    def helper():\n        return 1\n", "def helper", "staticmethod"),
    ("    name: str = 'x'\n", "name: str", "str"),
])
def test_authoring_2_2_stray_member_names_its_line_and_column(program, member, line_text, kind):
    p = program(MOD + member + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        return x
''')
    message = refusal(p)
    where = p.locate(line_text)
    line, col = where.rsplit(":", 2)[1:]
    assert message.startswith(f"{p}:{line}:{col}: TypeError: Module 'M': member"), message
    assert f"is a {kind}" in message


# ---------------------------------------------------------------- §2.7 name resolution


def test_authoring_2_7_star_import_global_hiding_a_factory_local_is_explained(program):
    # §2.7: module globals are read before factory locals, so the star-imported
    # builder `S` (not the DimVar) is what the annotation reads
    p = program('''
def build():
    S = DimVar("seq", 1, 9)

    @module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
    class M:
        @func
        def f(x: Tensor[(S, 16), "f32"]) -> Tensor[(S, 16), "f32"]:
            return x

    return M


Model = build()
''')
    message = refusal(p, "Model")
    assert message.startswith(p.locate("S, 16").rsplit(":", 1)[0])
    assert "'S' reads the module global S" in message and "authoring §2.7" in message


def test_authoring_2_7_closure_cell_wins_over_global(program):
    # a factory local the body itself reads is a closure cell: it wins over the global
    p = program('''
B = "not a number"


def build():
    B = 4

    @module(entry="f", target=CudaTarget("nvidia.h200_sxm"))
    class M:
        @func
        def f(x: Tensor[(4, 16), "f32"]) -> Tensor[(4, 16), "f32"]:
            return tf.reshape(x, (B, 16))

    return M


Model = build()
''')
    _, fn = p.load("Model")
    assert fn.body.op.new_shape == (4, 16)
    assert len(calls(fn.body)) == 1


# ---------------------------------------------------------------- §2.10 loading


def test_authoring_2_10_root_built_from_a_failed_class_reports_the_real_refusal(program):
    # `Root = replace(Root0, ...)` after `class Root0` was refused: the NameError
    # for Root0 must not hide why Root0 failed
    p = program('import dataclasses\nfrom tilefoundry.target import CpuTarget\n' + MOD.replace("class M:", "class M0:") + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        return no_such_helper(x)


M = dataclasses.replace(M0, target=CpuTarget())
''')
    message = refusal(p)
    assert message == f"{p.locate('no_such_helper(x)')}: unknown Op name 'no_such_helper'", message


# ---------------------------------------------------------------- §1.1 import surface


def test_authoring_1_1_evaluator_to_torch_dtype_imports_without_torch():
    from tilefoundry.evaluator import to_torch_dtype
    from tilefoundry.evaluator.value import to_torch_dtype as same
    from tilefoundry.ir.types import DType

    assert to_torch_dtype is same
    try:
        import torch
    except ModuleNotFoundError:
        with pytest.raises(ModuleNotFoundError, match=r"to_torch_dtype\(bf16\) needs torch"):
            to_torch_dtype(DType.from_name("bf16"))
    else:
        assert to_torch_dtype(DType.from_name("bf16")) is torch.bfloat16


def test_authoring_5_2_list_indexed_by_a_loop_variable_is_refused_as_runtime(program):
    p = program(MOD + '''
    @func
    def f(x: Tensor[(4, 8), "f32"]) -> Tensor[(4, 8), "f32"]:
        xs = [x, x * 2.0]
        acc = x
        for i in range(2):
            acc = acc + xs[i]
        return acc
''')
    message = refusal(p)
    line, col = p.locate("xs[i]").rsplit(":", 2)[1:]
    assert message.startswith(f"{p}:{line}:{int(col) + 3}: a list is indexed at authoring time: `i` is a runtime value")
