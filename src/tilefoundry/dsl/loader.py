"""Loading an authored file and resolving ``file.py[:Root[.child...][.function]]``
(authoring.md §2.10, companions §8.2).

- The file's directory goes first on ``sys.path`` while it loads (restored
  after); stdout printed while loading is suppressed.
- Without a selector the file runs whole and must define exactly one Module.
- With one, the file is compiled whole, then run statement by statement (leading
  ``__future__`` imports re-applied); a failing statement is set aside unless it
  binds or reads the root name; if the root ends up unbound the first failure is
  raised.
- A root the file does not bind may be provided by its module-level
  ``__getattr__`` (PEP 562), as ``import`` would: a file can build each of
  several roots only when asked for it; ``__dir__`` names them for listings.
- Every failure is one ``TileFoundryError`` line (no traceback).
"""
from __future__ import annotations

import __future__
import ast
import contextlib
import io
import linecache
import os
import re
import sys
import types
import warnings

from tilefoundry import limits
from tilefoundry.errors import SelectionError, TileFoundryError, did_you_mean
from tilefoundry.limits import LimitError
from tilefoundry.text_input import char_column, line_col, utf8_text
from tilefoundry.ir.function import Function
from tilefoundry.ir.module import Module, with_entry


class SourceError(TileFoundryError):
    """The authored file cannot be read, compiled or executed."""


