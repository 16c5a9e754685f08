"""report() and render_analysis(): one result rendered once (analysis §1
rendering rules, companions §7.3–§7.5).

One selection decision (the records of the requested roots' Target-selected
descriptors that the run actually wrote) drives one printer pass. The pass
produces the annotated program, and for every labelled statement the records it
carries; the same row list then yields the JSON calls/loops and the text
comments, so the two surfaces cannot spell one value two ways and both use the
line locations of that one pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from tilefoundry.ir.expr import Call, GridRegionExpr
from tilefoundry.ir.metadata import SourceSpanMetadata
from tilefoundry.render.json_contract import dumps, stamp
from tilefoundry.render.printer import ProgramPrinter, module_text
from tilefoundry.render.forms import form_of, record_comment, record_json
from tilefoundry.render.record_forms import family_of
from tilefoundry.ir.memo import memoised

__all__ = ["AnalysisRendering", "Selection", "select_records", "report", "render_analysis",
           "render_typed"]


@dataclass(frozen=True)
class Selection:
    """The one decision every surface of a run reads."""

    types: tuple  # selected metadata classes, in the order the run wrote them
    summary_order: tuple  # the same classes in requested-root / produces order


@dataclass
class AnalysisRendering:
    """Text, JSON and the annotated program of one result, from one pass.
    ``report`` is built on first use from the pass's rows (a text report never
    reads it: a whole model's 6,000 statements are not projected for nothing),
    and ``json`` is spelled on first use from it."""

    text: str
    program: str
    build_report: object  # () -> dict: the report's data, from the same pass
    summary: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)

    @cached_property
    def report(self) -> dict:
        return self.build_report()

    @cached_property
    def json(self) -> str:
        return dumps(self.report)


def select_records(result) -> Selection:
    """Records of what the caller requested, by the Target-selected descriptors,
    restricted to the types the run actually wrote."""
    target = result.module.resolve_target()
    requested: list[type] = []
    for selector in result.analyses:
        for cls in target.get_analyzer(selector).produces:
            if cls not in requested:
                requested.append(cls)
    written = tuple(result.metadata_types)
    types = tuple(cls for cls in written if cls in requested)
    order = tuple(cls for cls in requested if cls in written)
    return Selection(types, order)


def _header(result) -> list[str]:
    target = result.module.resolve_target()
    parts = [f"target={target.identity}", f"module={result.module.name}",
             f"function={result.function.name}"]
    if result.level is not None:
        parts.append(f"topology={result.level}")
    return [
        "# analysis " + " ".join(p for p in parts if not p.endswith("=")),
        f"# selection requested={','.join(result.analyses)} executed={','.join(result.executed)}",
    ] + [f"# refused {family}: {refusal_reason(family, reason)}" for family, reason in result.refused]


def collapsed(lines: list[str]) -> list[str]:
    """``analyze --summary``'s lines: a line said several times (an advisory of
    each of a model's layers) once, where it first stands, with ``(xN)``."""
    counts: dict = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    said = []
    for line in counts:
        said.append(line if counts[line] == 1 else f"{line} (x{counts[line]})")
    return said


def refusal_reason(family: str, reason: str) -> str:
    """A family's refusal without the ``family: `` its message may start with."""
    return reason[len(family) + 2:] if reason.startswith(f"{family}: ") else reason


def refused_json(result) -> list:
    """``analyze --all``'s refusals: one object per family that could not answer."""
    return [{"family": family, "reason": refusal_reason(family, reason)}
            for family, reason in getattr(result, "refused", ())]


def _summary_lines(function, selection: Selection, options: dict) -> list[str]:
    lines = []
    for cls in selection.summary_order:
        record = function.get_metadata(cls)
        if record is None:
            continue
        summary = getattr(form_of(cls), "summary", None)
        texts = summary(record, options) if summary else [record_comment(record, options)]
        lines.extend(f"# {text}" for text in texts)
    return lines


def _totals(result, function, selection: Selection) -> dict | None:
    families = {family_of(cls): function.get_metadata(cls) for cls in result.metadata_types}
    wanted = {"compute-cost", "memory"} & set(result.analyses)
    bounded = "roofline" in result.analyses and (
        families.get("compute-cost") is not None or families.get("traffic") is not None)
    if not wanted and not bounded:
        return None
    flops = families.get("compute-cost")
    traffic = families.get("traffic")
    moved = record_json(traffic, function).get("whole", {}) if traffic is not None else {}
    level = _bounded_level(result)
    if level is not None:
        # roofline's bounded evidence (analysis §1.2.3): the bytes the bound
        # divides are the bandwidth-level bytes, not every level's
        moved = {k: v for k, v in moved.items() if k == level}
    return {
        "flops": {k: v for k, v in flops.flops} if flops is not None else {},
        "traffic": moved,
    }


