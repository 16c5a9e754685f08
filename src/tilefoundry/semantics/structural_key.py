"""What a handler reads of a call's operands, as a hashable key.

Typeinfer and access-relation handlers read of an operand its type, a literal's
value and tuple nesting, and -- for a run-time coordinate -- the node itself;
two calls whose operands agree on these (and on which operands are one node)
get the same answer, so the answer is memoised on this key.
"""
from __future__ import annotations

from tilefoundry.ir.expr import Constant, Tuple

__all__ = ["operand_structure", "literal_key"]


def literal_key(node: Constant) -> tuple:
    """A literal operand by its value, type and dtype. -0.0 == 0.0 and nan != nan,
    so a float is keyed by its exact bits."""
    value = node.value
    return ("literal", type(value), value.hex() if type(value) is float else value, node.type)


def operand_structure(args) -> tuple:
    """(key, nodes): the operands' structure -- types, literal values, tuple
    nesting and which operands are one node -- and the non-literal nodes in
    first-seen order (the positions a binding refers to). The key holds the
    literals as they are: an unhashable one makes it unhashable."""
    nodes: list = []
    seen: dict = {}

    def key(node):
        if isinstance(node, Constant):
            return literal_key(node)
        if isinstance(node, Tuple):
            return ("tuple", tuple(key(f) for f in node.fields))
        slot = seen.get(id(node))
        if slot is None:
            slot = seen[id(node)] = len(nodes)
            nodes.append(node)
        return ("node", slot, node.type)

    return tuple(key(a) for a in args), nodes
