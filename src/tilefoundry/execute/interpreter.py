"""Running one inlined Function body: operands first, loops trip by trip.

The walk is iterative (a body can be thousands of statements deep); only loop
nesting recurses. What a node's value *is* belongs to a ``Domain`` (the
logical run, the placed run, or both in lockstep): the interpreter owns order,
loop carries, memo layers and freeing, the domain owns values.

Memory: a value is freed after its last consumer, and the live elements of
every kept value are counted against ``TILEFOUNDRY_MAX_EVAL_ELEMENTS`` (default
2**30, ``limits.py``): past it the run refuses in one line naming the
statement, before numpy runs out of memory. Time: the statements a loop will
evaluate (its trips times its body, inner loops included) are counted against
``TILEFOUNDRY_MAX_EVAL_STATEMENTS`` before its first trip, so a loop of 2**63
trips is refused, not run.
"""
from __future__ import annotations

from tilefoundry.errors import EvaluationError
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var, body_children, postorder
from tilefoundry.ir.metadata import BindingMetadata, SourceSpanMetadata

__all__ = ["run_body", "max_eval_elements", "location_of", "binding_of", "type_elements"]


def type_elements(type_) -> int:
    """Elements a value of ``type_`` holds (its tensor leaves' static shapes)."""
    from tilefoundry.ir.dim import is_static
    from tilefoundry.ir.tensor_type import tensor_leaves

    total = 0
    for leaf in tensor_leaves(type_):
        count = 1
        for extent in leaf.shape:
            count *= extent if is_static(extent) else 1
        total += count
    return total

def max_eval_elements() -> int:
    from tilefoundry.limits import limit

    return limit("EVAL_ELEMENTS")


def location_of(node) -> str | None:
    span = node.get_metadata(SourceSpanMetadata)
    return str(span) if span else None


def binding_of(node) -> str | None:
    binding = node.get_metadata(BindingMetadata)
    return binding.name if binding else None


def _eval_children(node) -> tuple:
    """What must be known before ``node`` runs: a loop's inits only (its body
    runs inside the loop, trip by trip)."""
    if isinstance(node, GridRegionExpr):
        return node.inits
    return body_children(node)


class _Memo:
    """Values by node, in layers: the top level, then one per running loop
    holding the nodes that change from trip to trip."""

    def __init__(self, domain, limit: int):
        self.domain = domain
        self.limit = limit
        self.layers: list = [(None, {})]
        self.live = 0
        self.statements = 0  # evaluated or committed to by the loops entered

    def commit(self, loop) -> None:
        """Count an outermost loop's whole work before its first trip."""
        from tilefoundry.limits import limit, over

        work = _loop_statements(loop)
        self.statements += work
        if self.statements > limit("EVAL_STATEMENTS"):
            where = location_of(loop)
            raise over("EVAL_STATEMENTS",
                       f"{where + ': ' if where else ''}loop '{loop.induction_var.name}' runs "
                       f"{_trips(loop):,} trips, {work:,} statements in all")

    def get(self, node):
        key = id(node)
        for _, memo in reversed(self.layers):
            if key in memo:
                return memo[key]
        raise KeyError(key)

    def has(self, node) -> bool:
        key = id(node)
        return any(key in memo for _, memo in self.layers)

    def put(self, node, value) -> None:
        for variant, memo in reversed(self.layers):
            if variant is None or id(node) in variant:
                memo[id(node)] = value
                break
        self.live += self.domain.elements(value)
        if self.live > self.limit:
            self._refuse(node, self.live)

    def expect(self, node) -> None:
        """Refuse, before the op runs, a result its type says would pass the
        limit: numpy would allocate it first and end in a MemoryError."""
        coming = self.live + type_elements(node.type)
        if coming > self.limit:
            self._refuse(node, coming)

    def _refuse(self, node, live: int):
        where = location_of(node)
        name = binding_of(node)
        from tilefoundry.limits import LimitError

        raise LimitError(
            f"{where + ': ' if where else ''}executing '{name or type(node).__name__}' would hold "
            f"{live:,} live elements at once, past TILEFOUNDRY_MAX_EVAL_ELEMENTS="
            f"{self.limit:,} (live elements of one execution); bind smaller dimensions (--dim) "
            "or raise the limit with TILEFOUNDRY_MAX_EVAL_ELEMENTS=N")

    def drop(self, node) -> None:
        _, memo = self.layers[0]
        value = memo.pop(id(node), None)
        if value is not None:
            self.live -= self.domain.elements(value)

    def push(self, variant: frozenset) -> None:
        self.layers.append((variant, {}))

    def clear_top_layer(self) -> None:
        _, memo = self.layers[-1]
        self.live -= sum(self.domain.elements(v) for v in memo.values())
        memo.clear()

    def pop(self) -> None:
        self.clear_top_layer()
        self.layers.pop()


def run_body(function, arguments: dict, domain, *, limit: int | None = None):
    """The value of ``function``'s body with ``arguments`` (param Var -> value).

    IEEE exceptions (overflow, invalid) raise no numpy warning: a value that
    became inf or NaN is the program's answer, counted by ``run`` as
    non-finite, not a message on stderr."""
    from tilefoundry.semantics.op_numerics import np

    with np.errstate(all="ignore"):
        return _run_body(function, arguments, domain, limit)


