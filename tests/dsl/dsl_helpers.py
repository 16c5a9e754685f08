"""Helpers for the authoring front-end tests: small programs written to tmp files."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"

HEADER = (
    "from tilefoundry import module\n"
    "from tilefoundry.dsl import *\n"
    "from tilefoundry.target import CudaTarget\n"
    "\n"
)


def ops_ready() -> bool:
    try:
        import tilefoundry.ops  # noqa: F401
        from tilefoundry.semantics.op_registry import TF_NAMES

        return "matmul" in TF_NAMES and "tuple_get_item" in TF_NAMES
    except Exception:  # noqa: BLE001
        return False


needs_ops = pytest.mark.skipif(not ops_ready(), reason="tilefoundry.ops not available yet")


class Program:
    def __init__(self, path: Path):
        self.path = path
        self.lines = path.read_text().splitlines()

    def __str__(self) -> str:
        return str(self.path)

    def locate(self, needle: str, occurrence: int = 1, *, after: int = 0) -> str:
        """``file:line:col`` of ``needle`` (the file's own 1-based line and
        column, as every location), searching lines after line ``after``."""
        seen = 0
        for number, line in enumerate(self.lines, start=1):
            if number <= after:
                continue
            start = 0
            while True:
                col = line.find(needle, start)
                if col < 0:
                    break
                seen += 1
                if seen == occurrence:
                    return f"{self.path}:{number}:{col + 1}"
                start = col + 1
        raise AssertionError(f"{needle!r} not in program")

    def load(self, selector: str):
        from tilefoundry.dsl.loader import load_selection

        return load_selection(f"{self.path}:{selector}")


@pytest.fixture
def program(tmp_path):
    counter = [0]

    def write(body: str, *, header: str = HEADER, name: str | None = None) -> Program:
        counter[0] += 1
        path = tmp_path / (name or f"prog{counter[0]}.py")
        path.write_text(header + textwrap.dedent(body).lstrip("\n"))
        return Program(path)

    return write


def calls(expr):
    """Every Call node reachable from ``expr`` (depth-first, args first)."""
    from tilefoundry.ir.expr import Call, GridRegionExpr, Tuple

    seen, out = set(), []

    def walk(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, Call):
            for arg in node.args:
                walk(arg)
            out.append(node)
        elif isinstance(node, Tuple):
            for field in node.fields:
                walk(field)
        elif isinstance(node, GridRegionExpr):
            for item in node.inits + node.yields:
                walk(item)

    walk(expr)
    return out
