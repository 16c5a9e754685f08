"""The typeinfer context and the one entry that types a primitive call."""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.ir.expr import Call, Constant, Expr
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.semantics.op_registry import ACCESS_RELATIONS, TYPEINFER
from tilefoundry.semantics.structural_key import operand_structure
from tilefoundry.ir.memo import memoised


class TypeInferContext:
    """What a typeinfer handler sees: the op, its argument nodes and types, and
    where the call was written (for the error line: a ``file:line:col`` string
    or a source-span record, spelled only when an error states it)."""

    def __init__(self, op, args: tuple, *, location: object = None, binding: str | None = None,
                 scopes: tuple = ()):
        self.op = op
        self.args = tuple(args)
        self.arg_types = tuple(arg.type for arg in self.args)
        self.location = location
        self.binding = binding
        self.scopes = scopes  # enclosing Mesh scopes, outermost first

    def error(self, message: str):
        """Raise the op's VerifyError: ``<Op>: <message>`` plus the source line."""
        text = f"{self.op.class_name}: {message}"
        if self.location:
            suffix = f" variable '{self.binding}'" if self.binding else ""
            text += f"\n  at {self.location}{suffix}"
        raise VerifyError(text)

    def tensor(self, index: int, role: str | None = None) -> TensorType:
        type_ = self.arg_types[index]
        if not isinstance(type_, TensorType):
            label = role or f"operand {index}"
            self.error(f"{label} must be a tensor, got {type(type_).__name__}{_tuple_remedy(self.op, type_)}")
        return type_

    def constant_value(self, index: int):
        arg = self.args[index]
        return arg.value if isinstance(arg, Constant) else None


def _tuple_remedy(op, type_) -> str:
    """A tuple handed where tensors go: numpy and torch take ``concat((a, b))``;
    a variadic op takes its inputs as separate arguments."""
    if not isinstance(type_, TupleType):
        return ""
    name = getattr(op, "name", op.class_name.lower())
    if getattr(op, "variadic", False):
        return (f" (a tuple of {len(type_.fields)}); tf.{name} takes its inputs as separate "
                f"arguments: write tf.{name}(a, b, ..., axis=...), not tf.{name}((a, b), ...)")
    return f" (a tuple of {len(type_.fields)}); pick one field with t[i] or unpack it first"


def infer_type(op, args: tuple[Expr, ...], **where):
    """Type one primitive call with its registered handler (fail closed).

    A handler reads of its operands their types, literal values and structure,
    and the enclosing Mesh scopes: one answer serves every call of the same
    structure (a whole model's repeated layers), so it is memoised on them."""
    return _typed(op, args, where)[0]


class Structure:
    """The identity of one typeinfer key (``Call.structure``): compared and
    hashed by identity, so a memo keyed by it never rebuilds or hashes the key."""

    __slots__ = ()


def _typed(op, args, where) -> tuple:
    """(result type, Structure) of one call, memoised on its typeinfer key; an
    unhashable key gets a Structure of its own (shared with no other call)."""
    handler = TYPEINFER.get(type(op))
    operands, _ = operand_structure(args)
    # both handlers in the key: typeinfer propagates layouts through the relation
    key = (handler, ACCESS_RELATIONS.get(type(op)), type(op), op, operands, where.get("scopes", ()))
    return memoised(_TYPES, key, lambda: (_infer(handler, op, args, where), Structure()),
                    limit=_TYPES_LIMIT)


_TYPES: dict = {}  # (handlers, op, operand structure, scopes) -> (result type, Structure)
_TYPES_LIMIT = 16384


def _infer(handler, op, args, where):
    ctx = TypeInferContext(op, args, **where)
    if handler is None:
        ctx.error(f"no typeinfer registered for {op.class_name}")
    result = handler(op, ctx)
    if not isinstance(result, (TensorType, TupleType)):
        ctx.error(f"typeinfer returned {result!r}, not a type")
    return result


def build_call(op, args: tuple[Expr, ...], **where) -> Call:
    """A typed Call node (types are derived at once, as authoring requires)."""
    type_, structure = _typed(op, args, where)
    return Call(op, args, type_, structure)
