"""`tilefoundry diff A B` (docs/views.md): two analyses side by side, every
headline figure of every family with its ratio B/A, and the statements whose
time moved most first.

Both sides are read off their own JSON reports: the figures are
``Analysis.figures()`` (the keys ``api.FIGURES`` names, so a family's figure
added there is a row here with no change), the statements ``--top``'s rows
(``top.statement_rows``: one execution's time times its runs and waves).

Two versions of a kernel name their values differently (``v7`` in one is
``v9`` in the other), so a statement is matched by what it calls and the
how-many-th such call it is in program order (``matmul #1``): the same
program under two targets or two bindings matches itself exactly.
"""
from __future__ import annotations

import re
from fractions import Fraction

from tilefoundry.render.json_contract import dumps, stamp

__all__ = ["diff_document", "diff_json", "diff_text", "figure_rows", "flat_figures",
           "moved_statements", "ratio"]

_CALLEE = re.compile(r"=\s*([A-Za-z_][\w.]*)(.?)")


def flat_figures(figures: dict) -> dict:
    """``figures()`` with nested figures spelled by path: ``flops.bf16``,
    ``traffic.gmem.read``, ``peak_bytes.smem``; a family that did not run
    states None."""
    flat: dict = {}

    def visit(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                visit(f"{prefix}.{key}", value[key])
        else:
            flat[prefix] = value

    for key, value in figures.items():
        visit(key, value)
    return flat


def ratio(a, b) -> float | None:
    """B / A rounded to 4 decimals, from exact integers; None where it has no
    meaning (a text figure, a figure one side lacks, A = 0)."""
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool):
        return None
    if a == 0:
        return None
    return float(round(Fraction(b) / Fraction(a), 4))


def figure_rows(a: dict, b: dict) -> list[dict]:
    """One row per figure either side states: ``figure``, ``a``, ``b``, ``ratio``;
    in the figures' own order (A's first, then any only B states)."""
    flat_a, flat_b = flat_figures(a), flat_figures(b)
    names = list(flat_a) + [name for name in flat_b if name not in flat_a]
    rows = []
    for name in names:
        left, right = flat_a.get(name), flat_b.get(name)
        if left is None and right is None:
            continue
        rows.append({"figure": name, "a": left, "b": right, "ratio": ratio(left, right)})
    return rows


def _callee(statement: str) -> str:
    """The op a statement calls: its callee, or ``slice`` for a subscript
    (``v2 = a[mm, kk]``, whose leading name is a value, not an op)."""
    found = _CALLEE.search(statement)
    if found is None:
        return statement
    return "slice" if found[2] == "[" else found[1]


def _keyed(rows: list[dict]) -> dict:
    """``(callee, k)`` -> the k-th statement calling it, in program order."""
    seen: dict = {}
    keyed = {}
    for row in rows:
        callee = _callee(row["statement"])
        seen[callee] = seen.get(callee, 0) + 1
        keyed[(callee, seen[callee])] = row
    return keyed


def _side(row: dict | None) -> dict | None:
    if row is None:
        return None
    return {"value": row["value"], "statement": row["statement"], "source": row["source"],
            "time_ns": row["time_ns"], "flops": row["flops"], "bytes": row["bytes"]}


def moved_statements(rows_a: list[dict], rows_b: list[dict]) -> list[dict]:
    """Every statement of either side matched by (callee, k), the largest
    change of time first (ties: program order of A, then B's new ones)."""
    keyed_a, keyed_b = _keyed(rows_a), _keyed(rows_b)
    keys = list(keyed_a) + [key for key in keyed_b if key not in keyed_a]
    moved = []
    for key in keys:
        left, right = keyed_a.get(key), keyed_b.get(key)
        time_a = left["time_ns"] if left else 0
        time_b = right["time_ns"] if right else 0
        moved.append({"key": f"{key[0]} #{key[1]}", "a": _side(left), "b": _side(right),
                      "delta_ns": time_b - time_a, "ratio": ratio(time_a, time_b)})
    order = {key: index for index, key in enumerate(keys)}
    return sorted(moved, key=lambda m: (-abs(m["delta_ns"]), order[_parsed(m["key"])]))


def _parsed(key: str) -> tuple:
    callee, _, k = key.rpartition(" #")
    return callee, int(k)


def diff_document(sides: list[dict], figures: list[dict], statements: list[dict],
                  count: int) -> dict:
    """The ``diff`` JSON document (schemas/diff.schema.json)."""
    return stamp({"a": sides[0], "b": sides[1], "figures": figures, "count": count,
                  "statements": statements[:count]}, "diff")


def diff_json(sides, figures, statements, count: int) -> str:
    return dumps(diff_document(sides, figures, statements, count))


def _shown(value) -> str:
    return "-" if value is None else str(value)


def _ratio_text(row: dict) -> str:
    if row["ratio"] is not None:
        return f"{row['ratio']:.4f}"
    if isinstance(row["a"], str) or isinstance(row["b"], str):
        return "same" if row["a"] == row["b"] else "differs"
    return "-"


def _table(rows: list[tuple], right: set) -> list[str]:
    widths = [max(len(line[i]) for line in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(line, widths))).rstrip() for line in rows]


def describe(side: dict) -> str:
    """One side as a command line would name it."""
    parts = [side["selection"]]
    if side.get("target"):
        parts.append(f"--target {side['target']}")
    parts += [f"--dim {name}={value}" for name, value in sorted(side.get("dims", {}).items())]
    return " ".join(parts)


def _b_cell(left: dict | None, right: dict | None) -> str:
    """B's label, and its statement where it reads otherwise than A's."""
    if right is None:
        return "-"
    if left is not None and left["statement"] == right["statement"]:
        return f"{right['value']}  (as A)"
    return f"{right['value']}  {right['statement']}"


def diff_text(sides: list[dict], figures: list[dict], statements: list[dict], count: int) -> str:
    """The figures table, then the ``count`` statements whose time moved most."""
    lines = [f"# A: {describe(sides[0])}", f"# B: {describe(sides[1])}"]
    table = [("figure", "A", "B", "B/A")]
    table += [(row["figure"], _shown(row["a"]), _shown(row["b"]), _ratio_text(row)) for row in figures]
    lines += _table(table, {1, 2, 3})
    shown = statements[:count]
    lines.append(f"# the {len(shown)} statements whose time moved most (of {len(statements)}; "
                 f"time-ns over every run and wave)")
    table = [("statement", "A time-ns", "B time-ns", "B-A", "B/A", "A", "B")]
    for row in shown:
        left, right = row["a"], row["b"]
        table.append((row["key"], _shown(left and left["time_ns"]), _shown(right and right["time_ns"]),
                      f"{row['delta_ns']:+d}", "-" if row["ratio"] is None else f"{row['ratio']:.4f}",
                      f"{left['value']}  {left['statement']}" if left else "-",
                      _b_cell(left, right)))
    lines += _table(table, {1, 2, 3, 4})
    return "\n".join(lines) + "\n"
