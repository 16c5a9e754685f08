"""issue 21 item 4: every ``file:line:col`` is the file's own line and 1-based
column (in characters, as an editor, Python's SyntaxError and every compiler
count it) of the token the message names, class-body indentation included:
the text of the file at that line and column starts with that token. The
invalid programs of the compatibility suite are checked the same way in
test_dsl_loader.py."""
from __future__ import annotations

import re

import pytest

from tilefoundry.errors import TileFoundryError
from tests.dsl.dsl_helpers import HEADER, needs_ops
from tests.golden.golden_runs import text_at

pytestmark = needs_ops

TARGET = 'target=CudaTarget("nvidia.h200_sxm")'

# name -> (program after HEADER, the token the message names, a fragment of the rule)
CASES = {
    "class-body kernel (4 columns)": ('''
@module(entry="f", ''' + TARGET + ''')
class M:
    @func
    def f(a: Tensor[(8,), "bf16"], b: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        return a + b
''', "a + b", "dtype mismatch (bf16 vs f32)"),
    "kernel in a factory's class (8 columns)": ('''
def build():
    @module(entry="f", ''' + TARGET + ''')
    class M:
        @func
        def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
            return tf.addd(x, x)

    return M


M = build()
''', "tf.addd", "unknown Op name 'tf.addd'"),
    "standalone function (0 columns)": ('''
@func(''' + TARGET + ''', topologies=())
def f(x: Tensor[(8, 16), "f32"], y: Tensor[(8, 16), "f32"]) -> Tensor[(8, 16), "f32"]:
    return x @ y
''', "x @ y", "contraction-dim mismatch"),
    # a code position counts UTF-8 bytes (ö and ß are two each), a column characters
    "standalone function, a non-ASCII name before the token": ('''
@func(''' + TARGET + ''', topologies=())
def f(größe: Tensor[(8,), "f32"], b: Tensor[(8,), "bf16"]) -> Tensor[(8,), "f32"]:
    return größe + tf.addd(größe, b)
''', "tf.addd", "unknown Op name 'tf.addd'"),
    "a where(...) field": ('''
@module(entry="f", ''' + TARGET + ''')
class M:
    @func
    def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
        y: where(storage="shared") = tf.relu(x)
        return y
''', '"shared"', "is not a storage token"),
    "a loop statement in a factory's class": ('''
def build():
    @module(entry="f", ''' + TARGET + ''')
    class M:
        @func
        def f(x: Tensor[(8, 4), "f32"]) -> Tensor[(8, 4), "f32"]:
            acc = x
            for i in range(2):
                acc += x
            return acc

    return M


M = build()
''', "acc += x", "augmented assignment"),
    "a class-body member in a factory's class": ('''
def build():
    @module(entry="f", ''' + TARGET + ''')
    class M:
        WIDTH = 8

        @func
        def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
            return x

    return M


M = build()
''', "WIDTH = 8", "member 'WIDTH' is a int"),
    "a dtype evaluated at def time": ('''
def build():
    @module(entry="f", ''' + TARGET + ''')
    class M:
        @func
        def f(x: Tensor[(8,), "bfloat16"]) -> Tensor[(8,), "f32"]:
            return x

    return M


M = build()
''', '"bfloat16"', "DType: unknown value 'bfloat16'"),
}

POSTPONED = ("from __future__ import annotations\n" + HEADER + '''
@module(entry="f", ''' + TARGET + ''')
class M:
    @func
    def f(x: Tensor[(8,), "f32", "shared"]) -> Tensor[(8,), "f32"]:
        return x
''')


def _location(message: str, path) -> str:
    found = re.search(rf"({re.escape(str(path))}:\d+:\d+)", message)
    assert found, message
    return found.group(1)


def _refusal(path) -> str:
    from tilefoundry.dsl.loader import load_selection

    with pytest.raises(TileFoundryError) as info:
        load_selection(f"{path}:M" if "standalone" not in path.stem else f"{path}:f")
    return str(info.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_location_is_the_file_column_of_the_token_named(tmp_path, name):
    source, token, rule = CASES[name]
    path = tmp_path / ("standalone.py" if "standalone" in name else "prog.py")
    path.write_text(HEADER + source, encoding="utf-8")
    message = _refusal(path)
    assert rule in message, message
    where = _location(message, path)
    assert text_at(where, tmp_path).startswith(token), (where, text_at(where, tmp_path))


def test_a_postponed_annotation_names_the_literal_refused(tmp_path):
    """With ``from __future__ import annotations`` the parser reads the
    annotation; its refusal points at the literal, not at ``Tensor``."""
    path = tmp_path / "prog.py"
    path.write_text(POSTPONED, encoding="utf-8")
    message = _refusal(path)
    assert "'shared'" in message, message
    assert text_at(_location(message, path), tmp_path).startswith('"shared"')


def test_a_tab_is_one_column(tmp_path):
    """A tab-indented class body: the column counts each tab as one, as
    Python's SyntaxError and editors' column numbers do."""
    body = ('@module(entry="f", ' + TARGET + ')\nclass M:\n\t@func\n'
            '\tdef f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:\n\t\treturn tf.addd(x, x)\n')
    path = tmp_path / "prog.py"
    path.write_text(HEADER + body, encoding="utf-8")
    where = _location(_refusal(path), path)
    assert where.endswith(":10") and text_at(where, tmp_path).startswith("tf.addd")


def test_a_body_string_less_indented_than_its_def_still_parses(tmp_path):
    """A multi-line string in a kernel may hold a line less indented than the
    def (Python allows it): the kernel is read in place, not dedented, so it
    parses, and the statement after it is located in the file."""
    body = ('@module(entry="f", ' + TARGET + ')\nclass M:\n    @func\n'
            '    def f(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:\n'
            '        y = tf.relu(x, loc="""one\ntwo""")\n'
            '        return tf.addd(y, y)\n')
    path = tmp_path / "prog.py"
    path.write_text(HEADER + body, encoding="utf-8")
    message = _refusal(path)
    assert "cannot parse" not in message, message
    assert text_at(_location(message, path), tmp_path).startswith("tf.addd"), message
