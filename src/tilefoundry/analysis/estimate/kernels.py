"""What the estimate reads of a program: its launches (kernels) and, per
statement, the work and bytes its compute-cost and memory records state.

A kernel is the top-level statements and loops under one top-level ``with
Mesh`` scope (one launch of that grid: ``launches.py`` keeps a block whole where
the dataflow order visits part of it early); an unplaced statement
that works or moves bytes is a library kernel of its own over the whole
device. A loop around kernels repeats them. Nothing here prices anything:
``physics.py`` turns these demands into time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple
from tilefoundry.ir.metadata import ExecutionDomainMetadata, SourceSpanMetadata, locator
from tilefoundry.ir.shard import Broadcast, Partial, ShardLayout, Split
from tilefoundry.ir.storage import StorageKind
from tilefoundry.analysis.estimate.launches import first_scope, flat, item_ids, launch_runs, reached, structural

__all__ = ["Statement", "Loop", "Kernel", "kernels_of", "is_contraction"]

#: the ops whose flops run on tensor cores when their dtype has a tensor path
_CONTRACTIONS = ("matmul", "conv2d")
_INSTRUCTION_PREFIXES = ("mma", "wgmma", "tcgen")


def is_contraction(op) -> bool:
    name = getattr(op, "name", "") or ""
    return name in _CONTRACTIONS or name.startswith(_INSTRUCTION_PREFIXES)


@dataclass
class Statement:
    """One timed call: what one execution of it asks of the machine, whole
    (over every CTA), with the bytes one CTA requests."""

    call: object
    tensor: dict = field(default_factory=dict)  # dtype -> flops on tensor cores
    core_flops: int = 0
    special_ops: int = 0
    integer_ops: int = 0
    smem_bytes: int = 0
    dram_read: int = 0  # distinct bytes read from gmem (the memory family's whole figure)
    dram_write: int = 0
    cta_read: int = 0  # gmem bytes one CTA requests (reads)
    cta_write: int = 0
    varying: tuple | None = None  # cta-axis positions the reads differ along; None: unknown
    cross_cta_bytes: int = 0  # a Partial completed across CTAs: the partials' bytes
    dependent: bool = True  # it reads a value produced earlier in its kernel
    #: it reads back from gmem what other CTAs of its launch wrote (a split
    #: value gathered): every CTA waits for all of them (a grid-wide barrier)
    grid_sync: bool = False
    key: object = None  # what decides the demands (None: no structure to share them by)

    @property
    def reads_gmem(self) -> bool:
        return self.dram_read > 0 or self.cta_read > 0


@dataclass
class Loop:
    loop: object
    trips: int
    items: list  # Statement | Loop
    overlapped: bool = False
    #: the statements on the loop's recurrence (each reads what the previous
    #: trip carried and feeds what the next one carries): position in ``items``
    #: -> positions of the recurrent statements it reads
    recurrence: dict = field(default_factory=dict)


@dataclass
class Kernel:
    site: str
    mesh: object | None  # the top-level Mesh, None for a library kernel
    ctas: int
    threads: int | None
    cta_shape: tuple  # extents of the mesh's cta axes, in order
    items: list  # Statement | Loop
    repeat: int = 1

    @property
    def structure(self):
        """What decides the kernel's price: its grid and, in order, each
        statement's demands and whether it waits on the kernel, each loop's
        trips and overlap; None when a statement has no structure."""
        items = _structure(self.items)
        if items is None:
            return None
        return (self.mesh is None, self.ctas, self.threads, self.cta_shape, self.repeat, items)

    def calls(self) -> list:
        """The kernel's calls in the order ``structure`` lists them."""
        return [i.call if isinstance(i, Statement) else None for i in _walk(self.items)]


def _walk(items: list):
    for item in items:
        yield item
        if isinstance(item, Loop):
            yield from _walk(item.items)


def _structure(items: list):
    found = []
    for item in items:
        if isinstance(item, Loop):
            inner = _structure(item.items)
            if inner is None:
                return None
            found.append(("loop", item.trips, item.overlapped,
                          tuple(sorted(item.recurrence.items())), inner))
        elif item.key is None:
            return None
        else:
            found.append((item.key, item.dependent, item.grid_sync))
    return tuple(found)


# ================================================================ grouping


