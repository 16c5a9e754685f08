"""Hardware documents: every number has a source; unavailable is written, never guessed."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib

import pytest

from tilefoundry.target import documents as docs_mod
from tilefoundry.target.documents import (
    ORIGINS,
    DocumentError,
    document_ids,
    filename_for,
    hardware_dir,
    load_document,
    parse_document,
)

ALL_IDS = ("apple.amx", "apple.m2_pro", "ibm.spyre", "ibm.spyre_32core", "nvidia.b200_sxm",
           "nvidia.h100_sxm", "nvidia.h200_sxm", "nvidia.sm100", "nvidia.sm90")


def _raw(doc_id):
    return tomllib.loads((hardware_dir() / filename_for(doc_id)).read_text("utf-8"))


def _raw_leaves(table, prefix=""):
    for key, sub in table.items():
        path = f"{prefix}.{key}" if prefix else key
        if "value" in sub or "status" in sub:
            yield path, sub
        else:
            yield from _raw_leaves(sub, path)


def test_target_documents_one_per_architecture_and_device():
    assert document_ids() == ALL_IDS
    assert document_ids(kind="architecture") == ("apple.amx", "ibm.spyre", "nvidia.sm100",
                                                 "nvidia.sm90")
    assert document_ids(family="cuda", kind="device") == ("nvidia.b200_sxm", "nvidia.h100_sxm",
                                                          "nvidia.h200_sxm")
    files = sorted(p.name for p in hardware_dir().glob("*.toml"))
    assert files == sorted(filename_for(i) for i in ALL_IDS)


@pytest.mark.parametrize("doc_id", ALL_IDS)
def test_target_documents_every_number_has_a_source(doc_id):
    """Read the raw TOML (not our parser) so that this cannot pass by construction."""
    raw = _raw(doc_id)
    leaves = list(_raw_leaves(raw["facts"]))
    assert leaves
    for path, leaf in leaves:
        if "status" in leaf:
            assert leaf["status"] == "unavailable", path
            assert "value" not in leaf, path
            assert leaf["conditions"].strip(), path
            continue
        assert isinstance(leaf["value"], (int, str, list)), path
        assert not isinstance(leaf["value"], float), path
        for key in ("unit", "origin", "source", "conditions"):
            assert isinstance(leaf.get(key), str) and leaf[key].strip(), (path, key)
        assert leaf["origin"] in ORIGINS, path
        if leaf["origin"] == "derived":
            assert leaf.get("derivation", "").strip(), path


@pytest.mark.parametrize("doc_id", ALL_IDS)
def test_target_documents_contain_no_float(doc_id):
    def walk(value):
        assert not isinstance(value, float), value
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(_raw(doc_id))


def test_target_documents_every_projected_number_comes_from_a_document():
    """Every int a projection states is a document value or an integer division of one
    (the §6.5 per-unit rates) -- no number is hard-coded in code."""
    from tilefoundry.target import (AmxTarget, CudaTarget, MemoryHierarchyFacts,
                                    PerformanceServiceFacts, ThroughputFacts)

    for target in (CudaTarget("nvidia.h200_sxm"), CudaTarget("nvidia.b200_sxm"),
                   CudaTarget("nvidia.h100_sxm"), AmxTarget()):
        values = {f.value for d in target.documents for f in d.facts.values()
                  if isinstance(f.value, int)}
        mem = target.get_facts(MemoryHierarchyFacts)
        stated = [lv.capacity_bytes for lv in mem.explicit_levels + mem.implicit_levels]
        stated += [r.shared_capacity_bytes for r in mem.relations]
        thr = target.get_facts(ThroughputFacts)
        stated += [r for _, r in thr.peak_flops_per_second]
        stated.append(thr.memory_bandwidth_bytes_per_second)
        for number in stated:
            assert number is None or number in values, (target, number)
        if isinstance(target, CudaTarget):
            svc = target.get_facts(PerformanceServiceFacts)
            for _, rate in svc.unit_ops:
                assert rate in values


def test_target_documents_unavailable_reads_as_none():
    doc = load_document("nvidia.h200_sxm")
    fact = doc.fact("throughput.f4e2m1")
    assert not fact.available
    assert (fact.value, fact.unit, fact.origin, fact.source) == (None, None, None, None)
    assert "FP4" in fact.conditions


def test_target_documents_digest_is_sha256_of_file():
    for doc_id in ALL_IDS:
        doc = load_document(doc_id)
        data = (hardware_dir() / doc.filename).read_bytes()
        assert doc.digest == hashlib.sha256(data).hexdigest()


def test_target_documents_loaded_once_and_cached():
    assert load_document("nvidia.sm90") is load_document("nvidia.sm90")


def test_target_documents_missing_fact_is_an_error():
    with pytest.raises(DocumentError, match="states no fact 'compute.nope'"):
        load_document("nvidia.sm90").fact("compute.nope")
    with pytest.raises(DocumentError, match="no hardware document 'x.y'"):
        load_document("x.y")


HEADER = b'[document]\nid = "t.dev"\nkind = "architecture"\nfamily = "t"\ntitle = "T"\n'


def _leaf(body: str) -> bytes:
    return HEADER + b"[facts.a.b]\n" + body.encode()


GOOD = 'value = 1\nunit = "byte"\norigin = "vendor"\nsource = "s"\nconditions = "c"\n'


def test_target_documents_parser_accepts_a_minimal_document():
    doc = parse_document("t.toml", _leaf(GOOD))
    assert doc.value("a.b") == 1
    assert doc.fact("a.b").origin == "vendor"


@pytest.mark.parametrize("body,message", [
    ('value = 1.5\nunit = "x"\norigin = "vendor"\nsource = "s"\nconditions = "c"\n', "float"),
    ('value = 1\nunit = "x"\norigin = "vendor"\nconditions = "c"\n', "missing \\['source'\\]"),
    ('value = 1\nunit = "x"\norigin = "guessed"\nsource = "s"\nconditions = "c"\n', "origin 'guessed'"),
    ('value = 1\nunit = "x"\norigin = "derived"\nsource = "s"\nconditions = "c"\n', "derivation"),
    ('value = "unavailable"\nunit = "x"\norigin = "vendor"\nsource = "s"\nconditions = "c"\n',
     'status = \\"unavailable\\"'),
    ('status = "unavailable"\n', "exactly"),
    ('status = "unavailable"\nconditions = "c"\nvalue = 3\n', "exactly"),
    ('value = 1\nunit = "x"\norigin = "vendor"\nsource = ""\nconditions = "c"\n', "non-empty"),
    ('value = true\nunit = "x"\norigin = "vendor"\nsource = "s"\nconditions = "c"\n', "boolean"),
    ('value = 1\nunit = "x"\norigin = "vendor"\nsource = "s"\nconditions = "c"\nnote = "n"\n',
     "unknown keys"),
])
def test_target_documents_parser_refuses_bad_leaves(body, message):
    with pytest.raises(DocumentError, match=message):
        parse_document("t.toml", _leaf(body))


def test_target_documents_parser_refuses_bad_headers():
    with pytest.raises(DocumentError, match="missing \\[document\\]"):
        parse_document("t.toml", b"[facts.a]\n" + GOOD.encode())
    with pytest.raises(DocumentError, match="names its architecture"):
        parse_document("t.toml", HEADER.replace(b'"architecture"', b'"device"') + b"[facts.a]\n"
                       + GOOD.encode())
    with pytest.raises(DocumentError, match="not valid TOML"):
        parse_document("t.toml", b"[document\n")


def test_target_import_is_light():
    code = ("import sys, time; t = time.perf_counter(); import tilefoundry.target; "
            "from tilefoundry.target import CudaTarget, CpuTarget, AmxTarget, Target, "
            "TopologyLimitFacts; "
            "bad = [m for m in ('numpy', 'islpy', 'ortools', 'tomllib') if m in sys.modules]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_target_module_paths_exist():
    from tilefoundry.target.amx.target import AmxTarget
    from tilefoundry.target.base import Target

    assert issubclass(AmxTarget, Target)
    assert docs_mod.__name__ == "tilefoundry.target.documents"


def test_target_documents_cuda_devices_state_every_leaf_a_projection_reads():
    required = ("compute.sm_count", "memory.hbm.capacity", "memory.hbm.bandwidth",
                "memory.hbm.owner", "memory.l2.capacity", "service.integer",
                "service.predicate", "service.select", "service.special")
    for doc_id in document_ids(family="cuda", kind="device"):
        doc = load_document(doc_id)
        for path in required:
            doc.fact(path)  # raises DocumentError when absent
        assert any(p.startswith("throughput.") for p in doc.facts)
        assert doc.value("compute.sm_count") > 0
