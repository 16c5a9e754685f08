"""CLI `analyze` behaviour (issue 3 item 4; companions §8): exit codes, one-line
errors on stderr, no traceback, --dim rules, the invalid golden programs."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import golden_manifest


def tf(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tilefoundry", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def assert_one_line_error(result, exit_code=1):
    assert result.returncode == exit_code, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tilefoundry: error: ")
    assert result.stderr.count("\n") == 1, result.stderr  # one line, always


# The rule each invalid program breaks, as words our message must contain.
RULES = {
    "i01_binary_dtype_mismatch": r"dtype mismatch \(bf16 vs f32\)",
    "i02_partial_through_exp": r"Partial\(sum\).*does not commute.*reshard",
    "i03_operands_on_different_meshes": r"different mesh",
    "i04_unknown_dtype": r"unknown value 'f8e4m3'",
    "i05_matmul_inner_mismatch": r"contraction-dim mismatch: lhs K=128 vs rhs K=96",
    "i06_dim_left_unbound": r"open dimension: tokens is declared as \[1, 513\)",
    "i07_dim_out_of_range": r"'window' was declared over \[16, 1025\) and cannot take 2048",
    "i08_mesh_axis_straddles_levels": r"boundary of level 'cta'",
    "i09_child_declares_target": r"child module 'leaf' declares its own target",
    "i10_forward_sibling_call": r"unknown Op name 'inner'",
    "i11_augassign_in_loop": r"augmented assignment",
    "i12_variants_leave_gap": r"rows in \[64, 128\)",
    "i13_setaside_constant": r"i13_setaside_constant\.py:14:\d+: .*could not convert string to float: '1e-6f'",
}
INVALID = golden_manifest()["invalid"]


@pytest.mark.parametrize("entry", INVALID, ids=[Path(e["source"]).stem for e in INVALID])
def test_cli_invalid_golden_program_refused_with_its_rule(entry, programs_dir):
    args = entry["command"].split()[1:]
    result = tf(*args, cwd=programs_dir)
    assert_one_line_error(result)
    stem = Path(entry["source"]).stem
    assert re.search(RULES[stem], result.stderr), result.stderr
    expected = (programs_dir / entry["expected_file"]).read_text()
    location = re.search(r"at (\S+:\d+):\d+", expected)
    if location:  # same file and line as the reference
        assert location.group(1) in result.stderr


def test_cli_typed_program_exit_0_and_empty_stderr(programs_dir):
    result = tf("analyze", "p02_dense_bias_gelu.py:DenseBiasGelu", cwd=programs_dir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("from __future__ import annotations\n")
    assert "@func\ndef " in result.stdout


def test_cli_builtin_example_runs():
    result = tf("analyze", "--example")
    assert result.returncode == 0, result.stderr
    assert "def rms_norm_rows(" in result.stdout


def test_cli_json_without_family_is_the_typed_program(programs_dir):
    """No family: the analyze report of the typed program (docs/json.md)."""
    result = tf("analyze", "--json", "p02_dense_bias_gelu.py:DenseBiasGelu", cwd=programs_dir)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    from tests.golden.typed_text import function_part

    typed = (programs_dir / "expected" / "p02_dense_bias_gelu.DenseBiasGelu.typed.py").read_text()
    assert function_part(data["program"]) == typed and data["program"] == tf(
        "analyze", "p02_dense_bias_gelu.py:DenseBiasGelu", cwd=programs_dir).stdout
    assert data["requested"] == [] and data["totals"] is None
    assert all(v["type"].startswith(("Tensor[", "ConstTensor[")) for v in data["values"])


def test_cli_missing_source_is_usage_error():
    result = tf("analyze")
    assert result.returncode == 2
    assert "SOURCE is required" in result.stderr


def test_cli_unknown_flag_is_usage_error():
    result = tf("analyze", "--frobnicate", "x.py")
    assert result.returncode == 2
    assert "unrecognized argument '--frobnicate'" in result.stderr


# companions §8.3: every --dim error exits 1, malformed or refused by the program.
@pytest.mark.parametrize("dim, message, code", [
    ("=5", "--dim takes NAME=EXTENT or NAME=V1,V2,... (e.g. --dim seq=128 or --dim seq=64,128), "
           "got '=5'", 1),
    ("seq", "--dim takes NAME=EXTENT or NAME=V1,V2,... (e.g. --dim seq=128 or --dim seq=64,128), "
            "got 'seq'", 1),
    ("seq=abc", "--dim seq: every value must be an integer, got 'abc'", 1),
    ("seq=96,abc", "--dim seq: every value must be an integer, got 'abc'", 1),
    ("nope=4", "has no dimension named ['nope']; it states ['seq']", 1),
    ("seq=5000", "dimension 'seq' was declared over [1, 4097) and cannot take 5000", 1),
])
def test_cli_8_3_dim_errors(dim, message, code, programs_dir):
    result = tf("analyze", "--dim", dim, "p11_seq_variants.py:SeqPool", cwd=programs_dir)
    assert_one_line_error(result, code)
    assert message in result.stderr


def test_cli_8_3_dim_given_twice(programs_dir):
    result = tf("analyze", "--dim", "seq=96", "--dim", "seq=96", "p11_seq_variants.py:SeqPool",
                cwd=programs_dir)
    assert_one_line_error(result, 1)
    assert "--dim seq was given twice" in result.stderr


def test_cli_8_3_stated_dim_on_a_program_without_dims_is_refused(programs_dir):
    result = tf("analyze", "--dim", "n=4", "p02_dense_bias_gelu.py:DenseBiasGelu", cwd=programs_dir)
    assert_one_line_error(result)
    assert "has no dimension named ['n']" in result.stderr


def test_cli_8_3_variant_selected_by_dim(programs_dir):
    short = tf("analyze", "--dim", "seq=96", "p11_seq_variants.py:SeqPool", cwd=programs_dir)
    long = tf("analyze", "--dim", "seq=1024", "p11_seq_variants.py:SeqPool", cwd=programs_dir)
    assert short.returncode == long.returncode == 0
    assert "for c in tile(1024, 64)" in long.stdout
    assert "for " not in short.stdout.split("def pool(")[1]


def test_cli_8_2_selector_naming_nothing(programs_dir):
    result = tf("analyze", "p06_module_tree.py:MiniStack.nothing", cwd=programs_dir)
    assert_one_line_error(result)
    assert "has no child module 'nothing'" in result.stderr


def test_cli_8_2_source_file_not_found(tmp_path):
    result = tf("analyze", str(tmp_path / "absent.py"))
    assert_one_line_error(result)
    assert "source file not found" in result.stderr


def test_cli_8_2_file_raising_on_import(tmp_path):
    source = tmp_path / "broken.py"
    source.write_text("raise RuntimeError('boom at import')\n")
    result = tf("analyze", f"{source}:Anything")
    assert_one_line_error(result)
    assert "boom at import" in result.stderr


def test_cli_8_2_syntax_error_names_file_line(tmp_path):
    source = tmp_path / "bad_syntax.py"
    source.write_text("from tilefoundry import module\n\ndef (:\n")
    result = tf("analyze", str(source))
    assert_one_line_error(result)
    assert "bad_syntax.py:3" in result.stderr


@pytest.mark.parametrize("statement, construct", [
    ("while True:\n            pass", "while"),
    ("try:\n            pass\n        except Exception:\n            pass", "try"),
    ("ys = [y for y in (x,) if y]", "comprehension"),
    ("if True:\n            pass", "if"),
    ("x += x", "augmented assignment"),
])
def test_cli_unsupported_construct_in_func(tmp_path, statement, construct):
    source = tmp_path / "unsupported.py"
    source.write_text(
        "from tilefoundry import module\n"
        "from tilefoundry.dsl import *\n"
        "from tilefoundry.target import CudaTarget\n\n\n"
        "@module(entry='f', target=CudaTarget('nvidia.h200_sxm'))\n"
        "class M:\n"
        "    @func\n"
        "    def f(x: Tensor[(4,), 'f32']) -> Tensor[(4,), 'f32']:\n"
        "        " + statement + "\n"
        "        return x\n"
    )
    result = tf("analyze", f"{source}:M")
    assert_one_line_error(result)
    assert "unsupported.py:10:" in result.stderr
    assert construct in result.stderr.lower()


def test_cli_target_list_and_show():
    listed = tf("target", "list")
    assert listed.returncode == 0 and "nvidia.h200_sxm" in listed.stdout
    shown = tf("target", "show", "nvidia.h200_sxm")
    assert shown.returncode == 0 and "132" in shown.stdout
    unknown = tf("target", "show", "nvidia.nope")
    assert_one_line_error(unknown)


def test_cli_version_matches_the_package_metadata():
    from importlib.metadata import version

    result = tf("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tilefoundry {version('tilefoundry')}"


def test_cli_two_line_library_message_becomes_one_located_line():
    from tilefoundry.cli.main import one_line

    message = "MatMul: contraction-dim mismatch\n  at m.py:7:9 variable 'r'"
    assert one_line(message) == "m.py:7:9: MatMul: contraction-dim mismatch (value 'r')"
    assert one_line("plain message") == "plain message"


def test_cli_bare_form_runs_the_same_execution_context_check(tmp_path):
    # cli Analyze: the bare form (typed program) runs the same program check as
    # an analysis, so a call across topology hierarchies is refused by both
    source = tmp_path / "contexts.py"
    source.write_text(
        "from tilefoundry import module\n"
        "from tilefoundry.dsl import *\n"
        "from tilefoundry.target import CudaTarget\n\n\n"
        "@module(entry='g', topologies=())\n"
        "class Flat:\n"
        "    @func\n"
        "    def g(x: Tensor[(4,), 'f32']) -> Tensor[(4,), 'f32']:\n"
        "        return tf.exp(x)\n\n\n"
        "@module(entry='f', target=CudaTarget('nvidia.h200_sxm'), topologies=(Topology('cta', 4),))\n"
        "class Root:\n"
        "    flat = Flat\n\n"
        "    @func\n"
        "    def f(x: Tensor[(4,), 'f32']) -> Tensor[(4,), 'f32']:\n"
        "        return flat(x)\n"
    )
    for extra in ([], ["--compute-cost"]):
        result = tf("analyze", *extra, f"{source}:Root")
        assert_one_line_error(result)
        assert "across execution contexts" in result.stderr


def test_cli_shape_from_closure_with_a_non_dim_entry_is_refused(tmp_path):
    # authoring §3.1: a closure name bound to a tuple of dims; None is no dim
    source = tmp_path / "none_shape.py"
    source.write_text(
        "from tilefoundry import module\n"
        "from tilefoundry.dsl import *\n"
        "from tilefoundry.target import CudaTarget\n"
        "S = (None, 4)\n\n\n"
        "@module(entry='f', target=CudaTarget('nvidia.h200_sxm'))\n"
        "class M:\n"
        "    @func\n"
        "    def f(x: Tensor[S, 'f32']) -> Tensor[(4,), 'f32']:\n"
        "        return x\n"
    )
    result = tf("analyze", f"{source}:M")
    assert_one_line_error(result)
    assert "none_shape.py:10:" in result.stderr
    assert "shape entry None is not an int, DimVar or dim expression" in result.stderr


# ------------------------------------------------ issue 21 item 10: analyze --all

ALL_FIVE = ["--compute-cost", "--memory", "--roofline", "--performance", "--collectives",
            "--estimate"]


def test_cli_all_is_every_family_the_target_serves(programs_dir):
    every = tf("analyze", "--all", "p04_split_k_partial.py", cwd=programs_dir)
    named = tf("analyze", *ALL_FIVE, "p04_split_k_partial.py", cwd=programs_dir)
    assert (every.returncode, every.stderr) == (0, "")
    assert every.stdout == named.stdout  # collectives and the estimate: the H200 states both
    assert every.stdout.splitlines()[1] == (
        "# selection requested=compute-cost,memory,roofline,performance,collectives,estimate "
        "executed=compute-cost,memory,roofline,performance,collectives,estimate")


def test_cli_all_leaves_out_what_the_target_cannot_serve(programs_dir):
    """The CPU target publishes no memory hierarchy: `--memory` alone refuses,
    `--all` runs the rest and its selection line says so."""
    alone = tf("analyze", "--memory", "p15_cpu_host_scale.py", cwd=programs_dir)
    assert_one_line_error(alone)
    every = tf("analyze", "--all", "--json", "p15_cpu_host_scale.py", cwd=programs_dir)
    assert (every.returncode, every.stderr) == (0, "")
    assert json.loads(every.stdout)["requested"] == ["compute-cost", "collectives"]


@pytest.mark.parametrize("flag", ALL_FIVE)
def test_cli_all_with_a_family_flag_is_a_usage_error(flag, programs_dir):
    result = tf("analyze", "--all", flag, "p03_tiled_gemm.py", cwd=programs_dir)
    assert_one_line_error(result, exit_code=2)
    assert result.stderr == (
        f"tilefoundry: error: --all already runs every family the target serves, so {flag} beside "
        "it repeats or contradicts it: give --all alone, or the family flags alone "
        "(see tilefoundry analyze --help)\n")


def test_cli_all_rows_state_what_each_point_ran(programs_dir):
    result = tf("analyze", "--all", "--json", "--dim", "seq=96,128", "p11_seq_variants.py:SeqPool",
                cwd=programs_dir)
    assert (result.returncode, result.stderr) == (0, "")
    document = json.loads(result.stdout)
    assert document["requested"] == ["compute-cost", "memory", "roofline", "performance",
                                     "collectives", "estimate"]
    assert [row["dims"] for row in document["rows"]] == [{"seq": 96}, {"seq": 128}]
    assert all("predicted_ns" in row and "flops" in row for row in document["rows"])