def kernels_of(items: list, facts, level: str | None, memo: dict | None = None,
               repeat: int = 1, declared_threads: int | None = None) -> list:
    """The launches of an arranged body (``performance.timeline.arrange``).
    A statement that neither works nor moves a byte (a view, a tuple field)
    launches nothing and never splits a run: the printer's order may place it
    between two statements of one kernel. ``memo`` keeps each statement's
    demands by structure: a whole model's renamed layers are read once.
    ``declared_threads``: the module's ``thread`` topology size, a CTA's threads
    where no thread mesh states them."""
    memo = {} if memo is None else memo
    kernels: list[Kernel] = []
    for key, run in launch_runs(items):
        if key is not None:
            kernels.append(_kernel(run, facts, level, memo, repeat, declared_threads))
        elif run[0][0] == "loop":
            kernels.extend(kernels_of(run[0][2], facts, level, memo, repeat * run[0][1].trips,
                                      declared_threads))
        else:
            statement = _statement(run[0][1], None, (), facts.sm_count, facts, level, memo)
            kernels.append(Kernel(_site(run[0][1]), None, facts.sm_count, None, (),
                                  [statement], repeat))
    return kernels


def _site(node) -> str:
    span = node.get_metadata(SourceSpanMetadata)
    return str(span) if span is not None else locator(node)


def _axes(mesh, level: str) -> list[int]:
    """The mesh axes of one topology level (none where a symbolic multi-level
    mesh has no axis geometry to read)."""
    from tilefoundry.errors import TileFoundryError

    try:
        levels = mesh.axis_levels()
    except TileFoundryError:
        return []
    return [i for i, found in enumerate(levels) if found == level]


def _extent(mesh, axes: list[int]) -> int | None:
    total = 1
    for axis in axes:
        extent = mesh.shape[axis]
        if not isinstance(extent, int):
            return None
        total *= extent
    return total


def _threads(scope, run: list, declared: int | None) -> int | None:
    """The CTA's threads: the launch mesh's thread axes, else the widest thread
    mesh nested in it (a ``with Mesh(("thread",), ...)`` inside the CTA's),
    else the module's declared ``thread`` topology; None when none states them."""
    axes = _axes(scope, "thread")
    if axes:
        return _extent(scope, axes)
    widest = None
    for call in _calls(run):
        domain = call.get_metadata(ExecutionDomainMetadata)
        for nested in (domain.scopes[1:] if domain is not None else ()):
            inner = _axes(nested, "thread")
            extent = _extent(nested, inner) if inner else None
            if extent is not None and (widest is None or extent > widest):
                widest = extent
    return declared if widest is None else widest


def _kernel(run: list, facts, level, memo: dict, repeat, declared_threads) -> Kernel:
    scope, site = first_scope(run[0])
    threads = _threads(scope, run, declared_threads)
    grid = _grid(run, scope)
    cta_axes = _axes(grid, "cta")
    ctas = _extent(grid, cta_axes) if cta_axes else 1
    shape = tuple(grid.shape[i] for i in cta_axes)
    if ctas is None:  # a grid of symbolic extent: spread over the device, no launch order
        ctas, shape = facts.sm_count, ()
    produced: set[int] = set()
    items = [_item(item, grid, cta_axes, ctas, facts, level, memo, produced) for item in run]
    return Kernel(site or _site(next(_calls(run))), grid, ctas, threads, shape, items, repeat)


def _grid(run: list, scope):
    """The CTAs that work: ``scope``, or the one CTA mesh nested in it (a slice
    of the level, ``with whole[0:16] as g``) under which every statement that
    works runs; the launch's other CTAs have nothing to do."""
    inner = set()
    for call in _calls(run):
        domain = call.get_metadata(ExecutionDomainMetadata)
        if domain is None or not domain.scopes or structural(call):
            continue
        inner.add(domain.at("cta"))
    if len(inner) == 1:
        (found,) = inner
        if found is not None and found is not scope and found != scope:
            return found
    return scope


def _item(item, mesh, cta_axes, ctas, facts, level, memo: dict, produced: set):
    if item[0] == "call":
        call = item[1]
        statement = _statement(call, mesh, cta_axes, ctas, facts, level, memo)
        statement.dependent = _reads_produced(call, produced)
        statement.grid_sync = _exchanged(call, produced, mesh, cta_axes)
        produced.add(id(call))
        return statement
    loop = item[1]
    inner = [_item(i, mesh, cta_axes, ctas, facts, level, memo, produced) for i in item[2]]
    produced.add(id(loop))
    return Loop(loop, loop.trips, inner, overlapped=_overlaps(loop, item[2]),
                recurrence=_recurrence(loop, item[2]))


def _reads_produced(call, produced: set) -> bool:
    for arg in call.args:
        stack = [arg]
        while stack:
            node = stack.pop()
            if id(node) in produced:
                return True
            if isinstance(node, Tuple):
                stack.extend(node.fields)
    return False


# ================================================================ overlap


def _overlaps(loop, body: list) -> bool:
    """Whether the next trip's loads can be issued before this trip's compute
    ends: no statement of the body that reads global memory depends on a value
    the loop carries (double buffering, async copies, TMA prefetch are then
    possible and every pipelined kernel uses them)."""
    carried = {id(v) for v in loop.carried}
    inside = item_ids(body)
    loads = [c for c in _calls(body) if _reads_gmem(c)]
    if not loads:
        return False
    return not any(_depends(c, carried, inside) for c in loads)