def source_text(source, who: str) -> str:
    """A SOURCE as text: a str, or a path (``pathlib.Path``, any os.PathLike);
    bytes, None, a number are refused naming what was given."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, str):
        if "\0" in source:
            raise SelectionError(f"{who}: the selection {ascii(source)} holds a NUL character, which no "
                                 "file path can; give 'file.py[:Module[.child...][.function]]'")
        return source
    got = "bytes (decode them: a selection is text)" if isinstance(source, bytes) else \
        type(source).__name__
    raise SelectionError(f"{who}: a selection is 'file.py[:Module[.child...][.function]]' (a "
                         f"str or a pathlib.Path), got {got}")


def split_source(source: str) -> tuple[str, str | None]:
    """``(path, selector or None)`` of ``file.py[:Selector]``; a zoo name
    (``llama3-8b[:Selector]``, issue 40 item 5) is its model file and selector."""
    from tilefoundry.dsl.zoo_names import zoo_source

    zoo = zoo_source(source)
    if zoo is not None:
        return zoo
    path, sep, selector = source.rpartition(":")
    if sep and path and os.sep not in selector and "/" not in selector:
        return path, selector
    return source, None


def _read(path: str) -> str:
    """The file's text, newlines normalised as Python's own reader does. The
    path is named as given (relative stays relative), and a byte that is not
    UTF-8 or a NUL is refused at its line:col."""
    if not os.path.isfile(path):  # the absolute path says where it was looked for
        raise SourceError(f"source file not found: {os.path.abspath(path)}{_zoo_hint(path)}")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SourceError(f"cannot read source file {path}: {exc.strerror}") from None
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark, which Python allows
        data = data[3:]
    text = utf8_text(data, path, SourceError)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\0" in text:
        line, col = line_col(text, text.index("\0"))
        raise SourceError(f"{path}:{line}:{col}: the file holds a NUL character; "
                          "a Python source file cannot contain one (remove it)")
    return text


def _zoo_hint(path: str) -> str:
    """For a name that is no file and no ``.py``: the zoo names a selection may
    be (``tilefoundry models``), with the nearest."""
    if path.endswith(".py") or os.sep in path or "/" in path:
        return ""
    from tilefoundry.dsl.zoo_names import zoo_names

    names = zoo_names()
    return (f"; a selection is file.py[:Selector] or a zoo model[:Selector] ({', '.join(names)})"
            f"{did_you_mean(path, names)}")


def _new_module(path: str, text: str) -> types.ModuleType:
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"_tilefoundry_source_{stem}_{abs(hash(os.path.abspath(path))) % 10**8}"
    module = types.ModuleType(name)
    module.__file__ = os.path.abspath(path)
    module.__builtins__ = __builtins__
    sys.modules[name] = module
    # lines end at "\n" only, as Python numbers them: str.splitlines would
    # also break at a form feed or U+2028 in a comment and shift every line
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    linecache.cache[path] = (len(text), None, lines, os.path.abspath(path))
    return module


def _user_location(path: str, exc: BaseException) -> str | None:
    """``path:line:col`` of the innermost traceback frame in the user's file:
    the failing expression, or the one string literal in it whose value the
    message quotes (``Tensor[(8,), "f8e4m3"]`` refused for 'f8e4m3' points at
    the string, the token the message names)."""
    import traceback  # a failure's path only

    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == path:
            found = frame
    if found is None:
        return None
    line, offset = _quoted_literal(path, found, str(exc)) or (found.lineno, found.colno or 0)
    # a code position counts bytes; the column counts characters
    return f"{path}:{line}:{char_column(linecache.getline(path, line), offset)}"


def _quoted_literal(path: str, frame, message: str) -> tuple[int, int] | None:
    """(line, byte offset) of the only string literal of the frame's
    expression whose repr the message contains, or None."""
    if None in (frame.colno, frame.end_lineno, frame.end_colno) or "'" not in message:
        return None
    lines = [linecache.getline(path, n).encode("utf-8") for n in range(frame.lineno, frame.end_lineno + 1)]
    if not all(lines):
        return None
    lines[-1] = lines[-1][:frame.end_colno]
    lines[0] = lines[0][frame.colno:]
    try:
        tree = ast.parse(b"(" + b"".join(lines) + b"\n)", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spots = {(node.lineno, node.col_offset) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and repr(node.value) in message}
    if len(spots) != 1:
        return None
    line, col = spots.pop()
    return (frame.lineno, frame.colno + col - 1) if line == 1 else (frame.lineno + line - 1, col)


def _failure(path: str, exc: BaseException) -> TileFoundryError:
    if isinstance(exc, TileFoundryError):
        message = exc.raw
        location = _user_location(path, exc)
        if location is None or "  at " in message or message.startswith(path) or f"{path}:" in message:
            return exc
        # a rule refused while the file ran (a Tensor[...] evaluated at `def`
        # time, a Module built by a decorator): say which line of the file
        located = type(exc).__new__(type(exc))
        located.args = (f"{location}: {message}",)
        return located
    if isinstance(exc, SyntaxError) and exc.filename == path:
        return SourceError(f"{path}:{exc.lineno}:{exc.offset or 0}: SyntaxError: {exc.msg}")
    location = _user_location(path, exc)
    where = location or path  # file:line:col of the failing expression
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):
        code = f"({exc.code!r})" if isinstance(exc, SystemExit) and exc.code is not None else ""
        return SourceError(f"{where}: the program raised {type(exc).__name__}{code} while loading; "
                           "a program file must define its Modules, not exit")
    text = str(exc).splitlines()[0] if str(exc) else ""
    own = re.match(rf"({re.escape(path)}:\d+:\d+): (.*)", text)
    if own:  # a decorator refusal that names its own file:line:col (a class member)
        return SourceError(f"{own.group(1)}: {type(exc).__name__}: {own.group(2)}")
    return SourceError(f"{where}: {type(exc).__name__}: {text}" if text else f"{where}: {type(exc).__name__}")


@contextlib.contextmanager
def _loading(path: str):
    """The file's directory first on ``sys.path`` while it loads (it may import
    its siblings), and ``sys.path`` as it was afterwards: left there, a program
    named after a standard module (``copy.py``) would shadow it for everything
    the process imports later."""
    directory = os.path.dirname(os.path.abspath(path))
    was_at = sys.path.index(directory) if directory in sys.path else None
    if was_at is not None:
        sys.path.remove(directory)
    sys.path.insert(0, directory)
    # stdout and stderr printed and warnings raised while the file runs (a
    # SyntaxWarning of its own text re-parsed by @func) are the program's, not
    # the report's: the CLI's stderr stays the one line of a refusal
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if directory in sys.path:
            sys.path.remove(directory)
        if was_at is not None:
            sys.path.insert(was_at, directory)


def _compile(path: str, text: str) -> ast.Module:
    """The file's syntax tree, compiled once whole so that a compile-time error
    (a repeated keyword argument) is refused before any statement runs; the
    @func parser reads each function's source span off the same tree."""
    tree = _syntax_tree(path, text)
    from tilefoundry.dsl.parser import note_source_tree

    note_source_tree(path, text, tree)
    return tree


