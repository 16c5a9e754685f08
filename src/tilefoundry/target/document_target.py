"""``DocumentTarget``: a target selected by device document id, whose every
number comes from that device document and the architecture document it names.

``CudaTarget`` and ``AmxTarget`` differ only in their family, levels and how the
documents project onto Facts aggregates; selecting and loading the documents is
this one class. The document loader is imported on first use, so importing a
target stays cheap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from tilefoundry.errors import did_you_mean
from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.target.base import Target, UnknownTargetError

if TYPE_CHECKING:  # pragma: no cover
    from tilefoundry.target.documents import HardwareDocument


def documents_module() -> Any:
    from tilefoundry.target import documents

    return documents


def facts_module() -> Any:
    from tilefoundry.target import facts

    return facts


@frozen_dataclass(repr=False)
class DocumentTarget(Target):
    """Base of the document-backed targets; subclasses set ``family``."""

    device: str

    family: ClassVar[str] = ""

    def __post_init__(self) -> None:
        cls = type(self).__name__
        if not isinstance(self.device, str):
            raise UnknownTargetError(f"{cls}: device id must be a str, got {self.device!r}")
        docs = documents_module()
        if docs.find_document(self.device, family=self.family, kind="device") is None:
            valid = docs.document_ids(family=self.family, kind="device")
            hint = did_you_mean(self.device, valid, close=False) or ";"
            raise UnknownTargetError(f"{cls}: unknown device '{self.device}'{hint} valid: {list(valid)}")

    def __repr__(self) -> str:
        return f'{type(self).__name__}("{self.device}")'

    @classmethod
    def available(cls) -> tuple:
        return tuple(cls(d) for d in documents_module().document_ids(family=cls.family, kind="device"))

    @property
    def identity(self) -> str:
        return self.device

    @property
    def device_document(self) -> "HardwareDocument":
        return documents_module().load_document(self.device)

    @property
    def architecture_document(self) -> "HardwareDocument":
        return documents_module().load_document(self.device_document.architecture)

    @property
    def documents(self) -> tuple["HardwareDocument", ...]:
        """Architecture document, then device document."""
        return (self.architecture_document, self.device_document)