def _calls(body: list):
    for item in body:
        if item[0] == "call":
            yield item[1]
        else:
            yield from _calls(item[2])


def _reads_gmem(call) -> bool:
    """Whether a call reads global memory: its memory record's gmem reads, where
    it has one (an ``insert_slice`` into a carried gmem output writes its slice
    and reads nothing there: it is no load); else a gmem operand."""
    from tilefoundry.analysis.memory.records import TrafficMetadata

    traffic = call.get_metadata(TrafficMetadata)
    if traffic is not None:
        return any(level == "gmem" and amount.read for level, amount in traffic.whole)
    return any(getattr(getattr(a, "type", None), "storage", None) is StorageKind.GMEM
               for a in call.args)


def _depends(call, carried: set[int], inside: set[int]) -> bool:
    def through(node):  # read through what the loop's body makes
        if id(node) not in inside:
            return ()
        return node.args if isinstance(node, Call) else node.inits if isinstance(node, GridRegionExpr) else ()

    return any(id(node) in carried for node in reached(call.args, through))


def _recurrence(loop, body: list) -> dict:
    """The body's statements on the loop-carried dependence cycle, each with
    the recurrent statements it reads (positions in ``body``): a statement is
    recurrent when it reads a carried value (directly or through the body)
    and a yielded value reads it. The cycle bounds how soon the next trip can
    follow however many units work side by side (a modulo schedule's
    recurrence-constrained initiation interval)."""
    position = {id(item[1]): i for i, item in enumerate(body)}
    carried = {id(v) for v in loop.carried}
    reads_carry: set[int] = set()
    for item in body:  # program order: operands before their readers
        if any(id(n) in carried or id(n) in reads_carry for n in _operands(item[1], position)):
            reads_carry.add(id(item[1]))
    fed: set[int] = set()
    stack = [n for y in loop.yields for n in flat(y)]
    while stack:
        node = stack.pop()
        if id(node) in position and id(node) not in fed:
            fed.add(id(node))
            stack.extend(_operands(node, position))
    recurrent = reads_carry & fed
    return {position[key]: tuple(sorted({position[id(n)] for n in _operands(item[1], position)
                                         if id(n) in recurrent}))
            for item in body if (key := id(item[1])) in recurrent}


def _operands(node, position: dict) -> list:
    """What a body item reads: a call's arguments, a nested loop's initial
    values (tuples opened)."""
    sources = node.inits if isinstance(node, GridRegionExpr) else getattr(node, "args", ())
    return [n for s in sources for n in flat(s)]


# ================================================================ one statement


_DEMANDS = ("tensor", "core_flops", "special_ops", "integer_ops", "smem_bytes", "dram_read",
            "dram_write", "cta_read", "cta_write", "varying", "cross_cta_bytes")


def _statement(call, mesh, cta_axes, ctas, facts, level, memo: dict) -> Statement:
    """One call's demands, read once per structure: what decides them is the
    call's structure (op, operand and result types: its records are shared by
    it), the grid, and for a reshard whether its operand is a tensor-core
    result."""
    first = call.args[0] if call.args else None
    key = None
    if call.structure is not None:
        key = (call.structure, id(mesh), ctas, level, getattr(first, "structure", None))
        found = memo.get(key)
        if found is not None:
            demands = dict(found, tensor=dict(found["tensor"]))
            return Statement(call, **demands, key=key)
    statement = _read_statement(call, mesh, cta_axes, ctas, facts, level)
    if key is not None:
        memo[key] = {name: getattr(statement, name) for name in _DEMANDS}
        statement.key = key
    return statement


