"""Shared fixtures for the target tests."""
from __future__ import annotations

import sys
import types

import pytest


@pytest.fixture
def clean_registry():
    """Let a test register Target classes and forget them afterwards."""
    from tilefoundry.target import catalog, registry

    catalog.load_builtins()
    saved = dict(registry._REGISTRY)
    yield catalog
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


@pytest.fixture
def fake_analysis_modules(monkeypatch):
    """Install fake analyzer modules under tilefoundry.analysis.* for get_analyzer.

    Each module holds a module-level ``ANALYZER`` object, the shape the analysis
    room provides; the objects here are plain namespaces with a ``selector``.
    """
    installed = {}
    for selector, module in (("compute-cost", "compute_cost"), ("memory", "memory"),
                             ("roofline", "roofline"), ("performance", "performance")):
        name = f"tilefoundry.analysis.{module}"
        mod = types.ModuleType(name)
        mod.ANALYZER = types.SimpleNamespace(selector=selector, origin="standard")
        monkeypatch.setitem(sys.modules, name, mod)
        installed[selector] = mod.ANALYZER
    custom = types.ModuleType("tests_fake_custom_analysis")
    custom.ANALYZER = types.SimpleNamespace(selector="memory", origin="custom")
    custom.EXTRA = types.SimpleNamespace(selector="occupancy", origin="custom")
    monkeypatch.setitem(sys.modules, "tests_fake_custom_analysis", custom)
    installed["custom-memory"] = custom.ANALYZER
    installed["occupancy"] = custom.EXTRA
    return installed
