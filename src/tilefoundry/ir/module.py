"""Modules: a tree of functions and child modules with target and topologies
(companions §3, authoring.md §2.1, §2.6)."""
from __future__ import annotations

import copy
from dataclasses import field

from tilefoundry.errors import SelectionError, VerifyError
from tilefoundry.ir.expr import Call, Constant, GridRegionExpr, Tuple, Var, postorder
from tilefoundry.ir.frozen import frozen_record
from tilefoundry.ir.frozen import frozen_dataclass
from tilefoundry.ir.function import Function
from tilefoundry.ir.metadata import IRMetadata

_UNDECLARED = None  # topologies=None means "inherit from the owner"


@frozen_record(eq=False)
class Module:
    """An authored module: its functions, entry, child modules, target and declared topology
    levels."""

    name: str
    functions: tuple = ()
    entry: str | None = None
    modules: tuple = ()
    target: object = None
    topologies: tuple | None = _UNDECLARED
    metadata: dict = field(default_factory=dict)
    methods: dict = field(default_factory=dict)
    owner: "Module | None" = field(default=None, repr=False)

    def __post_init__(self):
        if isinstance(self.target, str):
            raise TypeError(
                f"Module '{self.name}': target must be a Target instance, not a string "
                f"({self.target!r}); write e.g. target=CudaTarget({self.target!r})"
            )
        if self.topologies is not None:
            if not isinstance(self.topologies, tuple):
                raise TypeError(
                    f"Module '{self.name}': topologies must be a tuple of Topology, "
                    f"got {type(self.topologies).__name__}"
                )
            names = [t.name for t in self.topologies]
            if len(set(names)) != len(names):
                raise ValueError(f"Module '{self.name}': repeated topology names {names}")
        for child in self.modules:
            if child.target is not None:
                raise VerifyError(
                    f"Module '{self.name}': child module '{child.name}' declares a target; "
                    "only the root of a module tree may declare one (the rule: core-ir "
                    "Target inheritance); remove target= from the child"
                )
            object.__setattr__(child, "owner", self)
        for function in self.functions:
            function.owner = self

    # ---------------------------------------------------------------- lookups
    @property
    def path(self) -> str:
        parts = []
        node = self
        while node is not None:
            parts.append(node.name)
            node = node.owner
        return ".".join(reversed(parts))

    def child(self, name: str) -> "Module | None":
        for module in self.modules:
            if module.name == name:
                return module
        return None

    def function_named(self, name: str) -> tuple:
        return tuple(f for f in self.functions if f.name == name)

    def lookup(self, name: str) -> Function:
        found = self.function_named(name)
        if len(found) != 1:
            raise SelectionError(
                f"Module '{self.name}': '{name}' must resolve to exactly one function, found {len(found)}"
            )
        return found[0]

    def entry_function(self) -> Function:
        if self.entry is None:
            names = ", ".join(f.name for f in self.functions) or "no functions"
            raise SelectionError(
                f"Module '{self.name}' declares no entry, so it has no default step. "
                f"It declares {names}; name the function to use -- lookup('<name>') for "
                f"the node, or {self.name}.<name>(...) to run it. The rule: core-ir "
                "default step"
            )
        return self.lookup(self.entry)

    def resolve_target(self):
        node = self
        while node is not None:
            if node.target is not None:
                return node.target
            node = node.owner
        raise SelectionError(
            f"Module '{self.path}': no target is declared by this module or any of its "
            "owners; declare a Target instance on the root module. The rule: core-ir "
            "Target inheritance"
        )

    def effective_topologies(self) -> tuple:
        node = self
        while node is not None:
            if node.topologies is not None:
                return node.topologies
            node = node.owner
        return ()

    def resolve_topology(self, name: str):
        for topology in self.effective_topologies():
            if topology.name == name:
                return topology
        levels = [t.name for t in self.effective_topologies()]
        raise VerifyError(
            f"Module '{self.path}': no topology named '{name}'; effective topology "
            f"levels are {levels or 'none'}"
        )

    @property
    def weights(self) -> dict:
        """Union of ConstTensor params in function then parameter order."""
        found: dict = {}
        for function in self.functions:
            for param in function.params:
                if not param.is_const:
                    continue
                if param.name in found and found[param.name] != param.type:
                    raise VerifyError(
                        f"Module '{self.name}': weight '{param.name}' has unequal types "
                        f"{found[param.name]} and {param.type}"
                    )
                found[param.name] = param.type
        return found

    # ---------------------------------------------------------------- copies
    def renamed(self, name: str) -> "Module":
        return _deep_copy_module(self, name)

    def cloned(self) -> "Module":
        return _deep_copy_module(self, self.name)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        for module in object.__getattribute__(self, "modules"):
            if module.name == name:
                return module
        for function in object.__getattribute__(self, "functions"):
            if function.name == name:
                return function
        methods = object.__getattribute__(self, "methods")
        if name in methods:
            return methods[name].__get__(self)
        raise AttributeError(f"Module '{self.name}' has no member '{name}'")

    def __call__(self, *args, **kwargs):
        if "forward" in self.methods:
            return self.methods["forward"](self, *args, **kwargs)
        raise TypeError(f"Module '{self.name}' has no forward method to call")

    def __repr__(self) -> str:
        return f"Module({self.name})"