def _read_statement(call, mesh, cta_axes, ctas, facts, level) -> Statement:
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata
    from tilefoundry.analysis.memory.records import TrafficMetadata

    statement = Statement(call)
    cost = call.get_metadata(ComputeCostMetadata)
    if cost is not None:
        contraction = is_contraction(call.op)
        for dtype, flops in cost.flops:
            if contraction and facts.tensor_for(dtype) is not None:
                statement.tensor[dtype] = statement.tensor.get(dtype, 0) + flops
            else:
                statement.core_flops += flops
        for kind, ops in cost.service:
            if kind == "special":
                statement.special_ops += ops
            else:
                statement.integer_ops += ops
    traffic = call.get_metadata(TrafficMetadata)
    if traffic is not None:
        whole = dict(traffic.whole)
        unit = dict(traffic.per_unit)
        gmem = whole.get("gmem")
        if gmem is not None:
            statement.dram_read, statement.dram_write = gmem.read, gmem.write
        smem = whole.get("smem")
        if smem is not None:
            statement.smem_bytes = smem.read + smem.write - _register_resident(call, traffic,
                                                                               facts)
        per_cta = unit.get("gmem") if level == "cta" and mesh is not None else None
        if per_cta is not None:
            statement.cta_read, statement.cta_write = per_cta.read, per_cta.write
        else:  # no per-CTA figure at this level: the whole spread evenly
            statement.cta_read = -(-statement.dram_read // max(ctas, 1))
            statement.cta_write = -(-statement.dram_write // max(ctas, 1))
    if mesh is not None:
        statement.varying = _varying(call, mesh, cta_axes)
        statement.cross_cta_bytes = _cross_cta(call, mesh, cta_axes)
    return statement


def _tensor_core(call, facts) -> bool:
    from tilefoundry.analysis.compute_cost import ComputeCostMetadata

    cost = call.get_metadata(ComputeCostMetadata)
    return (is_contraction(call.op) and cost is not None
            and any(n and facts.tensor_for(dt) is not None for dt, n in cost.flops))


def _register_resident(call, traffic, facts) -> int:
    """Shared-memory bytes the program's types give a value the GPU keeps in
    registers: a tensor-core contraction writes its accumulator to registers
    (the D fragment of ``mma``/``wgmma`` is a register operand in PTX), so its
    result's shared-memory write, and a reshard that moves that result on to
    registers, move nothing."""
    from tilefoundry.ir.storage import StorageKind

    if _tensor_core(call, facts) and getattr(call.type, "storage", None) is StorageKind.SMEM \
            and traffic.operands:
        return traffic.operands[-1].write
    if getattr(call.op, "name", "") == "reshard" and call.args and isinstance(call.args[0], Call) \
            and _tensor_core(call.args[0], facts) \
            and getattr(call.type, "storage", None) is StorageKind.RMEM:
        smem = dict(traffic.whole).get("smem")
        return smem.read + smem.write if smem is not None else 0
    return 0


def _shard(value):
    layout = getattr(getattr(value, "type", None), "layout", None)
    return layout if isinstance(layout, ShardLayout) else None


def _varying(call, mesh, cta_axes: list[int]) -> tuple | None:
    """The cta axes along which the CTAs' windows of a global read differ:
    those the result is split (or partial) over; the others read one window."""
    layout = _shard(call)
    if layout is None or layout.mesh.shape != mesh.shape:
        return None
    return tuple(position for position, axis in enumerate(cta_axes)
                 if not isinstance(layout.attrs[axis], Broadcast))


def _cross_cta(call, mesh, cta_axes: list[int]) -> int:
    """A reshard completing a Partial over cta axes, or a reduce over an axis
    split over cta axes (complete: every CTA holds the whole result, companions'
    reduce rule): the partials every CTA contributes, written and read back
    through global memory / L2."""
    name = getattr(call.op, "name", "")
    if name == "reduce" and call.args:
        return _reduced_across(call, mesh, cta_axes)
    if name != "reshard" or not call.args:
        return 0
    source, result = _shard(call.args[0]), _shard(call)
    if source is None or source.mesh.shape != mesh.shape:
        return 0
    partial = [a for a in cta_axes if isinstance(source.attrs[a], Partial)
               and (result is None or not isinstance(result.attrs[a], Partial))]
    if not partial:
        return 0
    contributors = _extent(mesh, partial) or 1
    return _bytes(call.type) * contributors


def _reduced_across(call, mesh, cta_axes: list[int]) -> int:
    source, result = _shard(call.args[0]), _shard(call)
    if source is None or source.mesh.shape != mesh.shape:
        return 0
    kept = result.attrs if result is not None and result.mesh.shape == mesh.shape else ()
    across = [a for a in cta_axes if isinstance(source.attrs[a], Split)
              and not (kept and isinstance(kept[a], Split))]
    if not across:
        return 0
    return _bytes(call.type) * (_extent(mesh, across) or 1)


def _exchanged(call, produced: set, mesh, cta_axes: list[int]) -> bool:
    """A reshard of a value its own launch made split over a cta axis, into a
    layout not split that way: each CTA reads what the others made (through
    gmem / L2, whatever level the value was staged in), which it may do only
    once all have made it (a cooperative launch's grid barrier)."""
    if getattr(call.op, "name", "") != "reshard" or not call.args or mesh is None:
        return False
    source = call.args[0]
    if id(source) not in produced:
        return False
    held, read = _shard(source), _shard(call)
    if held is None or read is None or held.mesh.shape != mesh.shape or read.mesh.shape != mesh.shape:
        return False
    return any(isinstance(held.attrs[a], Split) and read.attrs[a] != held.attrs[a] for a in cta_axes)


def _bytes(type_) -> int:
    total = type_.dtype.bits
    for extent in type_.shape:
        if not isinstance(extent, int):
            return 0
        total *= extent
    return -(-total // 8)