def _syntax_tree(path: str, text: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as in _loading: stderr is one line or none
            tree = ast.parse(text, filename=path)
            _check_nesting(path, tree, text)
            compile(tree, path, "exec", flags=_future_flags(tree), dont_inherit=True)
    except SyntaxError as exc:
        raise SourceError(f"{path}:{exc.lineno}:{exc.offset or 0}: SyntaxError: {exc.msg}") from None
    except (RecursionError, MemoryError):  # Python's own parser gave up first
        line, col = _deepest_line(text)
        raise too_deep(f"{path}:{line}:{col}") from None
    except ValueError as exc:
        raise SourceError(f"{path}: cannot compile: {exc}") from None
    return tree


def too_deep(where: str) -> LimitError:
    return limits.over("NESTING", f"{where}: the code nests too deeply")


def _check_nesting(path: str, tree: ast.AST, text: str) -> None:
    """Refuse a tree deeper than the nesting limit before anything (Python's
    compiler, the body parser) walks it recursively."""
    bound = limits.limit("NESTING")
    node_type = ast.AST
    stack = [(tree, 0)]
    pop, push = stack.pop, stack.append
    while stack:  # ast.iter_child_nodes, without a generator per node (a file has thousands)
        node, depth = pop()
        if depth > bound:
            line = getattr(node, "lineno", 1)
            column = char_column(text.split("\n")[line - 1], getattr(node, "col_offset", 0))
            raise too_deep(f"{path}:{line}:{column}")
        depth += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        push((item, depth))
            elif isinstance(value, node_type):
                push((value, depth))


def _deepest_line(text: str) -> tuple[int, int]:
    """Where a text too deep for Python's parser nests most: the line with the
    longest run of operators and open brackets (the tokenizer is iterative)."""
    import tokenize

    best, run, start, where = -1, 0, (1, 1), (1, 1)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.OP or token.string in ")]}":
                run = 0
                continue
            if run == 0:
                start = (token.start[0], token.start[1] + 1)
            run += 1
            if run > best:
                best, where = run, start
    except (tokenize.TokenError, SyntaxError):
        pass  # the deepest place seen so far is still the best answer
    return where


def load_module_file(path: str) -> types.ModuleType:
    """Execute a source file whole and return it as a module object."""
    path = source_text(path, "tilefoundry.load_module_file")
    text = _read(path)
    tree = _compile(path, text)
    module = _new_module(path, text)
    with _loading(path):
        try:
            exec(compile(tree, path, "exec"), module.__dict__)  # noqa: S102 -- the user's program
        except BaseException as exc:  # noqa: BLE001 -- one line, never a traceback
            # SystemExit and KeyboardInterrupt too: a program that exits or
            # interrupts itself while loading is refused like any failure
            raise _failure(path, exc) from None
    return module


def _future_flags(tree: ast.Module) -> int:
    flags = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            for alias in stmt.names:
                feature = getattr(__future__, alias.name, None)
                if feature is not None:
                    flags |= feature.compiler_flag
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            break
    return flags


def _touches(stmt, name: str) -> bool:
    if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
        return True
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == name:
            return True
    return False


def _bound_names(stmt) -> list[str]:
    """Names a top-level statement binds (a class, def, assignment or import)."""
    if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in stmt.names]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]


def _cause(stmt, exc: BaseException, namespace: dict, set_aside: dict):
    """The earlier failure this one stems from, or None. A statement that reads
    a name an earlier failing statement left unbound, and is refused for that
    name, failed because of that statement: `class Layer` reading `NORM_EPS`
    after `NORM_EPS = float("1e-6f")` failed, or any use of a name a failed
    `import` should have bound. Reporting the first failure is what says what
    to fix (authoring §2.10); a later "not defined" only repeats its effect."""
    message = str(exc)
    for name in _unbound_reads(stmt, namespace):
        named = getattr(exc, "name", None) == name if isinstance(exc, NameError) else f"'{name}'" in message
        if not named:
            continue
        if name in set_aside:
            return set_aside[name]
        if "*" in set_aside:  # a failed `from pkg import *` binds names no one can list
            return set_aside["*"]
    return None


def _unbound_reads(stmt, namespace: dict) -> list[str]:
    """Names a statement reads (its bodies included) that nothing has bound."""
    import builtins

    names = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id not in names:
            if node.id not in namespace and not hasattr(builtins, node.id):
                names.append(node.id)
    return names


