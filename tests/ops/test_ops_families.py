"""The op families load on demand (ops/__init__): a program pays for the
families it names, and the registry is whole whenever anything lists it."""
from __future__ import annotations

import inspect
import subprocess
import sys

import tilefoundry.ops as ops
from tilefoundry.ir.expr import Op
from tilefoundry.semantics import op_registry


def _fresh(script: str) -> str:
    """What ``script`` prints in a new interpreter (nothing of ours loaded yet)."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _families_loaded() -> str:
    return "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('tilefoundry.ops.')))"


def test_the_index_of_tf_names_is_the_registry():
    registered = {name: entry.op_class.__module__.rsplit(".", 1)[1]
                  for name, entry in op_registry.TF_NAMES.items()}
    assert registered == ops._FAMILY_OF_TF_NAME
    assert len(registered) == 72


def test_every_public_op_and_kind_is_exported_from_its_family():
    for family in ops._EXPORTS:
        module = ops._family(family)
        defined = {name for name, value in vars(module).items()
                   if inspect.isclass(value) and value.__module__ == module.__name__
                   and not name.startswith("_") and (issubclass(value, Op) or name.endswith("Kind"))}
        if family == "dims":
            continue  # dim ops are registered, not re-exported
        assert defined == set(ops._EXPORTS[family]), family
        for name in defined:
            assert getattr(ops, name) is getattr(module, name)
    assert ops.TensorSplit is ops.Split


def test_importing_the_package_loads_no_family_and_a_name_loads_its_own():
    script = ("import sys\nimport tilefoundry.ops\n" + _families_loaded() +
              "\nfrom tilefoundry.dsl import tf\ntf.matmul\n" + _families_loaded())
    before, after = _fresh(script).splitlines()
    assert before == "[]"
    assert "nn" in after and "mma" not in after and "indexing" not in after


def test_an_unknown_name_loads_nothing_and_is_refused():
    script = ("import sys\nfrom tilefoundry.semantics.op_registry import TF_NAMES\nimport tilefoundry.ops\n"
              "assert TF_NAMES.get('no_such_op') is None and 'no_such_op' not in TF_NAMES\n"
              + _families_loaded())
    assert _fresh(script) == "[]"


def test_every_listing_sees_the_whole_registry():
    listings = ["len(r.TF_NAMES)", "len(list(r.TYPEINFER))", "len(r.ACCESS_RELATIONS.keys())",
                "len(r.COST_EVALUATORS.items())", "len(r.EVALUATORS.copy())",
                "len(tilefoundry.dsl.tf.__all__)"]
    counts = [len(op_registry.TF_NAMES), len(op_registry.TYPEINFER), len(op_registry.ACCESS_RELATIONS),
              len(op_registry.COST_EVALUATORS), len(op_registry.EVALUATORS)]
    import tilefoundry.dsl.tf as tf

    counts.append(len(tf.__all__))
    for listing, count in zip(listings, counts):
        script = ("import tilefoundry.ops, tilefoundry.dsl.tf\n"
                  "from tilefoundry.semantics import op_registry as r\n"
                  f"print({listing})")
        assert _fresh(script) == str(count), listing


def test_a_family_registers_the_handlers_of_its_own_ops_only():
    # loaded alone, mma's ops (and those of the families it imports) are whole
    script = (
        "import sys\nimport tilefoundry.ops.mma\nfrom tilefoundry.ir.expr import Op\n"
        "from tilefoundry.semantics import op_registry as r\n"
        "loaded = [m for n, m in list(sys.modules.items()) if n.startswith('tilefoundry.ops.')]\n"
        "classes = {v for m in loaded for v in vars(m).values() if isinstance(v, type)\n"
        "           and issubclass(v, Op) and v.__module__ == m.__name__ and v.name}\n"
        "for table in (r.TYPEINFER, r.ACCESS_RELATIONS):\n"
        "    assert set(dict.keys(table)) <= classes, set(dict.keys(table)) - classes\n"
        "    assert classes <= set(dict.keys(table)), classes - set(dict.keys(table))\n"
        "print(len(classes))\n")
    assert int(_fresh(script)) >= 2
