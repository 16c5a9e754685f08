"""issue 21 item 5: a refusal that names something unknown suggests the
nearest real one through the one helper ``errors.did_you_mean``: op names,
dtypes and storages (their common other spellings suggested, never accepted),
targets (``--target`` and ``CudaTarget(...)``), ``--dim`` names, a bare function
selector, mesh axes. Each message is checked whole: stderr is exactly the line.
"""
from __future__ import annotations

import textwrap

import pytest

from tilefoundry.cli.main import main
from tilefoundry.errors import did_you_mean

HEADER = (
    "from tilefoundry import module\n"
    "from tilefoundry.dsl import *\n"
    "from tilefoundry.target import CudaTarget\n"
    "\n"
)
DTYPES = "['bf16', 'bool', 'f16', 'f32', 'f4e2m1', 'f8e8m0', 'fp8e4m3', 'i32', 'i64']"
STORAGES = "['gmem', 'host', 'rmem', 'smem', 'tmem', 'umat']"
TARGETS = "apple.m2_pro, cpu, ibm.spyre_32core, nvidia.b200_sxm, nvidia.h100_sxm, nvidia.h200_sxm"
DEVICES = "['nvidia.b200_sxm', 'nvidia.h100_sxm', 'nvidia.h200_sxm']"


def kernel(body: str, *, args: str = 'x: Tensor[(8,), "f32"]', result: str = 'Tensor[(8,), "f32"]',
           target: str = '"nvidia.h200_sxm"', before: str = "") -> str:
    """A one-kernel Module ``M`` in a class body, the kernel body indented 8."""
    return HEADER + before + textwrap.dedent(f'''\
        @module(entry="f", target=CudaTarget({target}), topologies=(Topology("cta", 4),))
        class M:
            @func
            def f({args}) -> {result}:
        ''') + textwrap.indent(textwrap.dedent(body), " " * 8)