def _run_body(function, arguments: dict, domain, limit):
    memo = _Memo(domain, max_eval_elements() if limit is None else limit)
    for param in function.params:
        memo.put(param, arguments[param])
    order = list(postorder(function.body, children=_eval_children))
    last_use = _last_uses(order)
    keep = {id(function.body)}
    for index, node in enumerate(order):
        if not memo.has(node):
            if isinstance(node, Call):
                memo.expect(node)
            memo.put(node, _evaluate(node, memo, domain))
        for done in last_use.get(index, ()):
            if id(done) not in keep:
                memo.drop(done)
    return memo.get(function.body)


def _last_uses(order: list) -> dict:
    """position in ``order`` -> nodes whose last consumer sits there (a loop
    consumes every outer value its body reads)."""
    position = {id(node): i for i, node in enumerate(order)}
    last: dict = {}
    nodes: dict = {}
    for i, node in enumerate(order):
        inputs = postorder(node, children=body_children) if isinstance(node, GridRegionExpr) else \
            _eval_children(node)
        for child in inputs:
            if child is not node and id(child) in position:
                last[id(child)] = i
                nodes[id(child)] = child
    by_position: dict = {}
    for key, i in last.items():
        by_position.setdefault(i, []).append(nodes[key])
    return by_position


def _evaluate(node, memo: _Memo, domain):
    if isinstance(node, Constant):
        return domain.constant(node)
    if isinstance(node, Tuple):
        return domain.tuple(tuple(memo.get(f) for f in node.fields))
    if isinstance(node, Call):
        return domain.apply(node, tuple(memo.get(a) for a in node.args))
    if isinstance(node, GridRegionExpr):
        return _run_loop(node, memo, domain)
    if isinstance(node, Var):
        raise EvaluationError(f"internal: '{node.name}' is read outside the scope that binds it")
    raise EvaluationError(f"internal: cannot execute a {type(node).__name__} node")


_VARIANT: dict = {}


def _variant_nodes(loop: GridRegionExpr) -> frozenset:
    """ids of the body nodes that change from trip to trip."""
    found = _VARIANT.get(id(loop))
    if found is not None and found[0] is loop:
        return found[1]
    seeds = {id(loop.induction_var), *(id(c) for c in loop.carried)}
    variant = set(seeds)
    for node in postorder(Tuple(loop.yields, None), children=body_children):
        if any(id(child) in variant for child in body_children(node)):
            variant.add(id(node))
    result = frozenset(variant)
    _VARIANT[id(loop)] = (loop, result)
    return result


def _body_order(loop: GridRegionExpr) -> list:
    return list(postorder(Tuple(loop.yields, None), children=_eval_children))[:-1]


def _trips(loop: GridRegionExpr) -> int:
    """The loop's trip count (``GridRegionExpr.trips``: Python's
    len(range(...)), exact past sys.maxsize); a step <= 0 is refused at entry."""
    return loop.trips if loop.step > 0 else 0


_STATEMENTS: dict = {}


def _loop_statements(loop: GridRegionExpr) -> int:
    """Statements the loop evaluates: its trips times the body statements
    that change from trip to trip, an inner loop counting its own (nesting is
    bounded by the program's). What the yields reach without reading the loop
    (the program before it, an invariant of the body) is evaluated once, not
    per trip, and is not the loop's work."""
    found = _STATEMENTS.get(id(loop))
    if found is not None and found[0] is loop:
        return found[1]
    variant = _variant_nodes(loop)
    body = sum(_loop_statements(node) if isinstance(node, GridRegionExpr) else 1
               for node in _body_order(loop)
               if id(node) in variant and isinstance(node, (Call, GridRegionExpr)))
    total = _trips(loop) * max(body, 1)
    _STATEMENTS[id(loop)] = (loop, total)
    return total


def _run_loop(loop: GridRegionExpr, memo: _Memo, domain):
    carried = [memo.get(init) for init in loop.inits]
    start, extent, step = loop.start, loop.extent, loop.step
    if step <= 0:
        raise EvaluationError(f"{location_of(loop) or 'loop'}: loop '{loop.induction_var.name}' "
                              f"has step {step}; a loop advances by a positive step")
    if len(memo.layers) == 1:  # an outermost loop: the inner ones are counted in its work
        memo.commit(loop)
    body_order = _body_order(loop)
    memo.push(_variant_nodes(loop))
    try:
        for index in range(start, extent, step):
            memo.clear_top_layer()
            memo.put(loop.induction_var, domain.index(loop.induction_var, index))
            for var, value in zip(loop.carried, carried):
                memo.put(var, value)
            for node in body_order:
                if not memo.has(node):
                    if isinstance(node, Call):
                        memo.expect(node)
                    memo.put(node, _evaluate(node, memo, domain))
            carried = [memo.get(y) for y in loop.yields]
    finally:
        memo.pop()
    return carried[0] if len(carried) == 1 else domain.tuple(tuple(carried))
