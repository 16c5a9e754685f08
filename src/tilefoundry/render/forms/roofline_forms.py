"""Record form of the roofline family (companions §7.2): the comment states
``ideal-ns`` and ``bound-by`` only (each omitted at its default, the bare
family when both are); compute_ns and memory_ns are the numbers the verdict
was read off, so they are in the JSON projection (every field, derived
generically) rather than on the line."""
from __future__ import annotations

import dataclasses

from tilefoundry.analysis.roofline import RooflineMetadata
from tilefoundry.render.record_forms import RecordForm, register_record_form

_COMMENT_FIELDS = ("ideal_ns", "bound_by")


def _comment(record, options) -> str:
    defaults = {f.name: f.default for f in dataclasses.fields(RooflineMetadata)}
    parts = [RooflineMetadata.family]
    for name in _COMMENT_FIELDS:
        value = getattr(record, name)
        if value != defaults[name]:
            parts.append(f"{name.replace('_', '-')}={value}")
    return " ".join(parts)


register_record_form(RooflineMetadata, RecordForm(comment=_comment))
