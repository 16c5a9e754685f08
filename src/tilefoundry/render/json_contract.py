"""The JSON contract every ``--json`` output keeps (docs/json.md).

Each document carries ``schema_version`` and ``tool: {name, version}`` so a
script can tell which contract it reads; the JSON Schemas shipped in
``tilefoundry/schemas/`` state that contract, one per document kind.
"""
from __future__ import annotations

import json

__all__ = ["SCHEMA_VERSION", "SCHEMAS", "tool_info", "stamp", "load_schema", "dumps"]

# Bump on any change a reader must notice: a key removed or renamed, a value's
# meaning or type changed. Adding a key keeps the version (readers ignore keys
# they do not know).
SCHEMA_VERSION = "1.0"

# document kind -> schema file in tilefoundry/schemas/
SCHEMAS = {
    "analyze": "analyze.schema.json",
    "relayout-classify": "relayout-classify.schema.json",
    "intertile-verify": "intertile-verify.schema.json",
    "pack": "pack.schema.json",
}


def tool_info() -> dict:
    """The producing tool, read from the package root (no heavy imports)."""
    from tilefoundry import __version__

    return {"name": "tilefoundry", "version": __version__}


def stamp(data: dict) -> dict:
    """``data`` with the contract's identity keys added (a new dict)."""
    return {"schema_version": SCHEMA_VERSION, "tool": tool_info(), **data}


def dumps(data: dict) -> str:
    """The one spelling of every JSON document: sorted keys, two-space indent,
    a final newline (so two runs diff cleanly)."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


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
                  "ok": all(f["ok"] for f in functions)})
