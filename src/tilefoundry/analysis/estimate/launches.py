"""Which statements of an arranged body (``performance.timeline.arrange``) are
one launch: the top-level statements and loops under one top-level ``with
Mesh`` scope. The arranged order is a dataflow order, so one block's statements
may come in several runs; ``launch_runs`` joins them where the dataflow allows.
Nothing here reads a statement's demands (``kernels.py``) or prices anything.
"""
from __future__ import annotations

from tilefoundry.ir.expr import Call, Tuple
from tilefoundry.ir.metadata import ExecutionDomainMetadata

__all__ = ["launch_runs", "first_scope", "structural", "item_ids", "flat", "reached"]


def launch_runs(items: list) -> list:
    """``(key, items)`` per launch, in an order the dataflow allows: key
    ``(scope, site)`` of a top-level Mesh block, or None for an item outside
    every Mesh or a loop around launches (a run of one item)."""
    return _joined(_runs(items))


def _scope_of(call):
    domain = call.get_metadata(ExecutionDomainMetadata)
    if domain is None or not domain.scopes:
        return None, ""
    return domain.scopes[0], (domain.sites[0] if domain.sites else "")


def first_scope(item):
    """The outermost Mesh scope and its site of an item's first call under one."""
    if item[0] == "call":
        return _scope_of(item[1])
    for inner in item[2]:
        found = first_scope(inner)
        if found[0] is not None:
            return found
    return None, ""


def _single_scope(item, scope) -> bool:
    """Whether every call of a loop item that runs under a Mesh runs under
    ``scope`` (one kernel); a call outside every Mesh (an index, a slice of a
    global operand) runs inside the kernel that reads it."""
    if item[0] == "call":
        own = _scope_of(item[1])[0]
        return own is None or own is scope or own == scope
    return all(_single_scope(inner, scope) for inner in item[2])


def _runs(items: list) -> list:
    """``[key, items]`` per maximal run of the arranged order under one top-level
    Mesh scope (key ``(scope, site)``); an item outside every Mesh, or a loop
    around launches, is a run of its own with key None."""
    runs: list = []
    for item in items:
        if item[0] == "call" and structural(item[1]):
            if runs and runs[-1][0] is not None:
                runs[-1][1].append(item)
            continue
        scope, site = first_scope(item)
        if scope is not None and item[0] == "loop" and not _single_scope(item, scope):
            scope = None  # a loop around launches: its kernels repeat
        key = (scope, site) if scope is not None else None  # equal Meshes: one grid
        if key is not None and runs and runs[-1][0] == key:
            runs[-1][1].append(item)
        else:
            runs.append([key, [item]])
    return runs


def _joined(runs: list) -> list:
    """The runs with each ``with Mesh`` block's statements in one launch. The
    arranged order is a dataflow order: a block's loads that read nothing of
    the block before it (its weights) may be placed ahead of that block, which
    splits one launch in two. A run joins the nearest earlier run of its key
    where it reads none of the runs between them (it moves up to the earlier
    one) or none of those reads the earlier run (that one moves down past
    them); where neither holds (layer i's block, a block reading it, layer
    i+1's same block) they are two launches."""
    joined: list = []  # [key, items, ids made, ids read]
    views: dict = {}  # id(call) -> whether it is structural (a view: read through)
    for key, run in runs:
        made, reads = _made(run, views), _reads(run, views)
        at = _join_point(joined, key, reads) if key is not None else None
        if at is None:
            joined.append([key, list(run), made, reads])
            continue
        earlier, between = joined[at], joined[at + 1:]
        moves_down = any(reads & entry[2] for entry in between)
        earlier[1].extend(run)
        earlier[2] |= made
        earlier[3] |= reads
        if moves_down:
            joined[at:] = between + [earlier]
    return [(key, run) for key, run, _, _ in joined]


def _join_point(joined: list, key, reads: set) -> int | None:
    """The index of the nearest earlier run of ``key`` a run reading ``reads``
    may join (see ``_joined``), or None."""
    for at in range(len(joined) - 1, -1, -1):
        if joined[at][0] != key:
            continue
        between = joined[at + 1:]
        reads_between = any(reads & entry[2] for entry in between)
        between_reads_earlier = any(entry[3] & joined[at][2] for entry in between)
        return None if reads_between and between_reads_earlier else at
    return None


def _made(run: list, views: dict) -> set[int]:
    """The ids of what a run makes that works or moves bytes: a view (a tuple
    field, a reshape) launches nothing, and the arranged order may place one
    in another block's run; its readers read through it (``_reads``)."""
    return {id(item[1]) for item in run if item[0] == "loop" or not _is_view(item[1], views)} \
        | {i for item in run if item[0] == "loop" for i in item_ids(item[2])}


def _reads(run: list, views: dict) -> set[int]:
    """The ids of what a run's calls and loops read (tuples opened, views read
    through to what they view)."""
    found: set[int] = set()
    roots = []
    for item in run:
        if item[0] == "loop":
            roots.extend(item[1].inits)
            found |= _reads(item[2], views)
        else:
            roots.extend(item[1].args)
    through = lambda node: node.args if isinstance(node, Call) and _is_view(node, views) else ()  # noqa: E731
    return found | {id(node) for node in reached(roots, through) if not isinstance(node, Tuple)}


def reached(roots, through):
    """Each node reachable from ``roots`` once: a tuple opened to its fields, any
    other node descended into through the operands ``through(node)`` names."""
    stack, seen = list(roots), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(node.fields if isinstance(node, Tuple) else through(node))


def _is_view(call, views: dict) -> bool:
    found = views.get(id(call))
    if found is None:
        found = views[id(call)] = structural(call)
    return found


def structural(call) -> bool:
    """Whether a call neither works nor moves a global or shared byte."""
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata
    from tilefoundry.analysis.memory.records import TrafficMetadata

    cost = call.get_metadata(ComputeCostMetadata)
    if cost is not None and (any(n for _, n in cost.flops) or any(n for _, n in cost.service)):
        return False
    traffic = call.get_metadata(TrafficMetadata)
    if traffic is None:
        return True
    return not any(level in ("gmem", "smem") and (amount.read or amount.write)
                   for level, amount in traffic.whole)


def item_ids(body: list) -> set[int]:
    """The ids of a body's calls and loops, nested ones included."""
    found: set[int] = set()
    for item in body:
        found.add(id(item[1]))
        if item[0] == "loop":
            found |= item_ids(item[2])
    return found


def flat(node):
    """A node, or a tuple's fields opened."""
    if isinstance(node, Tuple):
        for field_ in node.fields:
            yield from flat(field_)
    else:
        yield node


