"""``@func`` and ``@module`` (authoring.md §2.1–§2.5, §2.9)."""
from __future__ import annotations

import inspect
import sys

from tilefoundry.errors import VerifyError
from tilefoundry.ir.function import DimVarRangePat, Function, Pattern
from tilefoundry.ir.module import AttachedCallMetadata, Module, copy_tree, rebind_calls, with_related
from tilefoundry.ir.shard import Topology
from tilefoundry.dsl.env import (
    UNDECLARED, Declaration, capture_frames, enclosing_topologies, pop_declaration, push_declaration,
)


class AuthoredFunction(Function):
    """A Function built by ``@func``: also carries ``.specialize`` and ``.converter``."""

    __slots__ = ("role", "base", "sealed", "location")

    def __init__(self, name, params, body, return_type, *, source=None, label=None,
                 role="function", location=None):
        super().__init__(name, params, body, return_type, source=source, label=label)
        self.role = role  # "function" | "variant" | "converter"
        self.base = None
        self.sealed = False
        self.location = location  # (file, line, col) of the def

    def relink(self, original, part) -> None:
        super().relink(original, part)
        self.base = part(original.base) if original.base is not None else None

    @property
    def where(self) -> str:
        return "{}:{}:{}".format(*self.location) if self.location else self.name

    def specialize(self, *patterns):
        if len(patterns) != 1 or not isinstance(patterns[0], DimVarRangePat):
            kinds = [type(p).__name__ for p in patterns]
            raise TypeError(f"'{self.name}'.specialize takes exactly one DimVarRangePat, got {kinds}")
        pattern = patterns[0]
        if self.role != "function":
            raise TypeError(f"'{self.name}' is a {self.role}; specialize the base function")
        if self.sealed:
            raise VerifyError(f"{self.where}: '{self.name}' is sealed (its Module is built); it accepts no more variants")
        frame = sys._getframe(1)

        def decorate(fn):
            _plain_def(fn, f"@{self.name}.specialize(...)")
            if fn.__name__ == "_":
                raise ValueError(f"a variant of '{self.name}' needs a display label other than '_'")
            existing = frame.f_locals.get(fn.__name__)
            if isinstance(existing, AuthoredFunction) and existing.role == "variant":
                raise ValueError(f"variant label '{fn.__name__}' is used twice in this class body")
            dims = {v.name: v for v in self.dimvars()}
            if pattern.dim_var not in dims:
                raise VerifyError(
                    f"{self.where}: DimVarRangePat names '{pattern.dim_var}', which is not a DimVar of "
                    f"'{self.name}''s parameter shapes {sorted(dims) or '(none)'}"
                )
            if any(p == pattern for p, _ in self.variants):
                raise ValueError(f"'{self.name}' already has a variant for {pattern}")
            variant = _parse(fn, frame, UNDECLARED, role="variant", name=self.name)
            if variant.body is None:
                raise VerifyError(f"{variant.where}: variant '{fn.__name__}' of '{self.name}' needs a real body, not `pass`")
            base_sig = [(p.name, p.type, p.is_const) for p in self.params]
            own_sig = [(p.name, p.type, p.is_const) for p in variant.params]
            if base_sig != own_sig or variant.return_type != self.return_type:
                raise VerifyError(
                    f"{variant.where}: variant '{fn.__name__}' must declare the same parameters and "
                    f"return annotation as '{self.name}'"
                )
            variant.base = self
            self.variants.append((pattern, variant))
            return variant

        return decorate

    def converter(self, weight: str):
        params = {p.name: p for p in self.params}
        if weight not in params:
            raise TypeError(f"'{self.name}'.converter({weight!r}): '{self.name}' has no parameter {weight!r}")
        if not params[weight].is_const:
            raise TypeError(f"'{self.name}'.converter({weight!r}): parameter {weight!r} is not a ConstTensor")
        frame = sys._getframe(1)

        def decorate(fn):
            _plain_def(fn, f"@{self.name}.converter(...)")
            converted = _parse(fn, frame, UNDECLARED, role="converter", name=f"{self.name}.converter[{weight}]")
            if converted.body is None:
                raise VerifyError(f"{converted.where}: a converter needs a real body, not `pass`")
            converted.base = self
            self.converters[weight] = converted
            return converted

        return decorate


