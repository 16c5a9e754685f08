"""The ``tf`` op namespace (authoring.md §1.2, §1.3).

A real module whose attributes are resolved on demand from the tf-name
registry (``semantics.op_registry.TF_NAMES``): ``tf.matmul`` is a :class:`TfOp`
naming that registry entry. Nothing is cached, so an op registered later is
visible at once; an unregistered name raises ``AttributeError``. The parser
recognises a callee as an op when it evaluates to a :class:`TfOp` (from
``tf.<name>`` or from a bare name bound by ``from tilefoundry.dsl.tf import x``).

Each :class:`TfOp`'s ``__doc__`` is its op's reference text (docs/ops.md, made by
``tilefoundry.ops.reference``), so ``help(tf.matmul)`` answers what ``tf.matmul`` takes,
gives, costs and computes.
"""
from __future__ import annotations


class _OpReference:
    """``__doc__`` of a :class:`TfOp`: the class's own docstring on the class, the
    op's reference text on an instance (made on first read, never stored)."""

    def __init__(self, text: str):
        self.text = text

    def __get__(self, instance, owner=None):
        if instance is None:
            return self.text
        from tilefoundry.ops.reference import tf_docstring

        return tf_docstring(instance.name)


class TfOp:
    """One spelling of the tf namespace: the op class plus pinned attributes.

    ``_op_schema`` is the registry entry (a ``TfName``) the parser reads.
    Calling it outside an ``@func`` body is refused: ops are built by the parser.
    """

    __slots__ = ("_op_schema",)
    __doc__ = _OpReference(__doc__)

    def __init__(self, schema):
        self._op_schema = schema

    @property
    def name(self) -> str:
        return self._op_schema.name

    @property
    def op_class(self) -> type:
        return self._op_schema.op_class

    @property
    def fixed(self) -> tuple:
        return self._op_schema.fixed

    def __eq__(self, other) -> bool:
        return isinstance(other, TfOp) and other._op_schema == self._op_schema

    def __hash__(self) -> int:
        return hash(("TfOp", self._op_schema.name))

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"tf.{self.name}(...) builds IR only inside an @func body, where the parser "
            "reads it from the source; it cannot be called as a Python function"
        )


def _names() -> dict:
    import tilefoundry.ops  # noqa: F401  (the front end loads the op set that fills the names)
    from tilefoundry.semantics.op_registry import TF_NAMES

    return TF_NAMES


def __getattr__(name: str):
    if name == "__all__":
        return sorted(_names())
    if name.startswith("__"):
        raise AttributeError(name)
    schema = _names().get(name)
    if schema is None:
        raise AttributeError(f"module 'tilefoundry.dsl.tf' has no op {name!r}")
    return TfOp(schema)


def __dir__():
    return sorted(set(_names()) | {"TfOp"})
