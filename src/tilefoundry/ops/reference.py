"""The op reference (issue 21 item 6): one text per op class, made from the registry and
the op classes (spellings and aliases with their fixed attributes, signature, attributes
with their coercions and defaults, what the evaluator computes) and the hand-written
``OpDoc`` of the op (``ops.op_doc``: dtypes, sharding, access relation, cost, example).

That text is the op's section of docs/ops.md (``tools/gen_ops_doc.py`` writes the page;
tests/docs/test_ops_doc.py fails when it is stale) and the docstring of every ``tf``
spelling of the op (``tilefoundry.dsl.tf``: ``help(tf.matmul)``). Nothing here is
imported with the op set: the texts are made when first asked for.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import MISSING, fields
from enum import Enum

from tilefoundry.ir.dtype import DType

__all__ = ["FAMILIES", "op_docs", "op_classes", "signature", "section", "tf_docstring"]

#: the page's order: (family heading, op names)
FAMILIES = (
    ("Elementwise math", ("binary", "unary", "clamp", "softplus", "silu", "sigmoid", "tanh", "relu",
                          "gelu", "where", "cast")),
    ("Neural-network ops", ("matmul", "rms_norm", "layer_norm", "softmax", "rope", "conv2d", "quant")),
    ("MMA tiles", ("mma_sm80_16x8x16", "wgmma_sm90_64x128x16")),
    ("Shape and structure", ("reshape", "transpose", "reduce", "argmax", "topk", "tuple_get_item",
                             "concat", "stack", "split", "repeat_interleave", "slice", "insert_slice")),
    ("Creation and shape readers", ("full_like", "zeros", "arange", "shape_of", "rank")),
    ("Indexing", ("index_select", "index_add", "index_copy", "cache_update")),
    ("Sharding", ("reshard", "local")),
)

_KINDS = {
    "dtype": "a dtype: a spelling (`\"f32\"`, `\"bf16\"`, `\"fp8e4m3\"`, ...) or a `DType`",
    "storage": "a storage token (`\"gmem\"`, `\"smem\"`, `\"rmem\"`, `\"tmem\"`, `\"host\"`) or None",
    "layout": "layout sugar (`(M @ grid.row, N)`) or a `ShardLayout`, or None",
    "type": "a `Tensor[shape, dtype, ...]` type",
    "shape": "a tuple of ints or dims",
    "axes": "a tuple of axes (ints, negative from the end)",
    "dim": "an int or a dim expression",
    "int": "an int", "float": "a number", "str": "a string", "bool": "a bool",
}


_RECORDS = {"flops": "one flop per element", "integer": "`integer` service",
            "predicate": "`predicate` service", "special": "`special` service"}


def op_docs() -> dict:
    """op name -> OpDoc, every table joined (the one place the prose lives)."""
    from tilefoundry.ops import doc_elementwise, doc_nn, doc_structure

    joined: dict = {}
    for table in (doc_elementwise.DOCS, doc_nn.DOCS, doc_structure.DOCS):
        joined.update(table)
    return joined


def op_classes() -> dict:
    """op name -> op class, for every op class with a ``tf`` name."""
    import tilefoundry.ops  # noqa: F401  (the op set fills the registry)
    from tilefoundry.semantics.op_registry import TF_NAMES

    return {entry.op_class.name: entry.op_class for entry in TF_NAMES.values()}


def _aliases(cls) -> list:
    from tilefoundry.semantics.op_registry import TF_NAMES

    return [entry for name, entry in TF_NAMES.items() if entry.op_class is cls and name != cls.name]


def _markdown(text: str) -> str:
    """A docstring's first paragraph as one markdown line (``x`` -> `x`)."""
    first = inspect.cleandoc(text or "").split("\n\n", 1)[0]
    return re.sub(r"``([^`]+)``", r"`\1`", " ".join(first.split()))


def _value(value) -> str:
    if isinstance(value, Enum):
        return f"\"{value.value}\""
    if isinstance(value, (DType, str)):
        return f"\"{value}\""
    return repr(value)