def _deep_copy_module(module: Module, name: str) -> Module:
    """An independent copy: functions, bodies and children; internal calls re-pointed."""
    return copy_tree(module, name)[0]


@frozen_dataclass
class AttachedCallMetadata(IRMetadata):
    """On a call of a child Module: the class-body attribute it was written
    through, so that a child attached twice (``lo = Bias``, ``hi = Bias``)
    sends each call to its own copy (authoring §2.8)."""

    attribute: str


def copy_tree(module: Module, name: str) -> tuple[Module, dict]:
    """A deep copy of ``module`` named ``name`` and unowned, with the map
    id(authored Function or node) -> its copy. Functions declared in the subtree,
    their variants, converters and bodies are new, and calls between them point
    at the copies; immutable values (types, ops, records) are shared, and a
    call leaving the subtree keeps its callee."""
    copier = _TreeCopy()
    duplicate = copier.module(module, name)
    return duplicate, copier.nodes


def rebind_calls(function: Function, copies: dict) -> None:
    """Re-point one not yet attached Function's calls (and the child weights
    they pass) at copies made by ``copy_tree``; ``copies`` is a mapping or
    ``callable(call) -> mapping`` choosing one per call."""
    if function.body is None:
        return
    for node in postorder(function.body):
        if not isinstance(node, Call) or not isinstance(node.op, Function):
            continue
        table = copies(node) if callable(copies) else copies
        if id(node.op) in table:
            node.op = table[id(node.op)]
            node.args = tuple(table.get(id(a), a) if isinstance(a, Var) else a for a in node.args)


class _TreeCopy:
    """One copy operation; ``nodes`` maps id(original) -> copy, for Functions,
    Vars and body nodes alike, so every use of one original meets one copy."""

    def __init__(self):
        self.nodes: dict[int, object] = {}
        self._keep: list = []  # the originals, so their ids stay unique while mapped

    def module(self, module: Module, name: str) -> Module:
        declared = [f for m in subtree(module) for top in m.functions for f in with_related(top)]
        for function in declared:
            self._remember(function, function.copy_shell())
        for function in declared:
            self.nodes[id(function)].relink(function, self._function_part)
        return self._module(module, name)

    def _module(self, module: Module, name: str) -> Module:
        # children before their owner (a Module is built from its copied
        # children); deepest last in subtree(), so built first walking it back
        copies: dict[int, Module] = {}
        for node in reversed(subtree(module)):
            children = tuple(copies[id(child)] for child in node.modules)
            functions = tuple(self.nodes[id(f)] for f in node.functions)
            copies[id(node)] = Module(name if node is module else node.name, functions, node.entry,
                                      children, node.target, node.topologies,
                                      dict(node.metadata), dict(node.methods))
        return copies[id(module)]

    def _remember(self, original, duplicate):
        self.nodes[id(original)] = duplicate
        self._keep.append(original)
        return duplicate

    def _function_part(self, value):
        """The copy of a Function's param, body or related Function."""
        if isinstance(value, Function):
            return self.nodes.get(id(value), value)
        return self._expr(value)

    def _expr(self, root):
        for node in postorder(root, skip=self.nodes):
            self._remember(node, self._rebuild(node))
        return self.nodes[id(root)]

    def _rebuild(self, node):
        mapped = self._mapped
        if isinstance(node, Var):
            new = Var(node.name, node.type, node.is_const)
        elif isinstance(node, Constant):
            new = Constant(node.value, node.type)
        elif isinstance(node, Call):
            new = Call(self.nodes.get(id(node.op), node.op), tuple(map(mapped, node.args)), node.type,
                       node.structure)
        elif isinstance(node, Tuple):
            new = Tuple(tuple(map(mapped, node.fields)), node.type)
        elif isinstance(node, GridRegionExpr):
            new = GridRegionExpr(
                mapped(node.induction_var), tuple(map(mapped, node.carried)),
                tuple(map(mapped, node.inits)), tuple(map(mapped, node.yields)),
                node.start, node.extent, node.step, node.kind, node.type,
            )
        else:
            raise TypeError(f"copying a Module: unexpected body node {type(node).__name__}")
        new._metadata = dict(node._metadata)
        return new

    def _mapped(self, node):
        if id(node) not in self.nodes:  # a loop's own Vars are met first here
            self._remember(node, self._rebuild(node))
        return self.nodes[id(node)]