def _plain_def(fn, decorator: str) -> None:
    """A variant or converter decorator takes a plain def: stacked on one that
    is already an authored function, it is refused by rule (not AttributeError)."""
    if isinstance(fn, AuthoredFunction):
        raise VerifyError(f"{fn.where}: this def is already a {fn.role} of '{fn.name}'; "
                          f"{decorator} takes a plain def: give each its own def")
    if not inspect.isfunction(fn):
        raise TypeError(f"{decorator} decorates a def, got {type(fn).__name__}")


def _is_class_body(frame) -> bool:
    local = frame.f_locals
    return local is not frame.f_globals and "__module__" in local and "__qualname__" in local


def _check_topologies(owner: str, topologies):
    if topologies is UNDECLARED:
        return
    if not isinstance(topologies, tuple):
        raise TypeError(f"{owner}: topologies must be a tuple of Topology, got {type(topologies).__name__}")
    for item in topologies:
        if not isinstance(item, Topology):
            raise TypeError(f"{owner}: topologies must hold Topology values, got {item!r}")
    names = [t.name for t in topologies]
    if len(set(names)) != len(names):
        raise ValueError(f"{owner}: repeated topology level names {names}")


def _check_target(owner: str, target):
    if target is None:
        return
    if isinstance(target, str):
        raise TypeError(f"{owner}: target must be a Target instance, not a string ({target!r}); write e.g. CudaTarget({target!r})")
    from tilefoundry.target.base import Target

    if not isinstance(target, Target):
        raise TypeError(f"{owner}: target must be a Target instance, got {type(target).__name__}")


def _parse(fn, frame, topologies, *, role: str, name: str | None = None) -> AuthoredFunction:
    from tilefoundry.dsl.parser import FuncParser

    if not inspect.isfunction(fn):
        raise TypeError(f"@tilefoundry.func decorates a function, got {type(fn).__name__}")
    in_class = _is_class_body(frame)
    if topologies is UNDECLARED:
        topologies = enclosing_topologies(frame) if in_class else None
    parser = FuncParser(fn, frames=capture_frames(frame), topologies=topologies, in_class=in_class, role=role)
    authored = parser.parse()
    line, col = parser.position(authored.node)
    function = AuthoredFunction(
        name or authored.name, authored.params, authored.body, authored.return_type,
        source=fn, label=fn.__name__, role=role, location=(authored.file, line, col),
    )
    return function


def func(fn=None, *, topologies=UNDECLARED, target=None):
    """``@func`` -> Function; ``@func(target=..., topologies=...)`` -> a one-function Module."""
    has_context = topologies is not UNDECLARED or target is not None

    def build(f, frame):
        _check_topologies(f"@func '{getattr(f, '__name__', f)}'", topologies)
        _check_target(f"@func '{getattr(f, '__name__', f)}'", target)
        if getattr(f, "__name__", None) == "_":
            raise ValueError("@func: '_' is not a kernel name (it is reserved for converters)")
        if _is_class_body(frame):
            existing = frame.f_locals.get(f.__name__)
            if isinstance(existing, AuthoredFunction) and existing.role == "function":
                raise ValueError(f"@func '{f.__name__}' is defined twice in this class body")
        function = _parse(f, frame, topologies, role="function")
        if not has_context:
            return function
        declared = None if topologies is UNDECLARED else topologies
        return Module(function.name, (function,), function.name, (), target, declared)

    if fn is not None:
        if not callable(fn):
            raise TypeError(f"@func takes a function, got {type(fn).__name__}")
        return build(fn, sys._getframe(1))

    def decorate(f):
        return build(f, sys._getframe(1))

    return decorate


# ---------------------------------------------------------------- @module


