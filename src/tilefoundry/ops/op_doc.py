"""The hand-written part of an op's reference page (docs/ops.md, issue 21 item 6).

One ``OpDoc`` per op class, keyed by the op's ``name``, in the ``DOCS`` tables of
``doc_elementwise``, ``doc_nn`` and ``doc_structure``; ``ops.reference`` joins them
with what the registry and the op classes state themselves (spellings, signature,
attributes and defaults, the evaluator's numerics) into one text, which is both
the op's section of docs/ops.md (``tools/gen_ops_doc.py``) and the docstring of
each ``tf.<name>`` spelling of it (``help(tf.matmul)``).

What is written here is checked where it can be: every ``example`` is parsed and
its op's result type and cost compared with what the example states
(tests/docs/test_ops_doc.py), and every alias's stated cost kind with what the
cost evaluator records for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OpDoc:
    """The prose of one op's reference section.

    Attributes:
        dtypes: what operand dtypes it takes and which dtype its result has.
        shard: how Split, Broadcast and Partial operands propagate (or are refused).
        access: its access relation in words: what each operand element is read for.
        cost: what compute-cost records for one occurrence (flops by dtype, or
            which service kind), and which operands are read or written.
        example: a ``@func`` whose ``return`` line is a call of the op, commented
            with the call's result type as the printer spells it.
        example_cost: that call's cost, ``flops=<dtype>:<n>``, ``service=<kind>:<n>``
            or ``no work``.
        also: other spellings (operators, subscripts, unpacking), if any.
        alias_costs: for an op with ``tf`` aliases, alias -> the kind of work it
            records on float (bool for logical, i32 for integer-only) operands.
    """

    dtypes: str
    shard: str
    access: str
    cost: str
    example: str
    example_cost: str
    also: str = ""
    alias_costs: dict = field(default_factory=dict)
