"""Reading a printed typed program into comparable facts: (callee, type) per
statement and the signature annotations, with mesh variable spellings
normalised (`cta_2.row` reads as `cta.row`), since names may differ.

Our typed program is the reference's text followed by the Module the function
is analysed in (issue 21 item 7: the printed program is a program again); the
reference prints no Module. ``function_part`` is what the reference prints,
``reanalysed`` the typed program of the printed text read back as a file."""
from __future__ import annotations

import re

_MESH_SUFFIX = re.compile(r"\b([A-Za-z]\w*?)_\d+\.(?=[A-Za-z])")
_STATEMENT = re.compile(r"^(\s+)([A-Za-z_]\w*) = (.*)$")


#: where the printed Module starts (render.printer.module_text)
MODULE_MARK = "\n\n# the Module it is analysed in"


def function_part(text: str) -> str:
    """The typed program without the Module our printer adds after the function:
    what the reference prints, byte for byte."""
    assert text.count(MODULE_MARK) == 1, "a typed program ends with exactly one printed Module"
    return text.split(MODULE_MARK, 1)[0]


def reanalysed(text: str, folder, stem: str = "printed") -> str:
    """Write a printed typed program to ``folder/<stem>.py``, load the file as
    `tilefoundry analyze FILE` does (no selector: its one Module) and print its
    typed program again."""
    from tilefoundry.cli.analyze_cmd import typed_program
    from tilefoundry.dsl.loader import load_selection

    path = folder / f"{stem.replace('.', '_').replace('-', '_')}.py"
    path.write_text(text)
    module, function = load_selection(str(path))
    return typed_program(module, function, None)


def normalise(text: str) -> str:
    return _MESH_SUFFIX.sub(r"\1.", " ".join(text.split()))


def _callee(rhs: str) -> str:
    match = re.match(r"([A-Za-z_]\w*)\s*([(\[])?", rhs)
    if not match:
        return "const"
    if match.group(2) == "[":
        return "subscript"
    if match.group(2) is None:
        return "const"
    return match.group(1)


def _balanced(code: str) -> bool:
    """Whether a statement's brackets close on its own line (it is not multi-line)."""
    depth = 0
    for char in code:
        depth += char in "([{"
        depth -= char in ")]}"
    return depth == 0


def statements(text: str) -> list[tuple[str, str]]:
    """(callee, type) for every commented statement in the body."""
    found = []
    lines = text.split(MODULE_MARK, 1)[0].splitlines()
    index = 0
    in_body = False
    while index < len(lines):
        line = lines[index]
        if line.startswith("def ") or line.startswith("@func"):
            in_body = True
        match = _STATEMENT.match(line) if in_body else None
        if match and "  # " not in line and _balanced(match.group(3)):
            pass  # an uncommented rebind (a loop carry's `total = v3`): no type printed
        elif match and "  # " not in line:
            # a multi-line statement: its comment ends a later line
            while "  # " not in lines[index] and index + 1 < len(lines):
                index += 1
            comment = lines[index].split("  # ", 1)[1]
            found.append((_callee(match.group(3)), normalise(comment.split("; ")[0])))
        elif match:
            comment = line.split("  # ", 1)[1]
            found.append((_callee(match.group(3)), normalise(comment.split("; ")[0])))
        elif in_body and line.lstrip().startswith("for ") and "  # " in line:
            found.append(("for", normalise(line.split("  # ", 1)[1].split("; ")[0])))
        index += 1
    return found


def signature(text: str) -> list[str]:
    """Parameter annotations (in order) then the return annotation, if any."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("def "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(")"))
    params_text = "\n".join(lines[start + 1:end])
    params = [normalise(p.split(":", 1)[1]) for p in re.split(r",\n(?=    \w+: )", params_text) if p.strip()]
    params = [p.rstrip(",") for p in params]
    tail = []
    i = end
    ret = lines[i]
    while not ret.rstrip().endswith(":"):
        i += 1
        ret += "\n" + lines[i]
    if "->" in ret:
        tail = [normalise(ret.split("->", 1)[1].rstrip().rstrip(":"))]
    return sorted(params) + tail