def module(cls=None, *, entry=None, target=None, topologies=UNDECLARED):
    """``@module`` / ``@module(entry=, target=, topologies=)`` -> ``Module``."""
    if cls is not None:
        if not inspect.isclass(cls):
            raise TypeError(f"@module decorates a class, got {type(cls).__name__}")
        return _build_module(cls, entry, target, topologies, sys._getframe(1).f_code.co_filename)
    _check_target("@module", target)
    _check_topologies("@module", topologies)
    frame = sys._getframe(1)
    declaration = Declaration(topologies, target)
    push_declaration(frame, declaration)

    def decorate(c):
        pop_declaration(frame, declaration)
        if not inspect.isclass(c):
            raise TypeError(f"@module decorates a class, got {type(c).__name__}")
        return _build_module(c, entry, target, topologies, frame.f_code.co_filename)

    return decorate


def _attach(owner: str, child: Module, name: str, where: str = "") -> tuple[Module, dict]:
    """The child as attached under ``name`` and the map from its functions and
    weights to the attached ones. A child renamed here, or already owned, is
    attached as a deep copy: each attachment is its own resource (analysis §2)."""
    if child.target is not None:
        raise VerifyError(
            f"{where}Module '{owner}': child module '{name}' declares its own target {child.target!r}; only "
            "the root module declares a target and children inherit it. The rule: core-ir "
            "Target inheritance"
        )
    if child.name != name or child.owner is not None:
        return copy_tree(child, name)
    return child, {}


def _rebind_child_calls(functions: list, copies: dict) -> None:
    """Calls of an attached child were parsed against the class-body value
    (``lo = Bias``: the original Bias); point each at the copy attached under
    the attribute it was written through (authoring §2.8)."""
    def chooser(call):
        attached = call.get_metadata(AttachedCallMetadata)
        return copies.get(attached.attribute, {}) if attached else {}

    for function in functions:
        for declared in with_related(function):
            rebind_calls(declared, chooser)


def _check_children(cls, owner: str) -> None:
    """Refuse a class body attaching more children than TILEFOUNDRY_MAX_CHILDREN
    before any is copied (each attachment copies the child's whole tree)."""
    from tilefoundry import limits

    count = 0
    for value in vars(cls).values():
        if isinstance(value, Module):
            count += 1
        elif isinstance(value, (tuple, list)):
            count += sum(isinstance(v, Module) for v in value)
    limits.check("CHILDREN", count, f"Module '{owner}' attaches {count:,} child modules")


def _build_module(cls, entry, target, topologies, filename: str | None = None) -> Module:
    owner = cls.__name__
    _check_target(f"Module '{owner}'", target)
    _check_topologies(f"Module '{owner}'", topologies)
    _check_children(cls, owner)
    functions, modules, methods = [], [], {}
    copies: dict = {}  # attribute -> what _attach copied for it
    for name, value in vars(cls).items():
        if name.startswith("__") and name.endswith("__"):
            if name == "__call__":
                raise TypeError(f"{_member_location(cls, name, filename)}Module '{owner}': __call__ is not a member; name the orchestration method `forward`")
            continue
        if isinstance(value, AuthoredFunction):
            if value.role == "function":
                functions.append(value)
        elif isinstance(value, Function):
            functions.append(value)
        elif isinstance(value, Module):
            attached, copies[name] = _attach(owner, value, name, _member_location(cls, name, filename)
                                             if value.target is not None else "")
            modules.append(attached)
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, Module) for v in value):
            for child in value:
                where = _member_location(cls, name, filename) if child.target is not None else ""
                modules.append(_attach(owner, child, child.name, where)[0])
        elif inspect.isfunction(value):
            methods[name] = value
        else:
            raise TypeError(
                f"{_member_location(cls, name, filename)}Module '{owner}': member '{name}' is a {type(value).__name__}; "
                "a @module class body holds @func kernels, child Modules (or tuples of them) and plain "
                "methods (keep constants at module level or in the factory function)"
            )
    if not functions and not modules and not methods:
        raise TypeError(f"Module '{owner}' collects nothing: no @func, child Module or method")
    _check_unique(owner, functions, modules, methods)
    _rebind_child_calls(functions, copies)
    names = [f.name for f in functions]
    if entry is not None and entry not in names:
        raise ValueError(f"Module '{owner}': entry {entry!r} is not a collected function; it collects {names}")
    for function in functions:
        _check_partition(owner, function)
        if isinstance(function, AuthoredFunction):
            function.sealed = True
    declared = None if topologies is UNDECLARED else topologies
    return Module(owner, tuple(functions), entry, tuple(modules), target, declared, {}, methods)


