"""What ``tilefoundry run`` and ``tilefoundry check`` print: text and JSON
(kinds "run" and "check", schemas/run.schema.json and check.schema.json)."""
from __future__ import annotations

from tilefoundry.render.json_contract import dumps, stamp

__all__ = ["run_text", "run_json", "check_text", "check_json", "check_documents"]


def _number(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def run_text(selection: str, dims: dict, seed: int, inputs: list, outputs: list) -> str:
    bound = " ".join(f"{k}={v}" for k, v in sorted(dims.items()))
    lines = [f"# run {selection}" + (f" dims {bound}" if bound else "") + f" seed {seed}"]
    for item in inputs:
        lines.append(f"# input {item['name']}: {item['dtype']}{item['shape']} ({item['source']})")
    for o in outputs:
        lines.append(f"{o['name']}: {o['dtype']}{o['shape']} min={_number(o['min'])} "
                     f"max={_number(o['max'])} mean={_number(o['mean'])} "
                     f"nonfinite={o['nonfinite']} {o['checksum']}")
    return "\n".join(lines) + "\n"


def run_json(selection: str, dims: dict, seed: int, inputs: list, outputs: list) -> str:
    return dumps(stamp({"selection": selection, "dims": dict(sorted(dims.items())), "seed": seed,
                        "inputs": inputs, "outputs": outputs}, "run"))


def _verdict_dict(v) -> dict:
    return {"name": v.name, "passed": v.passed, "rtol": v.bound.rtol, "atol": v.bound.atol,
            "bound": v.bound.derivation, "max_abs": _finite(v.max_abs), "max_rel": _finite(v.max_rel),
            "rel_floor": _finite(v.rel_floor),
            "worst_index": list(v.worst_index) if v.worst_index is not None else None,
            "program": _finite(v.program_value), "reference": _finite(v.reference_value),
            "allowed": _finite(v.allowed_value), "reason": v.reason}


def _finite(value):
    if value is None:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else str(value)


def _placed_dict(report) -> dict | None:
    if report is None:
        return None
    m = report.mismatch
    return {"passed": report.passed, "compared": report.compared, "gathered": report.gathered,
            "whole_values": report.whole_values,
            "mismatch": None if m is None else {
                "line": m.line(), "location": m.location, "statement": m.statement,
                "participant": m.participant,
                "element": list(m.element) if m.element is not None else None,
                "logical": _finite(m.logical), "placed": _finite(m.placed), "detail": m.detail}}


def check_documents(results) -> list[dict]:
    return [{"dims": dict(sorted(r.dims.items())), "passed": r.passed, "seed": r.seed, "tie": r.tie,
             "verdicts": [_verdict_dict(v) for v in r.verdicts], "placed": _placed_dict(r.placed)}
            for r in results]


def check_text(selection: str, against: str | None, results, seed: int | None = None) -> str:
    """The text of ``check``; ``seed`` the one asked for (a later draw of its
    sequence, taken where a draw failed at a top-k near tie, is said)."""
    lines = []
    for r in results:
        bound = " ".join(f"{k}={v}" for k, v in sorted(r.dims.items()))
        lines.append(f"# check {selection}" + (f" against {against}" if against else "")
                     + (f" dims {bound}" if bound else ""))
        if seed is not None and r.seed != seed:
            lines.append(f"inputs: drawn from seed {r.seed}, the draw from seed {seed} having failed where "
                         "top-k/argmax scores tie within their bounds (docs/execution.md)")
        if not r.passed and r.tie:
            lines.append(f"near tie: {r.tie}")
        if r.placed is not None:
            p = r.placed
            if p.passed:
                lines.append(f"placed: PASS ({p.compared} assembled values held against the logical "
                             f"run; {p.gathered} ops on assembled operands; {p.whole_values} "
                             "values held whole)")
            else:
                lines.append(f"placed: FAIL {p.mismatch.line()}")
        for v in r.verdicts:
            head = "PASS" if v.passed else "FAIL"
            if v.reason:
                lines.append(f"{v.name}: {head} {v.reason}")
                continue
            worst = "" if v.worst_index is None else (
                f" worst {list(v.worst_index)}: program {v.program_value:.6g}, reference "
                f"{v.reference_value:.6g}, bound allows {v.allowed_value:.3g}")
            lines.append(f"{v.name}: {head} max_abs={v.max_abs:.3g} max_rel={v.max_rel:.3g} "
                         f"(over |reference| >= {v.rel_floor:.3g}){worst}")
            lines.append(f"  bound {v.bound.derivation}")
        lines.append("result: " + ("PASS" if r.passed else "FAIL"))
    return "\n".join(lines) + "\n"


def check_json(selection: str, against: str | None, results) -> str:
    return dumps(stamp({"selection": selection, "against": against,
                        "passed": all(r.passed for r in results),
                        "bindings": check_documents(results)}, "check"))
