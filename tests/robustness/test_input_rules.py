"""Issue 22 item 13: one line rule, one integer rule and one JSON rule for every
input a user gives.

- Locations are the file's own lines: a line ends at ``\\n``, ``\\r\\n`` or
  ``\\r`` only, so a form feed, ``\\v``, ``\\x1c``, ``\\x85`` or U+2028 inside a
  line (which ``str.splitlines`` breaks at) moves no refusal off its line, in a
  DSL file, a KTIR file, a buffer CSV and a relayout table alike.
- An integer is an optional minus and ASCII digits, at most
  ``text_input.MAX_DIGITS`` of them, wherever it is read: ``--dim``, ``--top``,
  ``--tiles``, ``--capacity``, ``--seed``, a ``TILEFOUNDRY_MAX_*`` value, a
  relayout table, a KTIR file, a buffer CSV. A 5,000-digit integer is refused by
  that stated limit, never Python's int-digits ValueError.
- A JSON object naming a key twice (one core twice) is refused naming it.
- A CSV field past the csv module's field limit is the file's refusal at its line.
- ``--topology`` naming no level is refused with or without a family flag.

Each expected line is derived from the input: the count of ``\\n`` before the
token the refusal names.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tilefoundry.cli.main import main
from tilefoundry.text_input import MAX_DIGITS, IntegerTextError, file_lines, line_col, read_integer

REPO = Path(__file__).resolve().parents[2]
P11 = REPO / "tests" / "data" / "programs" / "p11_seq_variants.py"
P04 = REPO / "tests" / "data" / "programs" / "p04_split_k_partial.py"
KTIR = REPO / "tests" / "data" / "intertile" / "examples" / "e01_shared_sources_identical.mlir"
S74 = REPO / "examples" / "relayout_s74.json"
CSV = REPO / "bench" / "data" / "minimalloc" / "input.12.csv"
#: the characters str.splitlines breaks at that end no line of a file
NOT_BREAKS = ["\f", "\v", "\x1c", "\x85", "\u2028"]
HUGE = "9" * 5000
TOO_LONG = f"has 5,000 digits, past the {MAX_DIGITS:,} an integer may have"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def refused(capsys, argv, code: int = 1) -> str:
    got = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert got == code and len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0]


def own_line(text: str, marker: str) -> int:
    """The line of ``marker`` counting "\\n" only (the files below have no "\\r")."""
    return text[:text.index(marker)].count("\n") + 1


# ------------------------------------------------------------------ the line rule

def test_file_lines_end_at_newline_crlf_and_cr_only():
    text = "a\fb\x85c\u2028d\ne\r\nf\rg\n"
    assert file_lines(text) == ["a\fb\x85c\u2028d", "e", "f", "g"]
    assert text.splitlines() != file_lines(text)  # the rule it replaces breaks at each
    assert line_col(text, text.index("g")) == (4, 1)
    assert line_col(text.encode(), text.encode().index(b"g")) == (4, 1)


@pytest.mark.parametrize("odd", NOT_BREAKS, ids=ascii)
def test_dsl_refusal_names_its_own_line_past_an_odd_character(tmp_path, capsys, odd):
    text = P11.read_text()
    text = text.replace('"""', f'"""{odd}', 1).replace("tf.", "tf.nope_", 1)
    (tmp_path / "p.py").write_text(text)
    line = refused(capsys, ["analyze", "--dim", "seq=96", "p.py"])
    assert line.startswith(f"tilefoundry: error: p.py:{own_line(text, 'tf.nope_')}:"), line


@pytest.mark.parametrize("odd", NOT_BREAKS, ids=ascii)
def test_ktir_refusal_names_its_own_line_past_an_odd_character(tmp_path, capsys, odd):
    text = KTIR.read_text().replace("//", f"// {odd}", 1)
    lines = text.split("\n")
    lines[20] += " $"
    text = "\n".join(lines)
    (tmp_path / "k.mlir").write_text(text)
    line = refused(capsys, ["intertile", "verify", "k.mlir"])
    assert f"k.mlir:{own_line(text, ' $')}:" in line, line


def test_ktir_lines_may_end_in_cr_alone(tmp_path, capsys):
    text = KTIR.read_text()
    lines = text.split("\n")
    lines[20] += " $"
    (tmp_path / "k.mlir").write_bytes("\r".join(lines).encode())
    line = refused(capsys, ["intertile", "verify", "k.mlir"])
    assert "k.mlir:21:" in line, line


@pytest.mark.parametrize("odd", NOT_BREAKS, ids=ascii)
def test_csv_refusal_names_its_own_line_past_an_odd_character(tmp_path, capsys, odd):
    text = f"id,lower,upper,size\na{odd},0,3,4\nb,0,3,x\n"
    (tmp_path / "b.csv").write_text(text)
    line = refused(capsys, ["pack", "b.csv", "--capacity", "12"])
    assert f"b.csv:{own_line(text, ',x')}:7: size 'x' is not an integer" in line, line


def test_csv_lines_may_end_in_cr_alone(tmp_path, capsys):
    (tmp_path / "b.csv").write_bytes(b"id,lower,upper,size\ra,0,3,4\rb,0,3,x\r")
    assert "b.csv:3:7: size 'x'" in refused(capsys, ["pack", "b.csv", "--capacity", "12"])


@pytest.mark.parametrize("odd", ["\x85", "\u2028"], ids=ascii)
def test_table_refusal_names_its_own_line_past_an_odd_character(tmp_path, capsys, odd):
    # JSON takes these inside a string; the duplicate key after them is refused
    text = S74.read_text().replace('"cores"', f'"note": "a{odd}b",\n "cores"', 1)
    second = text.index('"1": {')
    text = text[:second] + '"0": {' + text[second + len('"1": {'):]
    (tmp_path / "t.json").write_text(text)
    line = refused(capsys, ["relayout", "classify", "t.json"])
    assert f"t.json:{text[:second].count(chr(10)) + 1}:" in line and "twice" in line, line


@pytest.mark.parametrize("odd", ["\f", "\v", "\x1c"], ids=ascii)
def test_table_control_character_is_refused_at_its_own_line(tmp_path, capsys, odd):
    text = S74.read_text().replace('"cores"', f'"note": "a{odd}b",\n "cores"', 1)
    (tmp_path / "t.json").write_text(text)
    line = refused(capsys, ["relayout", "classify", "t.json"])
    assert f"t.json:{own_line(text, odd)}:" in line and "not valid JSON" in line, line


# ------------------------------------------------------------------ JSON: a key once

def test_a_relayout_table_naming_one_core_twice_is_refused_naming_it(tmp_path, capsys):
    text = S74.read_text()
    second = text.index('"1": {')
    text = text[:second] + '"0": {' + text[second + len('"1": {'):]
    (tmp_path / "t.json").write_text(text)
    line = refused(capsys, ["relayout", "classify", "t.json"])
    where = line_col(text, second)
    assert (f"t.json:{where[0]}:{where[1]}: the object names key \"0\" twice; each key may "
            "appear once in an object") in line, line
    assert json.loads(text)["source"]["0"] == {"mb": 0, "out": 1}  # what json.loads made of it


def test_a_key_repeated_in_other_objects_is_no_duplicate(tmp_path, capsys):
    # every entry names "mb" and "out": once per object is the rule
    (tmp_path / "t.json").write_text(S74.read_text())
    assert main(["relayout", "classify", "t.json"]) == 0


# ------------------------------------------------------------------ one integer rule

def test_read_integer_is_ascii_digits_and_an_optional_minus_within_max_digits():
    assert read_integer("-12") == -12 and read_integer("9" * MAX_DIGITS) == int("9" * MAX_DIGITS)
    for text in ("1_0", "+5", "\u0663", " 5", "5 ", "", "-", "1e3", "0x10", "5\n"):
        with pytest.raises(IntegerTextError) as caught:
            read_integer(text)
        assert not caught.value.too_long
    with pytest.raises(IntegerTextError, match="is not an integer"):
        read_integer("-1", signed=False)
    with pytest.raises(IntegerTextError, match=re.escape(TOO_LONG)) as caught:
        read_integer(HUGE)
    assert caught.value.too_long


def _ktir_with(number: str) -> str:
    text = KTIR.read_text()
    found = next(m for m in re.finditer(r"\b[0-9]+\b", text)
                 if "//" not in text[text.rfind("\n", 0, m.start()):m.start()])
    return text[:found.start()] + number + text[found.end():]


def _table_with(number: str) -> str:
    return S74.read_text().replace('"cores": 32', f'"cores": {number}', 1)


def _csv_with(number: str) -> str:
    return CSV.read_text().replace("b1,0,3,4", f"b1,0,3,{number}", 1)


@pytest.mark.parametrize("case", ["dim", "top", "tiles", "capacity", "seed", "env", "table",
                                  "ktir", "csv"])
def test_a_5000_digit_integer_is_refused_by_the_stated_digit_limit(tmp_path, capsys,
                                                                   monkeypatch, case):
    (tmp_path / "p.py").write_text(P11.read_text())
    (tmp_path / "g.py").write_text(P04.read_text())
    (tmp_path / "k.mlir").write_text(_ktir_with(HUGE) if case == "ktir" else KTIR.read_text())
    (tmp_path / "t.json").write_text(_table_with(HUGE) if case == "table" else S74.read_text())
    (tmp_path / "b.csv").write_text(_csv_with(HUGE) if case == "csv" else CSV.read_text())
    argv, code = {
        "dim": (["analyze", "--dim", f"seq={HUGE}", "p.py"], 1),
        "top": (["analyze", "--top", HUGE, "--dim", "seq=96", "p.py"], 2),
        "tiles": (["intertile", "verify", "--tiles", HUGE, "k.mlir"], 2),
        "capacity": (["pack", "b.csv", "--capacity", HUGE], 2),
        "seed": (["run", "--seed", HUGE, "g.py"], 2),
        "env": (["analyze", "--dim", "seq=96", "p.py"], 1),
        "table": (["relayout", "classify", "t.json"], 1),
        "ktir": (["intertile", "verify", "k.mlir"], 1),
        "csv": (["pack", "b.csv", "--capacity", "12"], 1),
    }[case]
    if case == "env":
        monkeypatch.setenv("TILEFOUNDRY_MAX_NESTING", HUGE)
    assert TOO_LONG in refused(capsys, argv, code)


@pytest.mark.parametrize("written", ["1_0", "+5", "\u0663"], ids=ascii)
@pytest.mark.parametrize("case", ["dim", "tiles", "capacity", "seed", "env", "table", "ktir",
                                  "csv"])
def test_every_integer_reader_refuses_what_int_alone_would_take(tmp_path, capsys, monkeypatch,
                                                                case, written):
    (tmp_path / "p.py").write_text(P11.read_text())
    (tmp_path / "g.py").write_text(P04.read_text())
    (tmp_path / "k.mlir").write_text(_ktir_with(written) if case == "ktir" else KTIR.read_text())
    (tmp_path / "t.json").write_text(S74.read_text().replace('"0": {', f'"{written}": {{', 1)
                                     if case == "table" else S74.read_text())
    (tmp_path / "b.csv").write_text(_csv_with(written) if case == "csv" else CSV.read_text())
    argv, code = {
        "dim": (["analyze", "--dim", f"seq={written}", "p.py"], 1),
        "tiles": (["intertile", "verify", "--tiles", written, "k.mlir"], 2),
        "capacity": (["pack", "b.csv", "--capacity", written], 2),
        "seed": (["run", "--seed", written, "g.py"], 2),
        "env": (["analyze", "--dim", "seq=96", "p.py"], 1),
        "table": (["relayout", "classify", "t.json"], 1),
        "ktir": (["intertile", "verify", "k.mlir"], 1),
        "csv": (["pack", "b.csv", "--capacity", "12"], 1),
    }[case]
    if case == "env":
        monkeypatch.setenv("TILEFOUNDRY_MAX_NESTING", written)
    refused(capsys, argv, code)


def test_a_negative_seed_is_a_malformed_command_line(tmp_path, capsys):
    (tmp_path / "g.py").write_text(P04.read_text())
    assert "'-1' is not a seed" in refused(capsys, ["run", "--seed", "-1", "g.py"], 2)


# ------------------------------------------------------------------ CSV field limit

def test_a_csv_field_past_the_csv_field_limit_is_refused_at_its_line(tmp_path, capsys):
    from tilefoundry.text_input import CSV_CELL

    field = "9" * (CSV_CELL + 1)
    (tmp_path / "b.csv").write_text(f"id,lower,upper,size\na,0,3,4\nb,0,3,\"{field}\"\n")
    line = refused(capsys, ["pack", "b.csv", "--capacity", "12"])
    assert f"b.csv:3:1: a cell holds more than {CSV_CELL:,} characters (the most one CSV cell may " \
           "hold); a field is one id or integer" in line, line


# ------------------------------------------------------------------ --topology

def test_topology_naming_no_level_is_refused_without_a_family(tmp_path, capsys):
    (tmp_path / "p.py").write_text(P11.read_text())
    line = refused(capsys, ["analyze", "--topology", "junk", "--dim", "seq=96", "p.py"])
    assert "no topology named 'junk'; effective topology levels are ['cta']" in line
    assert main(["analyze", "--topology", "cta", "--dim", "seq=96", "p.py"]) == 0