def _member_location(cls, name: str, filename: str | None = None) -> str:
    """``file:line:col: `` of the class-body statement binding ``name`` (the
    file's own 1-based line and column, as every location), or ``""``.
    ``filename`` is the file as the code running the class statement names it
    (relative where the loader was given a relative path)."""
    import ast
    import linecache

    from tilefoundry.text_input import char_column

    try:
        _, first = inspect.getsourcelines(cls)
        path = filename or inspect.getsourcefile(cls)
        lines = linecache.getlines(path)
        tree = ast.parse("".join(lines))
    except (OSError, TypeError, SyntaxError, ValueError):
        return ""
    body, pending = [], list(tree.body)
    while pending:  # the class statement, at any depth (a factory's class too)
        node = pending.pop()
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__ and \
                min([d.lineno for d in node.decorator_list] + [node.lineno]) == first:
            body = node.body
            break
        pending.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names = [stmt.target.id]
        else:
            continue
        if name in names:
            return f"{path}:{stmt.lineno}:{char_column(lines[stmt.lineno - 1], stmt.col_offset)}: "
    return ""


def _check_unique(owner, functions, modules, methods):
    seen: dict = {}
    for kind, names in (("function", [f.name for f in functions]), ("child module", [m.name for m in modules]),
                        ("method", list(methods))):
        for name in names:
            if name in seen:
                raise ValueError(f"Module '{owner}': '{name}' is used by a {seen[name]} and a {kind}")
            seen[name] = kind


def _check_partition(owner: str, function: Function):
    """spec: the variants of a prototype partition its DimVar envelope."""
    if not function.variants:
        return
    where = function.where if isinstance(function, AuthoredFunction) else function.name
    dims = {v.name: v for v in function.dimvars()}
    by_dim: dict = {}
    for pattern, _ in function.variants:
        by_dim.setdefault(pattern.dim_var, []).append(pattern)
    if len(by_dim) != 1:
        raise VerifyError(f"{where}: Module '{owner}': the variants of '{function.name}' name several dims {sorted(by_dim)}; they must partition one DimVar")
    (dim_name, patterns), = by_dim.items()
    dim = dims[dim_name]
    patterns = sorted(patterns, key=lambda p: (p.lo, p.hi))
    covered = "; ".join(f"{dim_name} in [{p.lo}, {p.hi})" for p in patterns)
    problems = []
    cursor = dim.lo
    for pattern in patterns:
        if pattern.lo < dim.lo or pattern.hi > dim.hi:
            problems.append(f"{dim_name} in [{pattern.lo}, {pattern.hi}) reaches outside the envelope")
        if pattern.lo > cursor:
            problems.append(f"{dim_name} in [{cursor}, {pattern.lo}) is not covered")
        elif pattern.lo < cursor:
            problems.append(f"{dim_name} in [{pattern.lo}, {min(cursor, pattern.hi)}) is covered twice")
        cursor = max(cursor, pattern.hi)
    if cursor < dim.hi:
        problems.append(f"{dim_name} in [{cursor}, {dim.hi}) is not covered")
    if problems:
        raise VerifyError(
            f"{where}: Module '{owner}': the variants of '{function.name}' must partition "
            f"{dim_name} in [{dim.lo}, {dim.hi}) (disjoint and complete): {'; '.join(problems)}; "
            f"its variants cover {covered}"
        )


__all__ = ["func", "module", "AuthoredFunction", "Pattern", "DimVarRangePat"]