def _enum_values(kind: str) -> str:
    from tilefoundry.ops.math import BinaryKind, UnaryKind
    from tilefoundry.ops.tensor import ReduceKind

    enum = {"BinaryKind": BinaryKind, "UnaryKind": UnaryKind, "ReduceKind": ReduceKind}[kind]
    return f"one of {', '.join(f'`{_value(m)}`' for m in enum)} ({kind} member or its value)"


def _attributes(cls, fixed=()) -> list:
    pinned = dict(fixed)
    return [f for f in fields(cls) if f.name not in pinned]


def signature(cls, name: str | None = None, fixed=()) -> str:
    """``tf.<name>(inputs, attributes)`` as a call is written (authoring §6.1)."""
    parts = ["*inputs"] if getattr(cls, "variadic", False) else list(cls.inputs)
    for f in _attributes(cls, fixed):
        parts.append(f.name if f.default is MISSING else f"{f.name}={_value(f.default)}")
    return f"tf.{name or cls.name}({', '.join(parts)})"


def _attribute_table(cls) -> list:
    rows = _attributes(cls)
    if not rows:
        return ["No attributes."]
    lines = ["| attribute | takes | default |", "| --- | --- | --- |"]
    for f in rows:
        kind = cls.attr_kinds.get(f.name, "")
        takes = _enum_values(kind.split(":", 1)[1]) if kind.startswith("kind:") else _KINDS.get(kind, kind)
        default = "required" if f.default is MISSING else f"`{_value(f.default)}`"
        lines.append(f"| `{f.name}` | {takes} | {default} |")
    return lines


def _numerics(cls) -> str:
    from tilefoundry.semantics.op_registry import EVALUATORS, GLOBAL_COORDINATE_OPS

    handler = EVALUATORS.get(cls)
    if handler is None:
        return "No evaluator: `tilefoundry run` refuses it."
    placed = ("A placed run evaluates it on the assembled operands (it reads global coordinates) and "
              "hands each participant its box of the result." if cls in GLOBAL_COORDINATE_OPS
              else "A placed run evaluates it on each participant's box.")
    return f"{_markdown(handler.__doc__)} {placed}"


def section(name: str) -> str:
    """The reference text of op ``name`` (a primary ``tf`` name): markdown."""
    cls, doc = op_classes()[name], op_docs()[name]
    if getattr(cls, "variadic", False):
        note = " (variadic: every positional argument is an input; attributes are keywords)"
    else:
        note = ""
    lines = [f"### `tf.{name}`", "", _markdown(cls.__doc__), "",
             f"`{signature(cls)}` builds `{cls.__name__}`{note}."]
    if doc.also:
        lines += ["", f"Also: {doc.also}"]
    aliases = _aliases(cls)
    if aliases:
        lines += ["", "| spelling | is | records (companions §5.2) |", "| --- | --- | --- |"]
        for entry in aliases:
            pinned = ", ".join(f"{k}={_value(v)}" for k, v in entry.fixed)
            recorded = _RECORDS.get(doc.alias_costs.get(entry.name), "")
            lines.append(f"| `{signature(cls, entry.name, entry.fixed)}` | `tf.{name}` with `{pinned}` | "
                         f"{recorded} |")
    lines += ["", *_attribute_table(cls), "",
              f"- **Dtypes.** {doc.dtypes}",
              f"- **Sharding.** {doc.shard}",
              f"- **Access relation.** {doc.access}",
              f"- **Cost.** {doc.cost} The example records `{doc.example_cost}`.",
              f"- **Numerics.** {_numerics(cls)}",
              "", "```python", doc.example, "```"]
    return "\n".join(lines) + "\n"


def tf_docstring(tf_name: str) -> str:
    """The docstring of ``tf.<tf_name>``: its op's section, after the fixed
    attributes an alias pins."""
    from tilefoundry.semantics.op_registry import TF_NAMES

    entry = TF_NAMES[tf_name]
    text = section(entry.op_class.name)
    if tf_name == entry.op_class.name:
        return text
    pinned = ", ".join(f"{k}={_value(v)}" for k, v in entry.fixed)
    head = (f"`{signature(entry.op_class, tf_name, entry.fixed)}` is `tf.{entry.op_class.name}` with "
            f"`{pinned}` (docs/ops.md).")
    return f"{head}\n\n{text}"
