"""Programs of a size a whole model reaches, written as text: a chain of
dependent statements, a chain of calls between sibling functions, and a chain
of nested child Modules. Used by the tests and by bench/large_programs.py."""
from __future__ import annotations

HEAD = """from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

TARGET = CudaTarget("nvidia.h200_sxm")
LEVELS = (Topology("cta", 4),)
"""
SIGNATURE = 'x: Tensor[(16, 64), "f32"]'
RESULT = 'Tensor[(16, 64), "f32"]'
MESH = 'with Mesh(("cta",), (4,), ("b",)) as m:'


def statement_chain(statements: int) -> str:
    """One function of ``statements`` statements, each reading the one before."""
    lines = [HEAD, '@module(entry="f", target=TARGET, topologies=LEVELS)', "class Chain:",
             "    @func", f"    def f({SIGNATURE}) -> {RESULT}:", f"        {MESH}",
             '            v0 = tf.reshard(x, (16 @ m.b, 64), "rmem")']
    lines += [f"            v{i} = v{i - 1} * 0.5 + v0" for i in range(1, statements)]
    lines.append(f'            return tf.reshard(v{statements - 1}, (16 @ m.b, 64), "gmem")')
    return "\n".join(lines) + "\n"


def call_chain(depth: int) -> str:
    """Sibling functions f0 .. f<depth>, each calling the one before."""
    lines = [HEAD, f'@module(entry="f{depth}", target=TARGET, topologies=LEVELS)', "class Calls:",
             "    @func", f"    def f0({SIGNATURE}) -> {RESULT}:", f"        {MESH}",
             "            return x + x"]
    for i in range(1, depth + 1):
        lines += ["    @func", f"    def f{i}({SIGNATURE}) -> {RESULT}:", f"        y = f{i - 1}(x)",
                  f"        {MESH}", "            return y + x"]
    return "\n".join(lines) + "\n"


def module_chain(depth: int) -> str:
    """Modules M0 .. M<depth>, each holding the one before as its child (under
    the child's own name, so attaching it copies nothing) and calling it; each
    declares a weight, promoted through every level."""
    weight = 'w: ConstTensor[(16, 64), "f32"]'
    lines = [HEAD, '@module(entry="f", topologies=LEVELS)', "class M0:", "    @func",
             f"    def f({SIGNATURE}, {weight}) -> {RESULT}:", f"        {MESH}",
             "            return x * w", ""]
    for i in range(1, depth + 1):
        target = "target=TARGET, " if i == depth else ""
        lines += [f'@module(entry="f", {target}topologies=LEVELS)', f"class M{i}:",
                  f"    M{i - 1} = M{i - 1}", "    @func", f"    def f({SIGNATURE}, {weight}) -> {RESULT}:",
                  f"        y = M{i - 1}(x)", f"        {MESH}", "            return y + w", ""]
    return "\n".join(lines) + "\n"