def _load_for_root(path: str, root: str) -> dict:
    text = _read(path)
    tree = _compile(path, text)
    flags = _future_flags(tree)
    module = _new_module(path, text)
    namespace = module.__dict__
    first_failure = None
    set_aside: dict[str, TileFoundryError] = {}  # name a failed statement would bind -> its failure
    with _loading(path):
        for stmt in tree.body:
            code = compile(ast.Module(body=[stmt], type_ignores=[]), path, "exec", flags=flags, dont_inherit=True)
            try:
                exec(code, namespace)  # noqa: S102 -- the user's program
            except BaseException as exc:  # noqa: BLE001 -- SystemExit too (load_module_file)
                failure = _cause(stmt, exc, namespace, set_aside) or _failure(path, exc)
                if _touches(stmt, root) or not isinstance(exc, Exception):
                    # a program that stops itself (SystemExit), or is stopped
                    # (KeyboardInterrupt, a caller's time guard), is refused,
                    # never set aside to run the statements after it
                    raise failure from None
                for name in _bound_names(stmt):
                    set_aside.setdefault(name, failure)
                if first_failure is None:
                    first_failure = failure
        if root not in namespace and callable(namespace.get("__getattr__")):
            try:
                _provided(namespace, root)
            except BaseException as exc:  # noqa: BLE001 -- the user's hook, refused like a statement
                raise _failure(path, exc) from None
    if root not in namespace and first_failure is not None:
        raise first_failure
    return namespace


def _provided(namespace: dict, name: str):
    """``namespace[name]``, else what the file's module-level ``__getattr__``
    (PEP 562) provides for it, kept in ``namespace``; None when neither has it."""
    if name in namespace:
        return namespace[name]
    hook = namespace.get("__getattr__")
    if not callable(hook):
        return None
    try:
        value = hook(name)
    except AttributeError:
        return None
    namespace[name] = value
    return value


def _only_module(path: str, namespace: dict) -> Module:
    with _loading(path):
        try:
            _provide_listed(namespace)
        except BaseException as exc:  # noqa: BLE001 -- the user's hook, refused like a statement
            raise _failure(path, exc) from None
    found: dict[int, tuple[str, Module]] = {}
    functions = []
    for name, value in namespace.items():
        if name.startswith("__"):
            continue
        if isinstance(value, Module):
            found.setdefault(id(value), (name, value))
        elif isinstance(value, Function):
            functions.append(name)
    if len(found) > 1:
        names = sorted(name for name, _ in found.values())
        raise SelectionError(f"source defines multiple Modules ({', '.join(names)}); add ':Module'")
    if not found:
        if functions:
            raise SelectionError(
                f"source defines no TileFoundry Module (only bare functions: {', '.join(sorted(functions))}); "
                "a bare @func has no target or topologies -- declare a @module class, or "
                "@func(target=..., topologies=...)"
            )
        raise SelectionError("source defines no TileFoundry Module")
    return next(iter(found.values()))[1]


def _listing(kind: str, names) -> str:
    return f"{kind} {', '.join(sorted(names))}" if names else f"no {kind}"


def _provide_listed(namespace: dict) -> None:
    """Build every name the file's ``__dir__`` (PEP 562) lists and its
    ``__getattr__`` provides: a listing, or a file run whole, asks for all."""
    lister = namespace.get("__dir__")
    if callable(lister):
        for name in list(lister()):
            if isinstance(name, str) and not name.startswith("__"):
                _provided(namespace, name)


def _root_modules(namespace: dict) -> list[str]:
    try:
        _provide_listed(namespace)
    except Exception:  # noqa: BLE001 -- a listing in a refusal names what it can
        pass
    return [name for name, value in namespace.items()
            if not name.startswith("__") and isinstance(value, Module)]


def _no_root(selector: str, root_name: str, namespace: dict) -> SelectionError:
    """The root names nothing: say which Modules the source does define, and
    the nearest of them; a bare function name that one Module's function has
    suggests that function's selector (``add2`` -> ``Add.add2``)."""
    roots = _root_modules(namespace)
    owners: dict[str, set] = {}
    for root in roots:
        for function in namespace[root].functions:
            owners.setdefault(function.name, set()).add(f"{root}.{function.name}")
    selectors = {name: paths.pop() for name, paths in owners.items() if len(paths) == 1}
    hint = did_you_mean(root_name, selectors.values(), aliases=selectors, close=False) \
        if root_name in selectors else ""
    return SelectionError(
        f"selector '{selector}' is not defined by the source; it defines "
        f"{_listing('the Modules' if len(roots) != 1 else 'the Module', roots)}"
        f"{hint or did_you_mean(root_name, roots)}"
    )


