"""Record forms of the estimate family (docs/estimate.md). Loaded by
``render.forms.form_of`` when an estimate record is first rendered.

- ``EstimateMetadata``: ``estimate=<ns> bound-by=<bound>`` on a statement.
- ``EstimateSummaryMetadata``: the summary line
  ``estimate predicted-ns=<n> bound-by=<bound>``, then one line per kind of
  kernel ``estimate kernel=<i> [x<count>] site=<file:line:col> ns=<n>
  bound-by=<b> ctas=<c> per-sm=<k> waves=<w> <effect>=<ns>...`` (the effects
  largest first; kernels of one site and the same figures, a whole model's
  layers, share a line: the first one's index and how many, ``ns`` each), and
  a ``estimate not-modelled=...`` line when the target states no facts for an
  effect or the options switched one off. JSON: every field, every kernel.
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


def kernel_line(kernel, count: int = 1) -> str:
    """One kernel's breakdown: where it is, its grid, and what each effect costs
    (``count`` kernels of the same figures share the line)."""
    effects = sorted(kernel.effects, key=lambda kv: (-kv[1], kv[0]))
    parts = [f"estimate kernel={kernel.index}", *([f"x{count}"] if count > 1 else []),
             f"site={kernel.site}", f"ns={kernel.ns}",
             f"bound-by={kernel.bound_by}", f"ctas={kernel.ctas}",
             f"per-sm={kernel.ctas_per_sm}", f"waves={kernel.waves}",
             f"dram-bytes={kernel.dram_bytes}", f"l2-bytes={kernel.l2_bytes}"]
    if kernel.overlapped:
        parts.append("overlapped")
    parts.extend(f"{name}={ns}" for name, ns in effects)
    return " ".join(parts)


def _same_kernels(kernels) -> list:
    """(first kernel, how many) per kind: one site and the same figures."""
    import dataclasses

    kinds: dict = {}
    for kernel in kernels:
        key = dataclasses.replace(kernel, index=0)
        found = kinds.get(key)
        kinds[key] = (found[0], found[1] + 1) if found else (kernel, 1)
    return list(kinds.values())


def _summary(record, options) -> list[str]:
    lines = [_headline(record)]
    lines.extend(kernel_line(k, count) for k, count in _same_kernels(record.kernels))
    if record.not_modelled:
        lines.append(f"estimate not-modelled={','.join(record.not_modelled)}")
    return lines


register_record_form(EstimateMetadata, RecordForm(comment=_call_comment))
register_record_form(EstimateSummaryMetadata, RecordForm(
    comment=lambda record, options: _headline(record), summary=_summary))