def subtree(module: Module) -> list[Module]:
    """The Module and its children, depth first in declaration order -- never its
    owners (a selected child's copy must not reach the root's other copies).
    A Module that is its own descendant is refused, naming the cycle (the walk
    would never end)."""
    found = []
    owner_of: dict[int, Module | None] = {id(module): None}  # the walk's own parent links
    stack = [module]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in reversed(node.modules):
            if id(child) in owner_of:  # met again: an ancestor (a cycle) or a shared child
                _refuse_cycle(child, node, owner_of)
            owner_of[id(child)] = node
            stack.append(child)
    return found


def _refuse_cycle(child: Module, owner: Module, owner_of: dict) -> None:
    path = [owner]
    while owner_of[id(path[-1])] is not None:
        path.append(owner_of[id(path[-1])])
    if not any(child is ancestor for ancestor in path):
        return  # a child attached twice, not a cycle: copy_tree copies it per place
    path = path[:next(i for i, m in enumerate(path) if m is child) + 1]
    chain = " -> ".join(m.name for m in reversed(path)) + f" -> {child.name}"
    raise VerifyError(
        f"Module '{child.name}' is its own descendant ({chain}); a module tree "
        "has no cycles: attach a fresh copy (Module.renamed) instead of an ancestor")


def with_related(function: Function) -> list[Function]:
    """A declared Function with its variants and converters (theirs too)."""
    found = []
    stack = [function]
    while stack:  # depth first, declaration order
        current = stack.pop()
        found.append(current)
        related = [v for _, v in current.variants] + list(current.converters.values())
        stack.extend(reversed(related))
    return found


def with_entry(module: Module, function_name: str) -> Module:
    """The module re-entried at one of its functions, keeping its context (the
    resolved target and effective topologies are copied in). It shares the
    module's functions and children but claims none of them, so the tree it was
    selected from is unchanged and the selection is the tree its analysis sees."""
    target = None
    try:
        target = module.resolve_target()
    except SelectionError:
        pass
    selected = copy.copy(module)  # no __post_init__: that would re-parent the children
    context = {"entry": function_name, "target": target,
               "topologies": module.effective_topologies(), "owner": module.owner}
    for name, value in context.items():
        object.__setattr__(selected, name, value)
    return selected


def select(root: Module, path: str) -> Module:
    """Walk ``a.b.fn`` from ``root``: children first; the last may name a function."""
    if path == "":
        return root
    segments = path.split(".")
    node = root
    for index, segment in enumerate(segments):
        if not segment:
            raise SelectionError(
                f"selector '{path}': an empty segment names nothing. Write Root.child.function"
            )
        child = node.child(segment)
        if child is not None:
            node = child
            continue
        if index == len(segments) - 1 and node.function_named(segment):
            return with_entry(node, segment)
        raise SelectionError(f"selector '{path}': Module '{node.name}' has no child module '{segment}'")
    return node


def dotted_tree(module: Module, prefix: str = "") -> list[tuple[Module, str]]:
    """(Module, its dotted path from ``module`` ending in '.') for the whole
    tree, owner before children, depth first in declaration order; iterative,
    since a tree can nest deeper than Python's stack."""
    found = []
    stack = [(module, prefix)]
    while stack:
        node, path = stack.pop()
        found.append((node, path))
        stack.extend((child, f"{path}{child.name}.") for child in reversed(node.modules))
    return found


def function_selectors(module: Module, prefix: str = "") -> list[tuple[str, Function]]:
    """(dotted selector, Function) for every function of the tree."""
    return [(f"{path}{function.name}", function)
            for node, path in dotted_tree(module, prefix) for function in node.functions]
