"""Record forms of the estimate family (docs/estimate.md). Loaded by
``render.forms.form_of`` when an estimate record is first rendered.

- ``EstimateMetadata``: ``estimate=<ns> bound-by=<bound>`` on a statement.
- ``EstimateSummaryMetadata``: the summary line
  ``estimate predicted-ns=<n> bound-by=<bound>``, then one line per kernel
  ``estimate kernel=<i> site=<file:line:col> ns=<n> bound-by=<b> ctas=<c>
  per-sm=<k> waves=<w> <effect>=<ns>...`` (the effects largest first), and a
  ``estimate not-modelled=...`` line when the target states no facts for an
  effect or the options switched one off. JSON: every field.
"""
from __future__ import annotations

from tilefoundry.analysis.estimate.timings import EstimateMetadata, EstimateSummaryMetadata
from tilefoundry.render.record_forms import RecordForm, register_record_form

__all__ = ["kernel_line"]


def _call_comment(record, options) -> str:
    return f"estimate={record.ns} bound-by={record.bound_by}"


def _headline(record) -> str:
    return (f"estimate predicted-ns={record.predicted_ns} bound-by={record.bound_by} "
            f"launch={record.launch} kernels={len(record.kernels)}")


def kernel_line(kernel) -> str:
    """One kernel's breakdown: where it is, its grid, and what each effect costs."""
    effects = sorted(kernel.effects, key=lambda kv: (-kv[1], kv[0]))
    parts = [f"estimate kernel={kernel.index}", f"site={kernel.site}", f"ns={kernel.ns}",
             f"bound-by={kernel.bound_by}", f"ctas={kernel.ctas}",
             f"per-sm={kernel.ctas_per_sm}", f"waves={kernel.waves}",
             f"dram-bytes={kernel.dram_bytes}", f"l2-bytes={kernel.l2_bytes}"]
    if kernel.overlapped:
        parts.append("overlapped")
    parts.extend(f"{name}={ns}" for name, ns in effects)
    return " ".join(parts)


def _summary(record, options) -> list[str]:
    lines = [_headline(record)]
    lines.extend(kernel_line(k) for k in record.kernels)
    if record.not_modelled:
        lines.append(f"estimate not-modelled={','.join(record.not_modelled)}")
    return lines


register_record_form(EstimateMetadata, RecordForm(comment=_call_comment))
register_record_form(EstimateSummaryMetadata, RecordForm(
    comment=lambda record, options: _headline(record), summary=_summary))