def _no_child(selector: str, node: Module, segment: str, last: bool) -> SelectionError:
    """A segment names no child (nor, as the last one, a function): say what
    this Module holds, and the nearest of it."""
    children = [m.name for m in node.modules]
    functions = [f.name for f in node.functions] if last else []
    holds = _listing("children", children)
    if last:
        holds += f" and {_listing('functions', functions)}"
    return SelectionError(
        f"selector '{selector}': Module '{node.name}' has no child module '{segment}'; "
        f"it has {holds}{did_you_mean(segment, children + functions)}"
    )


def resolve_selector(namespace: dict, selector: str) -> Module:
    segments = selector.split(".")
    if any(not s for s in segments):
        raise SelectionError(f"selector '{selector}': an empty segment names nothing. Write Root[.child...][.function]")
    root_name = segments[0]
    node = _provided(namespace, root_name)
    if node is None and root_name not in namespace:
        raise _no_root(selector, root_name, namespace)
    if isinstance(node, Function):
        raise SelectionError(
            f"selector '{selector}' resolves to Function, expected a Module. A bare @func has no "
            "target or hierarchy; select the @module that declares it, or write "
            "@func(target=..., topologies=...)"
        )
    if not isinstance(node, Module):
        roots = _root_modules(namespace)
        raise SelectionError(f"selector '{selector}' resolves to {type(node).__name__}, expected a Module; "
                             f"the source defines {_listing('the Modules', roots)}")
    for index, segment in enumerate(segments[1:], start=1):
        child = node.child(segment)
        if child is not None:
            node = child
            continue
        last = index == len(segments) - 1
        if last:
            found = node.function_named(segment)
            if len(found) == 1:
                return with_entry(node, segment)
            if len(found) > 1:
                raise SelectionError(
                    f"Module '{node.name}': '{segment}' must resolve to exactly one function, found {len(found)}"
                )
        raise _no_child(selector, node, segment, last)
    return node


def load_selection(source: str) -> tuple[Module, Function]:
    """``file.py[:Root[.child...][.function]]`` (a str or a ``pathlib.Path``)
    -> (selected Module, its entry Function)."""
    path, selector = split_source(source_text(source, "tilefoundry.load_selection"))
    if selector is None:
        module = _only_module(path, load_module_file(path).__dict__)
    else:
        if selector == "":
            raise SelectionError("selector '': an empty segment names nothing. Write Root[.child...][.function]")
        namespace = _load_for_root(path, selector.split(".")[0])
        module = resolve_selector(namespace, selector)
    return module, module.entry_function()


def selection_loader(path: str):
    """``selector -> (Module, entry Function)`` over one file, which runs once
    per root Module named (not once per selection, as ``load_selection``
    would): a sweep selects many children of one file. A root whose file
    fails to run fails every selector of it with that one refusal; a
    selector naming nothing fails alone. ``None`` selects the file's only
    Module. The file is read on first use."""
    namespaces: dict = {}  # root name (or None: the whole file) -> namespace or its failure

    def namespace(root):
        if root not in namespaces:
            try:
                namespaces[root] = (_load_for_root(path, root) if root is not None
                                    else load_module_file(path).__dict__)
            except TileFoundryError as exc:
                namespaces[root] = exc
        found = namespaces[root]
        if isinstance(found, TileFoundryError):
            raise found
        return found

    def select(selector: str | None) -> tuple[Module, Function]:
        if selector is None:
            module = _only_module(path, namespace(None))
        else:
            if selector == "" or not selector.split(".")[0]:
                raise SelectionError(f"selector '{selector}': an empty segment names nothing. "
                                     "Write Root[.child...][.function]")
            module = resolve_selector(namespace(selector.split(".")[0]), selector)
        return module, module.entry_function()

    return select


__all__ = ["load_selection", "load_module_file", "resolve_selector", "selection_loader", "source_text",
           "split_source", "SourceError"]
