"""parse -> print -> parse is a fixed point on every golden program (issue 2/3):
the printed typed program is itself a valid authored function whose typed
print is the same text."""
from __future__ import annotations

import pytest

from tests.conftest import PROGRAMS, golden_manifest

VALID = golden_manifest()["valid"]


@pytest.mark.parametrize("entry", VALID, ids=[e["stem"] for e in VALID])
def test_golden_print_reparse_print_is_fixed_point(entry, tmp_path):
    from tilefoundry.analysis.view import build_view
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_module_file, load_selection
    from tilefoundry.ir.module import Module
    from tilefoundry.render.printer import print_program

    module, function = load_selection(f"{PROGRAMS / entry['source']}:{entry['selector']}")
    first = typed_program(module, function, entry["dims"] or None)
    printed = tmp_path / f"{entry['stem'].replace('.', '_').replace('-', '_')}.py"
    printed.write_text(first)
    reparsed = getattr(load_module_file(str(printed)), function.name)
    holder = Module("Reparsed", functions=(reparsed,), entry=function.name,
                    topologies=module.effective_topologies())
    second = print_program(build_view(holder, reparsed).function).text
    assert second == first