def _bounded_level(result) -> str | None:
    """The bandwidth level whose bytes roofline's bounded evidence reports,
    when roofline is requested and memory (which states every level) is not;
    else None. Read only through ThroughputFacts."""
    if "roofline" not in result.analyses or "memory" in result.analyses:
        return None
    from tilefoundry.errors import TileFoundryError
    from tilefoundry.target.facts import ThroughputFacts

    try:
        return result.module.resolve_target().get_facts(ThroughputFacts).bandwidth_level
    except TileFoundryError:  # no facts: roofline could not have run
        return None


def _bounded_memory(result, function) -> dict | None:
    """With roofline requested and memory not, function_records.memory is the
    reduced view (analysis §1.2.3): level and peak_bytes per footprint row, and
    nothing else memory wrote (persistent bytes, capacities, advisories,
    lifetimes, allocation)."""
    if "roofline" not in result.analyses or "memory" in result.analyses:
        return None
    cls = next((c for c in result.metadata_types if family_of(c) == "memory"), None)
    record = function.get_metadata(cls) if cls is not None else None
    if record is None:
        return None
    return {"footprint": [{"level": row.level, "peak_bytes": row.peak_bytes}
                          for row in record.footprint]}


def source_of(node) -> str | None:
    """``file:line:col`` of the authored statement a node came from; a call
    inlined from a child Module keeps its own statement's span (the view
    copies SourceSpanMetadata), so this names the child's file line."""
    span = node.get_metadata(SourceSpanMetadata)
    return str(span) if span is not None else None


def _values(printer: ProgramPrinter, labelled: list) -> list[dict]:
    """Every parameter and labelled statement with its printed type, in
    program order: the typed program as data."""
    def spelled(type_, **options) -> str:
        # one line, as the printer's comments spell a type
        return " ".join(printer.fmt.annotation(type_, **options).split())

    rows = [{"kind": "param", "name": printer.names[id(p)], "value": None,
             "type": spelled(p.type, const=p.is_const), "source": None}
            for p in printer.function.params]
    for node in labelled:
        loop = isinstance(node, GridRegionExpr)
        rows.append({
            "kind": "loop" if loop else "call",
            "name": node.induction_var.name if loop else printer.names[id(node)],
            "value": printer.labels.get(id(node)),
            "type": spelled(node.type),
            "source": source_of(node),
        })
    return rows


def _target_or_none(module):
    """The module's resolved target; None where none resolves (the typed
    program needs no target)."""
    from tilefoundry.errors import TileFoundryError

    try:
        return module.resolve_target()
    except TileFoundryError:
        return None


def _target_identity(module) -> str | None:
    target = _target_or_none(module)
    return None if target is None else target.identity


def _document(module, function, *, topology, requested, executed, function_records,
              calls, loops, totals, program, values, refused=()) -> dict:
    """The analyze report: the same top-level keys whatever families ran
    (docs/json.md); an absent family is an empty list/dict or null. ``refused``
    (``--all``'s families that could not answer) is there only when one did not."""
    document = {
        "target": _target_identity(module),
        "module": module.name,
        "function": function.name,
        "topology": topology,
        "requested": list(requested),
        "executed": list(executed),
        "function_records": function_records,
        "calls": calls,
        "loops": loops,
        "totals": totals,
        "program": program,
        "values": values,
    }
    if refused:
        document["refused"] = list(refused)
    return stamp(document, "analyze")


def _render(result, operands: bool = False) -> AnalysisRendering:
    selection = select_records(result)
    options = {"operands": bool(operands),
               # the report's own identity, for a summary form that states it
               # (performance root=<Module>::<function>, analysis §1.2.4)
               "root": f"{result.module.name}::{result.function.name}"}
    function = result.function
    rows: list[tuple[object, list]] = []
    labelled: list = []

    def comments(node) -> list[str]:
        records = node.records_of(selection.types)
        labelled.append(node)
        if records:
            rows.append((node, records))
        texts = [spelled(r) for r in records]
        # what a gather's indices select, beside the traffic that counts its table whole
        if getattr(getattr(node, "op", None), "name", None) == "index_select" and \
                any(family_of(r) == "traffic" for r in records):
            texts.append(gathered_comment(gathered_of(node)))
        return texts

    said: dict = {}  # record -> its comment: a model's layers repeat their records
    said_of: dict = {}  # id(record) -> (record, comment): one record object often serves many calls

    def spelled(record) -> str:
        kept = said_of.get(id(record))
        if kept is None:
            kept = said_of[id(record)] = (
                record, memoised(said, record, lambda: record_comment(record, options)))
        return kept[1]

    printer = ProgramPrinter(function, comments=comments)
    printed = printer.run()

    def build_report() -> dict:
        calls, loops = _rows_json(rows, printed, result)
        return _document(
            result.module, function, topology=result.level, requested=result.analyses,
            executed=result.executed,
            function_records=_function_records(result, selection, printed.names), calls=calls,
            loops=loops, totals=_totals(result, function, selection), program=printed.text,
            values=_values(printer, labelled), refused=refused_json(result))

    summary = _header(result) + _summary_lines(function, selection, options)
    text = "\n".join(summary) + "\n\n" + printed.text
    return AnalysisRendering(text, printed.text, build_report, summary, dict(printed.labels))


