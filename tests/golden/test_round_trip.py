"""The printed typed program is a program (issue 21 item 7): on every golden
program -- each selection of the manifest, and p26, which has no stored output
-- print -> write the text to a file -> `tilefoundry analyze FILE` -> the same
typed program, byte for byte: same types, same names, same Module.

What the printed program does not carry: the `with Mesh` scopes (the execution
domains) and authored `where(...)` constraints, which are no part of a type.
compute-cost, memory and roofline read types only and give the same figures on
the printed program; performance needs each occurrence's execution domain and
refuses it (docs/tutorial.md, section 1)."""
from __future__ import annotations

import os

import pytest

from tests.conftest import PROGRAMS, golden_manifest
from tests.golden.typed_text import MODULE_MARK, function_part, reanalysed

SELECTIONS = [(e["stem"], f"{e['source']}:{e['selector']}", e["dims"] or None)
              for e in golden_manifest()["valid"]]
SELECTIONS.append(("p26_authored_where_constraint.DeferredPlacement",
                   "p26_authored_where_constraint.py:DeferredPlacement", None))


@pytest.fixture
def in_programs():
    cwd = os.getcwd()
    os.chdir(PROGRAMS)
    yield
    os.chdir(cwd)


def _typed(selection: str, dims) -> str:
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    module, function = load_selection(selection)
    return typed_program(module, function, dims)


def test_every_golden_program_is_in_the_round_trip():
    stems = {p.stem for p in PROGRAMS.glob("p*.py")}
    assert stems == {stem.split(".")[0] for stem, _, _ in SELECTIONS} and len(stems) == 25


@pytest.mark.parametrize("stem, selection, dims", SELECTIONS, ids=[s[0] for s in SELECTIONS])
def test_golden_printed_program_analyses_to_the_same_typed_program(stem, selection, dims, tmp_path,
                                                                   in_programs):
    first = _typed(selection, dims)
    assert reanalysed(first, tmp_path, stem) == first


def test_the_printed_module_is_the_selected_one(in_programs):
    text = _typed("p06_module_tree.py:MiniStack.blk1", None)
    module = text.split(MODULE_MARK, 1)[1]
    assert '@module(entry="block", target=CudaTarget("nvidia.h200_sxm"), ' in module, module
    assert "class blk1:\n    block = block\n" in module
    # a DimVar extent prints as the number it was bound to (p25 binds a topology)
    # a topology extent written with a DimVar prints as the number it is bound to
    bound = _typed("p25_mesh_dims_binding.py:TokenTiles", {"tokens": 100})
    assert "DimVar" not in bound and 'topologies=(Topology("cta", 7),)' in bound, bound


def test_the_function_part_is_the_reference_text(in_programs):
    """Before the Module, the typed program is what the reference prints."""
    entry = next(e for e in golden_manifest()["valid"] if e["stem"] == "p05_gqa_decode_online.GqaDecodeStep")
    expected = (PROGRAMS / "expected" / f"{entry['stem']}.typed.py").read_text()
    ours = _typed(f"{entry['source']}:{entry['selector']}", entry["dims"])
    assert function_part(ours) == expected and ours != expected


def test_families_on_the_printed_program(tmp_path, in_programs):
    """compute-cost, memory and roofline agree; performance refuses, naming the
    execution domain the printed program does not state (the stated limit)."""
    from tilefoundry.analysis.analyze import analyze
    from tilefoundry.dsl.loader import load_selection
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.render.report import render_analysis

    families = ["compute-cost", "memory", "roofline"]
    module, function = load_selection("p03_tiled_gemm.py:TiledGemm")
    path = tmp_path / "printed.py"
    path.write_text(_typed("p03_tiled_gemm.py:TiledGemm", None))
    again, entry = load_selection(str(path))

    def summary(m, f):
        return [line for line in render_analysis(analyze(m, f, analysis=families)).text.splitlines()
                if line.startswith("# ") and not line.startswith("# analysis")]

    assert summary(module, function) == summary(again, entry)
    with pytest.raises(TileFoundryError, match="has no cta execution domain"):
        analyze(again, entry, analysis=["performance"])
