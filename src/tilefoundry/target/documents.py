"""Hardware documents: every target number, with where it came from.

A document is one TOML file under ``tilefoundry/target/hardware/``, one per
architecture or device. It is parsed with the standard library's ``tomllib``
on first use and cached; importing this module reads nothing. The shipped
files' parses are also kept in ``hardware/parsed.json`` beside them (with the
exact text each was parsed from; ``tools/gen_hardware_cache.py`` writes it,
tests/target hold it current): a file whose text is the one kept there is read
from it, any other is parsed, so an edited document is never read stale.
tomllib's import and parse cost every run ~7 ms; the JSON, a fraction of one.

Layout (see docs/targets.md)::

    [document]
    id = "nvidia.h200_sxm"        # the document id (a device id is a target identity)
    kind = "device"               # "architecture" or "device"
    family = "cuda"               # which Target class reads it
    architecture = "nvidia.sm90"  # devices only: the architecture document they extend
    title = "NVIDIA H200 SXM"

    [facts.compute.sm_count]      # one leaf per fact; its dotted path is compute.sm_count
    value = 132
    unit = "count"
    origin = "vendor"             # vendor | measured | reference | derived | estimated
    source = "https://..."
    conditions = "what the figure covers"
    derivation = "..."            # required when origin = "derived"

    [facts.memory.l2.bandwidth]   # a figure nobody published
    status = "unavailable"
    conditions = "why there is no number"

Values are integers, strings, or lists of strings; a float anywhere is refused,
so no inexact number can enter a record.
"""
from __future__ import annotations

import json
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from tilefoundry.errors import TileFoundryError
from tilefoundry.ir.frozen import frozen_record

__all__ = [
    "ORIGINS",
    "DocumentError",
    "Fact",
    "HardwareDocument",
    "document_ids",
    "filename_for",
    "find_document",
    "hardware_dir",
    "load_document",
]

#: The provenance classes a fact may carry.
ORIGINS = ("vendor", "measured", "reference", "derived", "estimated")

_LEAF_KEYS = frozenset({"value", "unit", "origin", "source", "conditions", "derivation"})
_UNAVAILABLE_KEYS = frozenset({"status", "conditions"})
_HEADER_KEYS = frozenset({"id", "kind", "family", "architecture", "title"})


class DocumentError(TileFoundryError):
    """A hardware document is missing, malformed or lacks a fact a target reads."""


FactValue = int | str | tuple[str, ...]


@frozen_record
class Fact:
    """One leaf of a hardware document.

    ``value`` is None exactly when the figure is unavailable; then ``unit``,
    ``origin`` and ``source`` are None too and ``conditions`` says why.
    """

    path: str
    value: FactValue | None
    unit: str | None
    origin: str | None
    source: str | None
    conditions: str
    derivation: str | None = None

    @property
    def available(self) -> bool:
        return self.value is not None


@frozen_record
class HardwareDocument:
    """A parsed hardware document: header, digest and its facts by dotted path."""

    id: str
    kind: str
    family: str
    architecture: str | None
    title: str
    filename: str
    data: bytes = field(repr=False)
    facts: Mapping[str, Fact]

    @property
    def digest(self) -> str:
        """The sha256 of the document's bytes, computed when asked: only
        ``target show`` states it, and hashlib's import alone costs every run
        ~9 ms."""
        import hashlib

        return hashlib.sha256(self.data).hexdigest()

    def fact(self, path: str) -> Fact:
        try:
            return self.facts[path]
        except KeyError:
            raise DocumentError(
                f"hardware document {self.id!r} ({self.filename}) states no fact '{path}'"
            ) from None

    def value(self, path: str) -> FactValue | None:
        """The fact's value, or None when the document marks it unavailable."""
        return self.fact(path).value

    def int_value(self, path: str) -> int | None:
        value = self.value(path)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise DocumentError(
                f"hardware document {self.id!r}: fact '{path}' must be an integer, got {value!r}"
            )
        return value

    def sorted_facts(self) -> tuple[Fact, ...]:
        return tuple(self.facts[p] for p in sorted(self.facts))


def hardware_dir() -> Path:
    return Path(__file__).resolve().parent / "hardware"


# ------------------------------------------------------------------------- parsing

