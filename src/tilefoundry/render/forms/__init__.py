"""Which form renders a record: each family's forms (one module per family here,
standing on the shared ``render.record_forms``), loaded when a record of that
family is first rendered.

compute-cost has no module here: its record reads in the generic form that
``record_forms`` derives from the record's fields. ``packing_forms`` is what
``tilefoundry pack`` prints (summary line, JSON, drawing)."""
from __future__ import annotations

from tilefoundry.render.record_forms import RecordForm, resolved_form

__all__ = ["form_of", "record_comment", "record_json"]


# The shipped families' forms live in render (analysis never imports render);
# each registers when a record of its family is first rendered, so any entry
# point renders them and a run imports only the families it shows (the
# collectives family alone costs a run ~6 ms of class building).
_FAMILY_FORMS = {
    "tilefoundry.analysis.memory.records": "tilefoundry.render.forms.memory_forms",
    "tilefoundry.analysis.performance.timeline": "tilefoundry.render.forms.performance_forms",
    "tilefoundry.analysis.roofline": "tilefoundry.render.forms.roofline_forms",
    "tilefoundry.analysis.collectives": "tilefoundry.render.forms.collectives_forms",
    "tilefoundry.analysis.estimate.timings": "tilefoundry.render.forms.estimate_forms",
}


_LOADED: set = set()  # record classes whose family's forms are imported


def _load_family_forms(cls: type) -> None:
    import importlib

    for klass in cls.__mro__:
        forms = _FAMILY_FORMS.get(klass.__module__)
        if forms is not None:
            importlib.import_module(forms)


def form_of(cls: type) -> RecordForm:
    if cls not in _LOADED:
        _load_family_forms(cls)
        _LOADED.add(cls)
    return resolved_form(cls)


def record_comment(record, options: dict | None = None) -> str:
    return " ".join(form_of(type(record)).comment(record, options or {}).split())


def record_json(record, node=None, context=None) -> dict:
    return form_of(type(record)).project(record, node, context)
