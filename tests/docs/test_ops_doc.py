"""docs/ops.md, the op reference (issue 21 item 6): generated from the op registry by
tools/gen_ops_doc.py, current, complete, the docstring of every `tf` spelling, and
true where a test can tell: every example types to the result it states and costs
what it states, and every alias records the kind of work its table row names."""
from __future__ import annotations

import dataclasses
import pydoc

import pytest

from tests.conftest import REPO, load_tool

PAGE = REPO / "docs" / "ops.md"


@pytest.fixture(scope="module")
def tool():
    return load_tool("gen_ops_doc")


def test_ops_md_is_the_generated_page(tool):
    assert PAGE.read_text(encoding="utf-8") == tool.document(), (
        "docs/ops.md is stale: run python tools/gen_ops_doc.py")


def test_the_staleness_check_can_fail(tool, tmp_path, monkeypatch):
    stale = tmp_path / "ops.md"
    stale.write_text(tool.document().replace("rounded once", "rounded twice", 1))
    monkeypatch.setattr(tool, "PAGE", stale)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    assert tool.main(["--check"]) == 1
    stale.write_text(tool.document())
    assert tool.main(["--check"]) == 0


def test_every_op_and_every_tf_name_is_on_the_page():
    from tilefoundry.ops.reference import FAMILIES, op_classes, op_docs
    from tilefoundry.semantics.op_registry import TF_NAMES

    listed = [name for _, names in FAMILIES for name in names]
    assert sorted(listed) == sorted(op_classes()) == sorted(op_docs())
    assert len(listed) == len(set(listed))
    page = PAGE.read_text(encoding="utf-8")
    assert len(TF_NAMES) >= 72
    assert [name for name in TF_NAMES if f"`tf.{name}(" not in page] == []


def test_each_tf_spelling_documents_itself_with_its_section():
    from tilefoundry.dsl import tf
    from tilefoundry.ops.reference import section
    from tilefoundry.semantics.op_registry import TF_NAMES

    page = PAGE.read_text(encoding="utf-8")
    for name, entry in TF_NAMES.items():
        text = section(entry.op_class.name)
        assert text in page
        assert text in getattr(tf, name).__doc__, name
    assert "kind=\"add\"" in tf.add.__doc__.splitlines()[0]
    shown = pydoc.render_doc(tf.matmul, renderer=pydoc.plaintext)
    assert "2 * batch * M * K * N" in shown and "on bf16, f16 or fp8 operands writes the f32 sum" in shown
    assert tf.TfOp.__doc__.startswith("One spelling of the tf namespace")


PREAMBLE = "from tilefoundry.dsl import *\n\n\n"


def example_mismatch(name: str, doc, folder) -> str | None:
    """Why op ``name``'s example does not do what its OpDoc states (None: it does)."""
    from tilefoundry.dsl.loader import load_module_file
    from tilefoundry.ir.expr import Call
    from tilefoundry.ir.module import Module
    from tilefoundry.ops.reference import op_classes
    from tilefoundry.render.printer import ProgramPrinter
    from tilefoundry.semantics.cost import CostContext

    path = folder / f"example_{name}.py"
    path.write_text(PREAMBLE + doc.example + "\n")
    example = load_module_file(str(path)).example
    function = example.entry_function() if isinstance(example, Module) else example
    call = function.body
    if not isinstance(call, Call) or type(call.op) is not op_classes()[name]:
        return f"the return line calls {getattr(call, 'op', call)!r}, not {name}"
    printer = ProgramPrinter(function)
    printer.run()
    typed = " ".join(printer.fmt.annotation(call.type).split())
    stated = doc.example.rstrip().rsplit("  # ", 1)[1]
    if typed != stated:
        return f"the example's result is {typed}, the doc states {stated}"
    cost = CostContext().evaluate(call)
    parts = [f"flops={','.join(f'{d}:{n}' for d, n in sorted(cost.flops.items(), key=str))}"] if cost.flops else []
    parts += [f"service={','.join(f'{k}:{n}' for k, n in sorted(cost.service.items()))}"] if cost.service else []
    recorded = " ".join(parts) or "no work"
    if recorded != doc.example_cost:
        return f"the example records {recorded}, the doc states {doc.example_cost}"
    return None


def _docs():
    from tilefoundry.ops.reference import op_docs

    return sorted(op_docs().items())


@pytest.mark.parametrize("name, doc", _docs(), ids=[name for name, _ in _docs()])
def test_every_example_types_and_costs_as_its_section_states(name, doc, tmp_path):
    assert example_mismatch(name, doc, tmp_path) is None


def test_the_example_check_can_fail(tmp_path):
    from tilefoundry.ops.reference import op_docs

    matmul = op_docs()["matmul"]
    wrong_type = dataclasses.replace(matmul, example=matmul.example.replace('"f32"]', '"bf16"]'))
    assert "the doc states" in example_mismatch("matmul", wrong_type, tmp_path)
    wrong_cost = dataclasses.replace(matmul, example_cost="flops=f32:524288")
    assert "records flops=bf16:524288" in example_mismatch("matmul", wrong_cost, tmp_path)
    assert "not clamp" in example_mismatch("clamp", matmul, tmp_path)


def _alias_rows():
    from tilefoundry.ops.reference import op_docs
    from tilefoundry.semantics.op_registry import TF_NAMES

    docs = op_docs()
    return [(name, entry, docs[entry.op_class.name].alias_costs.get(name))
            for name, entry in TF_NAMES.items() if name != entry.op_class.name]


@pytest.mark.parametrize("name, entry, stated", _alias_rows(), ids=[r[0] for r in _alias_rows()])
def test_every_alias_records_the_work_its_row_names(name, entry, stated, b):
    from tilefoundry.semantics.cost import CostContext

    kind = dict(entry.fixed)["kind"].value
    dtype = ("bool" if kind in ("and", "or", "not") else
             "i32" if kind in ("floor_div", "mod") else "f32")
    call = b.call(entry.op_class(**dict(entry.fixed)),
                  *(b.var(role, (8, 64), dtype) for role in entry.op_class.inputs))
    cost = CostContext().evaluate(call)
    recorded = "flops" if cost.flops else next(iter(cost.service))
    assert stated == recorded and sum({**cost.flops, **cost.service}.values()) == 512
