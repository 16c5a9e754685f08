"""The kept parses of the shipped documents (hardware/parsed.json): current,
equal to what tomllib gives, and never used for a text other than the one kept."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tilefoundry.target import documents
from tilefoundry.target.documents import filename_for, hardware_dir, kept_parses_text, parse_document

SHIPPED = sorted(p.name for p in hardware_dir().glob("*.toml"))


def test_kept_parses_are_current_and_hold_every_shipped_document():
    kept = (hardware_dir() / documents._PARSED_FILE).read_text(encoding="utf-8")
    assert kept == kept_parses_text(), "hardware/parsed.json is stale: run python tools/gen_hardware_cache.py"
    assert sorted(documents._kept_parses()) == SHIPPED


@pytest.mark.parametrize("filename", SHIPPED)
def test_a_kept_parse_reads_as_the_toml_does(filename, monkeypatch):
    data = (hardware_dir() / filename).read_bytes()
    from_kept = parse_document(filename, data)
    monkeypatch.setattr(documents, "_kept_parses", dict)  # nothing kept: tomllib parses
    assert parse_document(filename, data) == from_kept


def test_a_text_other_than_the_kept_one_is_parsed():
    filename = filename_for("nvidia.sm90")
    data = (hardware_dir() / filename).read_bytes()
    edited = data.replace(b'title = "', b'title = "Edited ', 1)
    assert edited != data
    assert parse_document(filename, edited).title.startswith("Edited ")
    assert parse_document("another_name.toml", data).id == "nvidia.sm90"  # parsed afresh


def test_a_shipped_target_loads_without_tomllib():
    script = ("import sys\nfrom tilefoundry.target import CudaTarget\nCudaTarget('nvidia.h200_sxm')\n"
              "print('tomllib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