def refused(capsys, monkeypatch, tmp_path, source: str, *argv: str) -> str:
    """The one stderr line of a refused ``tilefoundry`` command on ``prog.py``
    (run from its folder, so the path prints as given)."""
    (tmp_path / "prog.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "", captured
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


# ---------------------------------------------------------------- each kind, the whole line

CASES = {
    "op name": (kernel("return tf.addd(x, x)\n"), ("analyze", "prog.py:M"),
                "tilefoundry: error: prog.py:9:16: unknown Op name 'tf.addd'; did you mean 'tf.add'?"),
    "bare op name": (kernel("return relux(x)\n"), ("analyze", "prog.py:M"),
                     "tilefoundry: error: prog.py:9:16: unknown Op name 'relux'; did you mean 'tf.relu'?"),
    "dtype alias in a signature": (
        kernel("return x\n", args='x: Tensor[(8,), "bfloat16"]'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:8:27: DType: unknown value 'bfloat16'; did you mean 'bf16'? valid: {DTYPES}"),
    "dtype alias of an op attribute": (
        kernel('return tf.cast(x, "float32")\n', args='x: Tensor[(8,), "bf16"]'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:9:27: DType: unknown value 'float32'; did you mean 'f32'? valid: {DTYPES}"),
    "dtype misspelt": (
        kernel("return x\n", args='x: Tensor[(8,), "f8e4m3"]'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:8:27: DType: unknown value 'f8e4m3'; did you mean 'fp8e4m3'? valid: {DTYPES}"),
    "dtype with no counterpart": (
        kernel("return x\n", args='x: Tensor[(8,), "f64"]'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:8:27: DType: unknown value 'f64'; valid: {DTYPES}"),
    "storage alias in a signature": (
        kernel("return x\n", args='x: Tensor[(8,), "f32", "shared"]'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:8:34: storage 'shared' is not one of {STORAGES}; did you mean 'smem'?"),
    "storage alias of an op attribute": (
        kernel('with Mesh(("cta",), (4,), ("r",)) as grid:\n'
               '    y = tf.reshard(x, (8 @ grid.r,), "shared")\n'
               '    return tf.reshard(y, (8,), "gmem")\n'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:10:46: StorageKind: unknown value 'shared'; did you mean 'smem'? "
        f"valid: {STORAGES}"),
    "storage alias in a body annotation": (
        kernel('y = tf.zeros(Tensor[(8,), "f32", "registers"])\nreturn x + y\n'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:9:42: storage 'registers' is not one of {STORAGES}; did you mean 'rmem'?"),
    "storage alias in where(...)": (
        kernel('y: where(storage="global") = tf.relu(x)\nreturn y\n'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:9:26: where(storage=...): 'global' is not a storage token; write one of "
        f"{STORAGES}; did you mean 'gmem'?"),
    "CudaTarget device": (
        kernel("return x\n", target='"h200"'), ("analyze", "prog.py:M"),
        f"tilefoundry: error: prog.py:5:38: CudaTarget: unknown device 'h200'; did you mean 'nvidia.h200_sxm'? "
        f"valid: {DEVICES}"),
    "--target": (kernel("return x\n"), ("analyze", "--target", "h200", "prog.py:M"),
                 f"tilefoundry: error: unknown target 'h200'; did you mean 'nvidia.h200_sxm'? available: {TARGETS}"),
    "--target, another device is no typo fixed": (
        kernel("return x\n"), ("analyze", "--target", "nvidia.a100", "prog.py:M"),
        f"tilefoundry: error: unknown target 'nvidia.a100'; available: {TARGETS}"),
    "--dim name": (
        kernel("return x\n", args='x: Tensor[(CTX,), "f32"]', result='Tensor[(CTX,), "f32"]',
               before='CTX = DimVar("ctx_len", 1, 129)\n'),
        ("analyze", "--dim", "ctxlen=64", "prog.py:M"),
        "tilefoundry: error: analyze: 'f' has no dimension named ['ctxlen']; it states ['ctx_len']; "
        "did you mean 'ctx_len'?"),
    "bare function selector": (
        HEADER + textwrap.dedent('''\
            @module(entry="add2", target=CudaTarget("nvidia.h200_sxm"))
            class Add:
                @func
                def add2(x: Tensor[(8,), "f32"]) -> Tensor[(8,), "f32"]:
                    return x + x
            '''), ("analyze", "prog.py:add2"),
        "tilefoundry: error: selector 'add2' is not defined by the source; it defines the Module Add; "
        "did you mean 'Add.add2'?"),
    "mesh axis": (
        kernel('with Mesh(("cta",), (4,), ("rows",)) as grid:\n'
               '    return tf.reshard(x, (8 @ grid.row,), "gmem")\n'), ("analyze", "prog.py:M"),
        "tilefoundry: error: prog.py:10:39: Mesh has no axis named 'row'; its axes are ['rows']; "
        "did you mean 'rows'?"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_refusal_suggests_the_nearest(name, capsys, monkeypatch, tmp_path):
    source, argv, line = CASES[name]
    assert refused(capsys, monkeypatch, tmp_path, source, *argv) == line


def test_target_show_suggests_the_device_part(capsys):
    code = main(["target", "show", "H200"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines() == [
        f"tilefoundry: error: unknown target 'H200'; did you mean 'nvidia.h200_sxm'? available: {TARGETS}"]


def test_an_alias_is_suggested_never_accepted():
    """The other spellings are refused: a program spells a dtype and a
    storage one way, as every printed type does."""
    from tilefoundry.errors import VerifyError
    from tilefoundry.ir.dtype import resolve_dtype
    from tilefoundry.ir.storage import resolve_storage

    for spelling in ("bfloat16", "float32", "half", "int64"):
        with pytest.raises(VerifyError):
            resolve_dtype(spelling)
    for spelling in ("shared", "global", "registers"):
        with pytest.raises(VerifyError):
            resolve_storage(spelling)


# ---------------------------------------------------------------- the helper's rules

@pytest.mark.parametrize("word, candidates, options, hint", [
    # 1. an alias, without case; one mapped to None suggests nothing
    ("BFloat16", ["bf16", "f32"], {"aliases": {"bfloat16": "bf16"}}, "; did you mean 'bf16'?"),
    ("f64", ["f16", "i64"], {"aliases": {"f64": None}}, ""),
    # 2. the same spelling but for case and separators
    ("CTXLEN", ["ctx_len", "ctx"], {}, "; did you mean 'ctx_len'?"),
    # 3. a unique prefix; an ambiguous one falls through
    ("--comp", ["--compute-cost", "--memory"], {}, "; did you mean '--compute-cost'?"),
    # 4. a unique part the word starts
    ("h200", ["nvidia.h100_sxm", "nvidia.h200_sxm"], {"close": False}, "; did you mean 'nvidia.h200_sxm'?"),
    ("sxm", ["nvidia.h100_sxm", "nvidia.h200_sxm"], {"close": False}, ""),
    # 5. the closest spelling, unless turned off
    ("nvidia.h200_smx", ["nvidia.h100_sxm", "nvidia.h200_sxm"], {}, "; did you mean 'nvidia.h200_sxm'?"),
    ("nvidia.a100", ["nvidia.h100_sxm", "nvidia.h200_sxm"], {"close": False}, ""),
    # the written form of a candidate
    ("addd", ["add", "sub"], {"shown": lambda n: f"tf.{n}"}, "; did you mean 'tf.add'?"),
    ("zzz", ["add", "sub"], {}, ""),
])
def test_did_you_mean_rules(word, candidates, options, hint):
    assert did_you_mean(word, candidates, **options) == hint


def test_a_tuple_given_to_a_variadic_op_names_the_call_form(capsys, monkeypatch, tmp_path):
    """numpy and torch write concat((a, b)); tf.concat takes its inputs as
    separate arguments, and the refusal says so instead of only the type."""
    source = kernel("""\
        with Mesh(("cta",), (4,), ("c",)) as _m:
            return tf.concat((x, x), axis=0)
        """, result='Tensor[(16,), "f32"]')
    line = refused(capsys, monkeypatch, tmp_path, source, "analyze", "prog.py:M")
    assert line.startswith("tilefoundry: error: prog.py:10:20: Concat: input 0 must be a tensor, "
                           "got TupleType (a tuple of 2); tf.concat takes its inputs as separate "
                           "arguments: write tf.concat(a, b, ..., axis=...)")
