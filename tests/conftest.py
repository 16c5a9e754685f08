"""Shared test fixtures: where the shared golden material lives."""
from __future__ import annotations

import json
from pathlib import Path

import os

import pytest
from hypothesis import settings

# CI runs the property tests on a fixed example sequence, so a red build always
# reproduces; local runs keep exploring new examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PROGRAMS = SHARED / "programs"


def golden_manifest() -> dict:
    path = PROGRAMS / "expected" / "manifest.json"
    if not path.exists():
        return {"valid": [], "invalid": []}
    return json.loads(path.read_text())


@pytest.fixture
def programs_dir() -> Path:
    if not PROGRAMS.exists():
        pytest.skip("shared/programs is not beside the repository")
    return PROGRAMS
