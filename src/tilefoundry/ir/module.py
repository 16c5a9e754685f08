"""Modules: a tree of functions and child modules with target and topologies
(companions §3, authoring.md §2.1, §2.6)."""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

from tilefoundry.errors import SelectionError, VerifyError
from tilefoundry.ir.function import Function

_UNDECLARED = None  # topologies=None means "inherit from the owner"


@dataclass(frozen=True, eq=False)
class Module:
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
                    "only the root of a module tree may declare one (the rule: tilefoundry "
                    "spec core-ir target-inheritance); remove target= from the child"
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
                f"the node, or {self.name}.<name>(...) to run it. The rule: tilefoundry "
                "spec core-ir default-step"
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
            "owners; declare a Target instance on the root module. The rule: tilefoundry "
            "spec core-ir target-inheritance"
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
    memo: dict = {id(module.owner): module.owner} if module.owner is not None else {}
    duplicate = copy.deepcopy(module, memo)
    object.__setattr__(duplicate, "name", name)
    object.__setattr__(duplicate, "owner", None)
    return duplicate


def with_entry(module: Module, function_name: str) -> Module:
    """A copy of the module re-entried at one of its functions, keeping context."""
    target = None
    try:
        target = module.resolve_target()
    except SelectionError:
        pass
    selected = dataclasses.replace(
        module, entry=function_name, target=None, topologies=module.effective_topologies()
    )
    object.__setattr__(selected, "target", target)
    object.__setattr__(selected, "owner", module.owner)
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


def function_selectors(module: Module, prefix: str = "") -> list[tuple[str, Function]]:
    found = []
    for function in module.functions:
        found.append((f"{prefix}{function.name}", function))
    for child in module.modules:
        found.extend(function_selectors(child, f"{prefix}{child.name}."))
    return found
