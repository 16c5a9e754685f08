"""Shared test fixtures: where the shared golden material lives, and a tiny
program builder for op and semantics tests."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

from tilefoundry.ir.dtype import DType
from tilefoundry.ir.expr import Constant, Var
from tilefoundry.ir.shard import Layout, ShardLayout
from tilefoundry.ir.storage import StorageKind
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.typeinfer import build_call

# CI runs the property tests on a fixed example sequence, so a red build always
# reproduces; local runs keep exploring new examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Every JSON document the suite makes, in this process or a CLI subprocess, is
# checked against its shipped schema before it is printed (docs/json.md).
os.environ["TILEFOUNDRY_VALIDATE_JSON"] = "1"

REPO = Path(__file__).resolve().parents[1]


def load_tool(name: str):
    """The script ``tools/<name>.py`` as a module (tools/ is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
# the golden material is copied into the repository (tools/sync_shared.py)
DATA = REPO / "tests" / "data"
PROGRAMS = DATA / "programs"


def golden_manifest() -> dict:
    return json.loads((PROGRAMS / "expected" / "manifest.json").read_text())


@pytest.fixture
def programs_dir() -> Path:
    return PROGRAMS


class Builder:
    """Tiny program builder: values are typed at once by build_call."""

    T = TensorType
    SK = StorageKind

    @staticmethod
    def var(name, shape, dtype="f32", layout=None, storage=StorageKind.GMEM):
        return Var(name, TensorType(shape, DType.from_name(dtype), layout, storage))

    @staticmethod
    def const(value, dtype="f32"):
        return Constant(value, TensorType((), DType.from_name(dtype), None, StorageKind.UMAT))

    @staticmethod
    def call(op, *args, **where):
        return build_call(op, tuple(args), **where)

    @staticmethod
    def sl(gshape, strides, attrs, mesh):
        return ShardLayout(Layout(tuple(gshape), None if strides is None else tuple(strides)), tuple(attrs), mesh)


@pytest.fixture
def b():
    return Builder