def _rows_json(rows: list, printed, result) -> tuple[list, list]:
    """(calls, loops): each labelled statement's records as the report's rows."""
    calls, loops = [], []
    for node, records in rows:
        label = printed.labels.get(id(node))
        if label is None:
            continue
        entry: dict = {}
        for record in records:
            entry[family_of(record)] = record_json(record, node, printed.names)
            extra = form_of(type(record)).row_extra
            if extra is not None:
                entry.update(extra(record, node, result))
        entry["source"] = source_of(node)
        if "traffic" in entry and getattr(getattr(node, "op", None), "name", None) == "index_select":
            entry["gathered"] = gathered_of(node)
        if isinstance(node, GridRegionExpr):
            entry["value"] = node.induction_var.name
            loops.append(entry)
        elif isinstance(node, Call):
            entry["value"] = label
            calls.append(entry)
    return calls, loops


def gathered_of(node) -> dict:
    """An index_select's data-dependent read: rows, their bytes, and the bytes of
    the whole table the traffic counts (ops.indexing.gathered_rows; issue 40 item 3)."""
    from tilefoundry.ops.indexing import gathered_rows

    return gathered_rows(node.op, node.args[0].type, node.args[1].type)


def gathered_comment(gathered: dict) -> str:
    rows = gathered["rows"]
    return (f"gathered rows={rows} bytes={gathered['bytes']} of={gathered['of_bytes']} (traffic "
            "counts x whole: the widest legal access of runtime indices)")


def render_typed(module, function, *, param_names: dict | None = None,
                 topologies: tuple | None = None) -> AnalysisRendering:
    """The typed program (no family ran) as text and as the analyze report:
    ``program`` holds the text, ``values`` each value's type, and every
    family key is empty (docs/json.md). The text ends with the Module the
    function is analysed in (``module_text``), so it is a program again;
    ``topologies`` are the effective ones at the printed binding (default:
    the module's own)."""
    labelled: list = []

    def note(node) -> list[str]:
        labelled.append(node)
        return []

    printer = ProgramPrinter(function, param_names=param_names, comments=note)
    printed = printer.run()
    if topologies is None:
        topologies = module.effective_topologies()
    text = printed.text + module_text(module, function, tuple(topologies), _target_or_none(module))
    def build_report() -> dict:
        return _document(
            module, function, topology=None, requested=(), executed=(), function_records={},
            calls=[], loops=[], totals=None, program=text, values=_values(printer, labelled))

    return AnalysisRendering(text, text, build_report, [], dict(printed.labels))


def report(result) -> dict:
    """Project one composed Analyze result into the shared rendering structure
    (the JSON report's data)."""
    return _render(result).report


def render_analysis(result, *, operands: bool = False) -> AnalysisRendering:
    """Render one annotated program and its report data in a single pass."""
    return _render(result, operands)


def function_report(result) -> dict:
    """The analyze report without its per-node parts (``calls``, ``loops``,
    ``values`` left empty and ``program`` the empty string): what a row of
    headline figures reads. The program is not printed at all: a function
    record's projection names no value, and a sweep pays for every point."""
    selection = select_records(result)
    function = result.function
    return _document(
        result.module, function, topology=result.level, requested=result.analyses,
        executed=result.executed, function_records=_function_records(result, selection, None),
        calls=[], loops=[], totals=_totals(result, function, selection), program="", values=[])


def _function_records(result, selection: Selection, names) -> dict:
    """The function-level record of each selected family, by family name."""
    function = result.function
    found = {}
    for cls in selection.types:
        record = function.get_metadata(cls)
        if record is not None:
            found[family_of(cls)] = record_json(record, function, names)
    reduced = _bounded_memory(result, function)
    if reduced is not None:
        found.setdefault("memory", reduced)
    return found
