"""Issue 11, "Robustness under hostile input": every failure kind the hostile
campaign found, reproduced, and the promise it broke: one clear stderr line
(``file:line:col`` where the input has lines), exit 1 for a rejected input and
2 for a malformed command line, no traceback, no hang; or, for the form feed
and U+2028 in a comment, acceptance. Each input is derived from a golden
program or fixture by the one mutation the issue names.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tilefoundry.cli.main import main

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "data" / "programs"
KTIR = REPO / "tests" / "data" / "intertile" / "examples" / "e01_shared_sources_identical.mlir"
E03 = REPO / "tests" / "data" / "intertile" / "examples" / "e03_receiving_only_odd_sources.mlir"
S74 = REPO / "examples" / "relayout_s74.json"
P01 = (PROGRAMS / "p01_rownorm_mesh.py").read_text()
EPS_LINE = "EPS = 1e-5"  # line 15 of p01: the statement every loader mutation replaces
EPS_LINENO = P01.splitlines().index(EPS_LINE) + 1


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(capsys, argv, code: int = 1, pattern: str = "") -> str:
    """Exit ``code``, one stderr line matching ``pattern``, no internal error."""
    got, _, err = run(capsys, *argv)
    lines = err.splitlines()
    assert got == code and len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


def p01_with(tmp_path, old: str, new: str, name: str = "prog.py") -> str:
    assert old in P01
    (tmp_path / name).write_bytes(P01.replace(old, new).encode("utf-8", "surrogateescape"))
    return name


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


# ------------------------------------------------------------------ loader

@pytest.mark.parametrize("selector", ["", ":RowNormTiles"])
def test_loader_repeated_keyword_is_a_located_syntax_error_with_or_without_selector(
        tmp_path, capsys, selector):
    name = p01_with(tmp_path, EPS_LINE, "EPS = dict(a=1, a=2)")
    refused(capsys, ["analyze", name + selector],
            pattern=rf"^tilefoundry: error: prog\.py:{EPS_LINENO}:\d+: SyntaxError: keyword argument repeated")


@pytest.mark.parametrize("depth", [1000, 20000])
@pytest.mark.parametrize("selector", ["", ":RowNormTiles"])
def test_loader_deep_nesting_is_refused_by_the_stated_limit(tmp_path, capsys, depth, selector):
    name = p01_with(tmp_path, EPS_LINE, "EPS = " + "-" * depth + "1")
    refused(capsys, ["analyze", name + selector],
            pattern=rf"prog\.py:{EPS_LINENO}:\d+: the code nests too deeply \(limit 200 levels "
                    r"of nesting\); raise the limit with TILEFOUNDRY_MAX_NESTING=N")


def test_loader_nesting_limit_is_the_one_in_force(tmp_path, capsys, monkeypatch):
    # 150 unary minuses sit under the default limit and over a limit of 100
    name = p01_with(tmp_path, EPS_LINE, "EPS = " + "-" * 150 + "1e-5")
    assert run(capsys, "analyze", name)[0] == 0
    monkeypatch.setenv("TILEFOUNDRY_MAX_NESTING", "100")
    refused(capsys, ["analyze", name], pattern=r"limit 100 levels")


def test_loader_nul_byte_names_its_line_and_column(tmp_path, capsys):
    name = p01_with(tmp_path, EPS_LINE, "EPS = 1e-5\0")
    col = len("EPS = 1e-5") + 1
    refused(capsys, ["analyze", name],
            pattern=rf"^tilefoundry: error: prog\.py:{EPS_LINENO}:{col}: the file holds a NUL")


def test_loader_invalid_utf8_names_the_relative_path_line_and_column(tmp_path, capsys):
    name = p01_with(tmp_path, EPS_LINE, "EPS = 1e-5  # \udcff")
    col = len("EPS = 1e-5  # ") + 1
    line = refused(capsys, ["analyze", name],
                   pattern=rf"^tilefoundry: error: prog\.py:{EPS_LINENO}:{col}: byte 0xff is not UTF-8")
    assert str(tmp_path) not in line


@pytest.mark.parametrize("separator", ["\f", "\u2028", "\u2029", "\x1c", "\x85"])
def test_loader_accepts_line_separators_inside_a_comment(tmp_path, capsys, separator):
    name = p01_with(tmp_path, EPS_LINE, f"EPS = 1e-5  # a{separator}b")
    expected = run(capsys, "analyze", PROGRAMS / "p01_rownorm_mesh.py")[1]
    code, out, err = run(capsys, "analyze", name)
    assert (code, err) == (0, "")
    assert out == expected


def test_loader_accepts_a_utf8_byte_order_mark_as_python_does(tmp_path, capsys):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + P01.encode())
    expected = run(capsys, "analyze", PROGRAMS / "p01_rownorm_mesh.py")[1]
    assert run(capsys, "analyze", "bom.py") == (0, expected, "")


@pytest.mark.parametrize("statement, shown", [
    ("import sys; sys.exit(3)", r"SystemExit\(3\)"),
    ("raise SystemExit", r"SystemExit"),
    ("raise KeyboardInterrupt", r"KeyboardInterrupt"),
])
@pytest.mark.parametrize("selector", ["", ":RowNormTiles"])
def test_loader_program_that_stops_itself_is_refused_with_the_exception_and_line(
        tmp_path, capsys, statement, shown, selector):
    name = p01_with(tmp_path, EPS_LINE, f"{EPS_LINE}\n{statement}")
    refused(capsys, ["analyze", name + selector],
            pattern=rf"prog\.py:{EPS_LINENO + 1}:\d+: the program raised {shown} while loading")


@pytest.mark.parametrize("old, new, rule", [
    ('with Mesh(("thread",), (WARPS, LANES), ("warp", "lane")) as lanes:',
     'with Mesh(("thread",), (0, LANES), ("warp", "lane")) as lanes:',
     r"Mesh: axis extent 0 must be a positive int"),
    ('Topology("cta", ROWS)', 'Topology("cta", 8.0)',
     r"Topology 'cta': size must be an int or a DimVar expression, got 8\.0 \(float\)"),
])
def test_rule_messages_not_python_errors(tmp_path, capsys, old, new, rule):
    name = p01_with(tmp_path, old, new)
    line = refused(capsys, ["analyze", name], pattern=rf"prog\.py:\d+:\d+: {rule}")
    assert "--dim" not in line
    assert not re.search(r"(ZeroDivision|Value|Attribute|Type)Error", line)


def test_negative_mesh_size_then_slicing_is_a_rule_message(tmp_path, capsys):
    text = (PROGRAMS / "p16_standalone_sliced_mesh.py").read_text()
    old = 'with Mesh(("cta",), (CTAS,), ("u",)) as grid:'
    (tmp_path / "p.py").write_text(text.replace(old, 'with Mesh(("cta",), (-6,), ("u",)) as grid:'))
    line = refused(capsys, ["analyze", "p.py"],
                   pattern=r"p\.py:\d+:\d+: Mesh: axis extent -6 must be a positive int")
    assert "ValueError" not in line


def test_two_stacked_specialize_decorators_are_refused_by_rule(tmp_path, capsys):
    text = (PROGRAMS / "p11_seq_variants.py").read_text()
    decorator = '    @pool.specialize(DimVarRangePat("seq", SHORT, SEQ_HI))\n'
    stacked = decorator + '    @pool.specialize(DimVarRangePat("seq", SHORT, 300))\n'
    (tmp_path / "p.py").write_text(text.replace(decorator, stacked))
    line = refused(capsys, ["analyze", "p.py"],
                   pattern=r"p\.py:\d+:\d+: this def is already a variant of 'pool'")
    assert "AttributeError" not in line


# -------------------------------------------------------------------- KTIR

def test_ktir_invalid_utf8_names_line_and_column(tmp_path, capsys):
    text = KTIR.read_text().replace("// e01", "// e01 \udcff", 1)
    (tmp_path / "k.mlir").write_bytes(text.encode("utf-8", "surrogateescape"))
    refused(capsys, ["intertile", "verify", "k.mlir"],
            pattern=r"^tilefoundry: error: k\.mlir:1:8: byte 0xff is not UTF-8")


@pytest.mark.parametrize("nested", ["(" * 5000 + "-g + 1" + ")" * 5000, "- " * 5000 + "g + 1"])
def test_ktir_deep_nesting_in_an_affine_set_is_refused_by_the_limit(tmp_path, capsys, nested):
    text = KTIR.read_text().replace("(g >= 0, -g + 1 >= 0)", f"(g >= 0, {nested} >= 0)")
    (tmp_path / "k.mlir").write_text(text)
    refused(capsys, ["intertile", "verify", "k.mlir"],
            pattern=r"k\.mlir:\d+:\d+: the expression nests too deeply \(limit 200")


def test_ktir_run_refuses_a_huge_tile_count_by_the_executed_elements_limit(capsys):
    refused(capsys, ["intertile", "run", "--tiles", 4611686018427387904, KTIR],
            pattern=r"executes 4,611,686,018,427,388,\d+ elements \(limit 16,777,216 executed "
                    r"elements\); raise the limit with TILEFOUNDRY_MAX_ELEMENTS=N")


def test_ktir_verify_and_run_agree_on_one_tile_r12(capsys):
    verify_code, verify_out, _ = run(capsys, "intertile", "verify", "--tiles", 1, E03)
    run_code, run_out, run_err = run(capsys, "intertile", "run", "--tiles", 1, E03)
    assert verify_code == 1 and "R12" in verify_out
    assert run_code == 1 and "R12" in run_out + run_err


def test_ktir_group_set_past_the_limit_is_refused(tmp_path, capsys):
    text = KTIR.read_text().replace("(g >= 0, -g + 1 >= 0)", "(g >= 0, -g + 1000000000 >= 0)")
    (tmp_path / "k.mlir").write_text(text)
    refused(capsys, ["intertile", "verify", "k.mlir"],
            pattern=r"has 1,000,000,001 groups \(limit 65,536 groups\)")


@pytest.mark.parametrize("tiles", ["1_0", "+8", "\u0663"])
def test_tiles_takes_plain_digits_only(capsys, tiles):
    refused(capsys, ["intertile", "verify", "--tiles", tiles, KTIR], code=2,
            pattern=r"invalid tile count")


# ------------------------------------------------------------ relayout tables

def s74() -> dict:
    return json.loads(S74.read_text())


def boxes_table(bound) -> dict:
    return {"cores": 2, "tensor": {"a": 4},
            "source_regions": [{"box": {"a": bound}, "holders": [0]},
                               {"box": {"a": [2, 4]}, "holders": [1]}],
            "destination": {"0": {"a": 0}, "1": {"a": 1}}}


def classify(capsys, tmp_path, table, code=1, pattern="", raw: bytes | None = None) -> str:
    path = tmp_path / "t.json"
    path.write_bytes(raw if raw is not None else json.dumps(table).encode())
    return refused(capsys, ["relayout", "classify", "t.json"], code, pattern)


def test_tables_invalid_utf8_names_line_and_column(tmp_path, capsys):
    classify(capsys, tmp_path, None, raw=b'{"cores": 2,\n "x\xff": 1}',
             pattern=r"^tilefoundry: error: t\.json:2:4: byte 0xff is not UTF-8")


def test_tables_deeply_nested_json_is_refused_by_the_limit(tmp_path, capsys):
    raw = ('{"cores": 1, "source": ' + "[" * 100000 + "]" * 100000 + "}").encode()
    classify(capsys, tmp_path, None, raw=raw,
             pattern=r"t\.json:1:\d+: the JSON nests too deeply \(limit 200")


@pytest.mark.parametrize("bound", [[1], [0, 1, 2], False, "0:2", [0, True]])
def test_tables_box_bound_must_be_two_integers(tmp_path, capsys, bound):
    classify(capsys, tmp_path, boxes_table(bound),
             pattern=rf"source region #0 axis 'a' bound {re.escape(json.dumps(bound))} is not "
                     r"\[start, stop\]; give two integers")


def test_tables_extent_true_is_not_the_extent_one(tmp_path, capsys):
    table = boxes_table([0, 2]) | {"tensor": {"a": True}}
    classify(capsys, tmp_path, table, pattern=r"'tensor' axis 'a' has extent true")


def test_tables_huge_extent_is_refused_by_the_limit_not_allocated(tmp_path, capsys):
    table = {"cores": 2, "tensor": {"a": 10 ** 12},
             "source_regions": [{"box": {"a": [0, 10 ** 12]}, "holders": [0]}],
             "destination_regions": [{"box": {"a": [0, 5 * 10 ** 11]}, "holders": [0]},
                                     {"box": {"a": [5 * 10 ** 11, 10 ** 12]}, "holders": [1]}]}
    classify(capsys, tmp_path, table, pattern=r"executes 1,000,000,000,000 elements "
                                              r"\(limit 16,777,216 executed elements\)")


def test_tables_duplicate_holder_is_named_once_as_a_duplicate(tmp_path, capsys):
    table = boxes_table([0, 2])
    table["source_regions"][0]["holders"] = [0, 0]
    line = classify(capsys, tmp_path, table,
                    pattern=r"source region #0 lists holder 0 twice; name each holder once")
    assert "#0 and #0" not in line


@pytest.mark.parametrize("key", ["1_0", "\u0661", " 1"])
def test_tables_core_id_is_plain_digits(tmp_path, capsys, key):
    table = s74()
    table["source"][key] = table["source"].pop("1")
    classify(capsys, tmp_path, table, pattern=r"source core id .* is not an integer")


def test_tables_cores_past_the_limit_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILEFOUNDRY_MAX_CORES", "16")
    classify(capsys, tmp_path, s74(), pattern=r"'cores' is 32 \(limit 16 cores\); raise the "
                                              r"limit with TILEFOUNDRY_MAX_CORES=N")


def test_a_malformed_limit_variable_is_refused_not_ignored(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILEFOUNDRY_MAX_CORES", "lots")
    classify(capsys, tmp_path, s74(), pattern=r"TILEFOUNDRY_MAX_CORES='lots' is not a positive")


# ---------------------------------------------------------------------- CLI

@pytest.fixture
def fifo(tmp_path) -> str:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(tmp_path / "fifo")
    return "fifo"


@pytest.mark.parametrize("argv", [
    ["intertile", "verify"], ["intertile", "run"], ["relayout", "classify"], ["analyze"]])
def test_only_regular_files_are_read_a_fifo_is_refused_by_name(capsys, fifo, argv):
    refused(capsys, argv + [fifo], pattern=r"^tilefoundry: error: fifo is a pipe, not a file")


def test_output_to_a_fifo_is_refused_before_any_work(capsys, fifo):
    refused(capsys, ["analyze", "--example", "--output", fifo],
            pattern=r"--output fifo is a pipe, not a file")


@pytest.mark.parametrize("path, kind", [("/dev/null", "a character device"), (".", "a directory")])
def test_analyze_says_what_a_non_file_is(capsys, path, kind):
    refused(capsys, ["analyze", path], pattern=rf"{re.escape(path)} is {kind}, not a file")


@pytest.mark.parametrize("argv", [
    [], ["intertile"], ["analyze", "--dim"], ["intertile", "run", "--tiles", "x", "f.mlir"],
    ["target", "show"], ["--bogus"], ["relayout", "classify"]])
def test_argparse_errors_are_one_line_ending_with_the_help_pointer(capsys, argv):
    refused(capsys, argv, code=2, pattern=r"^tilefoundry: error: .* \(see tilefoundry[\w ]* --help\)$")


# ------------------------------------------------------------- print_program

@pytest.mark.parametrize("source, shows", [
    ("p06_module_tree.py:MiniStack", "block("),
    ("p07_multi_result.py", "return ("),
    ("p11_seq_variants.py:SeqPool", "    pass"),
])
def test_print_program_prints_authored_calls_and_variant_prototypes(monkeypatch, source, shows):
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.render.printer import print_program

    monkeypatch.chdir(PROGRAMS)
    _, function = load_selection(source)
    text = print_program(function).text
    assert f"def {function.name}(" in text and shows in text


# ------------------------------------------------- found by bench/fuzz.py

def test_a_target_name_no_file_can_have_is_an_unknown_device(tmp_path, capsys):
    name = p01_with(tmp_path, '"nvidia.h200_sxm"', '"nvidia.h200' + "x" * 300 + '"')
    line = refused(capsys, ["analyze", name], pattern=r"prog\.py:\d+:\d+: CudaTarget: unknown device")
    assert "OSError" not in line and "File name too long" not in line


def test_a_syntax_warning_of_the_program_is_no_second_stderr_line(tmp_path, capsys):
    # `1if` is a SyntaxWarning (invalid decimal literal) when @func re-parses its source
    name = p01_with(tmp_path, "        x32 = tf.cast(x_reg, \"f32\")",
                    "        x32 = tf.cast(x_reg, \"f32\") if 1if 1 else 2 else x_reg")
    code, _, err = run(capsys, "analyze", name)
    assert len(err.splitlines()) <= 1 and "SyntaxWarning" not in err