def _fail(filename: str, message: str) -> DocumentError:
    return DocumentError(f"hardware document {filename}: {message}")


def _parse_value(filename: str, path: str, value: object) -> FactValue:
    if isinstance(value, bool):
        raise _fail(filename, f"fact '{path}': a boolean is not a hardware figure")
    if isinstance(value, int):
        if value < 0:  # a size, a rate, a latency, a count: never below zero
            raise _fail(filename, f"fact '{path}': {value} is negative; a hardware figure "
                                  "is a size, rate, latency or count, never below zero")
        return value
    if isinstance(value, float):
        raise _fail(filename, f"fact '{path}': {value!r} is a float; write the exact integer")
    if isinstance(value, str):
        if value == "unavailable":
            raise _fail(filename, f"fact '{path}': write status = \"unavailable\", not a value")
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _fail(filename, f"fact '{path}': unsupported value {value!r}")


def _parse_leaf(filename: str, path: str, table: dict) -> Fact:
    keys = set(table)
    if "status" in keys:
        if table["status"] != "unavailable" or keys != _UNAVAILABLE_KEYS:
            raise _fail(filename, f"fact '{path}': an unavailable fact has exactly "
                                  "status = \"unavailable\" and conditions")
        conditions = table["conditions"]
        if not isinstance(conditions, str) or not conditions.strip():
            raise _fail(filename, f"fact '{path}': conditions must say why it is unavailable")
        return Fact(path, None, None, None, None, conditions)
    unknown = keys - _LEAF_KEYS
    if unknown:
        raise _fail(filename, f"fact '{path}': unknown keys {sorted(unknown)}")
    required = {"value", "unit", "origin", "source", "conditions"}
    missing = required - keys
    if missing:
        raise _fail(filename, f"fact '{path}': missing {sorted(missing)}")
    for key in ("unit", "origin", "source", "conditions"):
        if not isinstance(table[key], str) or not table[key].strip():
            raise _fail(filename, f"fact '{path}': {key} must be a non-empty string")
    origin = table["origin"]
    if origin not in ORIGINS:
        raise _fail(filename, f"fact '{path}': origin {origin!r} is not one of {list(ORIGINS)}")
    derivation = table.get("derivation")
    if origin == "derived":
        if not isinstance(derivation, str) or not derivation.strip():
            raise _fail(filename, f"fact '{path}': a derived fact states its derivation")
    elif derivation is not None:
        raise _fail(filename, f"fact '{path}': only a derived fact carries a derivation")
    return Fact(path, _parse_value(filename, path, table["value"]), table["unit"], origin,
                table["source"], table["conditions"], derivation)


def _is_leaf(table: dict) -> bool:
    return "value" in table or "status" in table


def _walk(filename: str, prefix: str, table: dict, out: dict[str, Fact]) -> None:
    for key, sub in table.items():
        path = f"{prefix}.{key}" if prefix else key
        if not isinstance(sub, dict):
            raise _fail(filename, f"'facts.{path}' must be a table with value or status")
        if _is_leaf(sub):
            out[path] = _parse_leaf(filename, path, sub)
        else:
            _walk(filename, path, sub, out)


_PARSED_FILE = "parsed.json"


