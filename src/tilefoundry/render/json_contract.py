"""The JSON contract every ``--json`` output keeps (docs/json.md).

Each document carries ``schema_version`` and ``tool: {name, version}`` so a
script can tell which contract it reads; the JSON Schemas shipped in
``tilefoundry/schemas/`` state that contract, one per document kind.
"""
from __future__ import annotations

import json

__all__ = ["SCHEMA_VERSION", "SCHEMAS", "VALIDATE_ENV", "tool_info", "stamp", "load_schema",
           "dumps", "validation_errors"]

# Bump on any change a reader must notice: a key removed or renamed, a value's
# meaning or type changed. Adding a key keeps the version (readers ignore keys
# they do not know).
SCHEMA_VERSION = "1.2"  # 1.1: pack settled_by gains "greedy"; 1.2: check bindings gain seed and tie

# document kind -> schema file in tilefoundry/schemas/
SCHEMAS = {
    "analyze": "analyze.schema.json",
    "analyze-rows": "analyze-rows.schema.json",
    "analyze-top": "analyze-top.schema.json",
    "analyze-breakdown": "analyze-breakdown.schema.json",
    "relayout-classify": "relayout-classify.schema.json",
    "intertile-verify": "intertile-verify.schema.json",
    "models": "models.schema.json",
    "pack": "pack.schema.json",
    "run": "run.schema.json",
    "check": "check.schema.json",
    "sweep-report": "sweep-report.schema.json",
    "diff": "diff.schema.json",
    "place": "place.schema.json",
}

# Set (to anything but "" or "0") to check every document against its schema
# before it is printed; the test suite sets it, so every JSON it makes is checked.
VALIDATE_ENV = "TILEFOUNDRY_VALIDATE_JSON"


def tool_info() -> dict:
    """The producing tool, read from the package root (no heavy imports)."""
    from tilefoundry import __version__

    return {"name": "tilefoundry", "version": __version__}


def stamp(data: dict, kind: str) -> dict:
    """``data`` with the contract's identity keys added (a new dict): the
    version, the producing tool and the document ``kind`` (a key of
    ``SCHEMAS``), so a reader knows which schema states it."""
    if kind not in SCHEMAS:
        raise ValueError(f"unknown JSON document kind '{kind}'; known: {', '.join(sorted(SCHEMAS))}")
    return {"schema_version": SCHEMA_VERSION, "tool": tool_info(), "kind": kind, **data}


def dumps(data, kind: str | None = None) -> str:
    """The one spelling of every JSON document: sorted keys, two-space indent,
    a final newline (so two runs diff cleanly). ``kind`` names the schema of a
    document that carries no ``kind`` key (the bare ``models --json`` list).

    With ``VALIDATE_ENV`` set, a document that breaks its schema raises
    ``ValueError`` instead of being printed."""
    import os

    if os.environ.get(VALIDATE_ENV, "") not in ("", "0"):
        kind = kind or (data.get("kind") if isinstance(data, dict) else None)
        errors = validation_errors(kind, data) if kind else ["the document names no kind"]
        if errors:
            raise ValueError(f"JSON document of kind {kind!r} breaks its schema: " + "; ".join(errors))
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


_VALIDATORS: dict = {}


def validation_errors(kind: str, document) -> list[str]:
    """Where ``document`` breaks the schema of ``kind`` (at most ten, by path);
    empty when it keeps it. Needs jsonschema (the ``test`` extra)."""
    import jsonschema

    validator = _VALIDATORS.get(kind)
    if validator is None:
        validator = _VALIDATORS[kind] = jsonschema.Draft202012Validator(load_schema(kind))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    return [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:10]]


def load_schema(kind: str) -> dict:
    """The shipped JSON Schema of one document kind (see ``SCHEMAS``)."""
    from importlib.resources import files

    path = files("tilefoundry").joinpath("schemas", SCHEMAS[kind])
    return json.loads(path.read_text(encoding="utf-8"))


def verify_document(path: str, tiles: int | None, results) -> dict:
    """`intertile verify --json`: per function its diagnostics (empty = ok).

    ``results`` pairs each checked function (``name``, ``loc``) with its
    Diagnostic list (``rule``, ``op``, ``message``, ``loc``)."""
    functions = [{
        "name": fn.name,
        "loc": fn.loc,
        "ok": not diags,
        "diagnostics": [{"rule": d.rule, "op": d.op, "message": d.message, "loc": d.loc,
                         "text": str(d)} for d in diags],
    } for fn, diags in results]
    return stamp({"file": path, "tiles": tiles, "functions": functions,
                  "ok": all(f["ok"] for f in functions)}, "intertile-verify")
