"""A damaged hardware document is refused by name (issue 41 item 5, the
targets campaign's kinds): a negative figure at its parse, a fact an aggregate
needs removed or out of a field's range when the aggregate is asked for."""
from __future__ import annotations

import dataclasses

import pytest

from tilefoundry.errors import TileFoundryError
from tilefoundry.target.documents import DocumentError, parse_document


def _document(value: str) -> bytes:
    return f'''
[document]
id = "test.device"
kind = "architecture"
family = "cuda"
title = "a test"

[facts.memory.l2.capacity]
value = {value}
unit = "byte"
origin = "vendor"
source = "a test"
conditions = "a test"
'''.encode()


def test_a_negative_hardware_figure_is_refused_at_its_fact():
    with pytest.raises(DocumentError, match=r"fact 'memory.l2.capacity': -5 is negative"):
        parse_document("damaged.toml", _document("-5"))
    assert parse_document("fine.toml", _document("5")).int_value("memory.l2.capacity") == 5


def test_documents_that_do_not_make_an_aggregate_are_refused_by_name(monkeypatch):
    from tilefoundry.target import CudaTarget, EstimateFacts
    from tilefoundry.target import base

    target = CudaTarget("nvidia.h100_sxm")
    real = target._dense_peaks

    monkeypatch.setattr(base, "_FACTS_CACHE", {})
    monkeypatch.setattr(CudaTarget, "_dense_peaks",
                        lambda self: tuple(r for r in real() if r[0] != "f32"))
    with pytest.raises(TileFoundryError, match=r"do not make a valid 'EstimateFacts' \(no fact "
                                               r"'f32'\)"):
        target.get_facts(EstimateFacts)
    monkeypatch.setattr(CudaTarget, "_dense_peaks", real)
    monkeypatch.setattr(base, "_FACTS_CACHE", {})
    facts = target.get_facts(EstimateFacts)
    assert dataclasses.replace(facts) == facts