@lru_cache(maxsize=None)
def _kept_parses() -> dict:
    """file name -> {"toml": text, "parsed": tables} of the shipped documents."""
    try:
        return json.loads((hardware_dir() / _PARSED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no file, or not JSON: every document is parsed
        return {}


def _tables(filename: str, data: bytes) -> dict:
    """The document's TOML tables: the kept ones when ``data`` is the text kept."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(filename, f"not valid TOML: {exc}") from None
    kept = _kept_parses().get(filename)
    if kept is not None and kept["toml"] == text:
        return kept["parsed"]
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(filename, f"not valid TOML: {exc}") from None


def kept_parses_text() -> str:
    """``hardware/parsed.json`` as it should read: every shipped document that
    JSON holds exactly (ints, strings, lists and tables), with its text."""
    import tomllib

    kept = {}
    for file in sorted(hardware_dir().glob("*.toml")):
        text = file.read_bytes().decode("utf-8")  # as _tables reads it: no newline translation
        parsed = tomllib.loads(text)
        if json.loads(json.dumps(parsed)) == parsed:
            kept[file.name] = {"toml": text, "parsed": parsed}
    return json.dumps(kept, indent=1, ensure_ascii=False) + "\n"


def parse_document(filename: str, data: bytes) -> HardwareDocument:
    """Parse and validate one document's bytes (the unit tests call this directly)."""
    raw = _tables(filename, data)
    extra = set(raw) - {"document", "facts"}
    if extra:
        raise _fail(filename, f"unknown top-level tables {sorted(extra)}")
    header = raw.get("document")
    if not isinstance(header, dict):
        raise _fail(filename, "missing [document] table")
    unknown = set(header) - _HEADER_KEYS
    if unknown:
        raise _fail(filename, f"[document] has unknown keys {sorted(unknown)}")
    for key in ("id", "kind", "family", "title"):
        if not isinstance(header.get(key), str) or not header[key]:
            raise _fail(filename, f"[document] needs a string '{key}'")
    kind = header["kind"]
    if kind not in ("architecture", "device"):
        raise _fail(filename, f"[document] kind must be architecture or device, got {kind!r}")
    architecture = header.get("architecture")
    if kind == "device" and not isinstance(architecture, str):
        raise _fail(filename, "a device document names its architecture")
    if kind == "architecture" and architecture is not None:
        raise _fail(filename, "an architecture document names no architecture")
    facts: dict[str, Fact] = {}
    _walk(filename, "", raw.get("facts", {}), facts)
    if not facts:
        raise _fail(filename, "states no facts")
    return HardwareDocument(
        id=header["id"], kind=kind, family=header["family"], architecture=architecture,
        title=header["title"], filename=filename,
        data=bytes(data),
        facts=MappingProxyType(dict(sorted(facts.items()))),
    )


def filename_for(doc_id: str) -> str:
    """The file a document id lives in: dots become underscores (``nvidia.sm90`` ->
    ``nvidia_sm90.toml``). Every shipped document follows this rule."""
    return doc_id.replace(".", "_") + ".toml"


@lru_cache(maxsize=None)
def _parse_file(filename: str) -> HardwareDocument | None:
    file = hardware_dir() / filename
    try:
        if not file.is_file():
            return None
    except (OSError, ValueError):  # a name no file can have (too long, a NUL): no document
        return None
    return parse_document(filename, file.read_bytes())


def _check_device(doc: HardwareDocument) -> None:
    if doc.kind != "device":
        return
    arch = _parse_file(filename_for(doc.architecture))
    if arch is None or arch.id != doc.architecture or arch.kind != "architecture" \
            or arch.family != doc.family:
        raise _fail(doc.filename, f"architecture {doc.architecture!r} is not a "
                                  f"{doc.family} architecture document")


@lru_cache(maxsize=None)
def _all_documents() -> Mapping[str, HardwareDocument]:
    docs: dict[str, HardwareDocument] = {}
    for file in sorted(hardware_dir().glob("*.toml")):
        doc = _parse_file(file.name)
        if file.name != filename_for(doc.id):
            raise _fail(file.name, f"id {doc.id!r} belongs in {filename_for(doc.id)}")
        docs[doc.id] = doc
    for doc in docs.values():
        _check_device(doc)
    return MappingProxyType(docs)


def document_ids(*, family: str | None = None, kind: str | None = None) -> tuple[str, ...]:
    """Sorted ids of the shipped documents, optionally filtered (parses them all)."""
    return tuple(sorted(
        d.id for d in _all_documents().values()
        if (family is None or d.family == family) and (kind is None or d.kind == kind)
    ))


def find_document(doc_id: str, *, family: str | None = None,
                  kind: str | None = None) -> HardwareDocument | None:
    """The document with this id (and family/kind when given), parsing only its file."""
    if not isinstance(doc_id, str) or not doc_id or "/" in doc_id or "\\" in doc_id:
        return None
    doc = _parse_file(filename_for(doc_id))
    if doc is None or doc.id != doc_id:
        return None
    if (family is not None and doc.family != family) or (kind is not None and doc.kind != kind):
        return None
    _check_device(doc)
    return doc


def load_document(doc_id: str) -> HardwareDocument:
    """The parsed document with this id (cached after the first read)."""
    doc = find_document(doc_id)
    if doc is None:
        raise DocumentError(
            f"no hardware document {doc_id!r}; shipped: {list(document_ids())}")
    return doc
