"""Shared helpers: the fixture files of shared/intertile and how to run them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest  # noqa: F401  (pytest.param)

# the KTIR fixtures, copied into the repository by tools/sync_shared.py
SHARED = Path(__file__).resolve().parents[1] / "data" / "intertile"


def sidecar(mlir: Path) -> dict:
    return json.loads(mlir.with_suffix(".json").read_text())


def function_cases(folder: str):
    """(mlir path, sidecar, function entry) for every function of every file."""
    cases = []
    for mlir in sorted((SHARED / folder).glob("*.mlir")):
        side = sidecar(mlir)
        entries = side.get("functions") or [dict(side, name=side["function"])]
        for entry in entries:
            cases.append(pytest.param(mlir, side, entry,
                                      id=f"{mlir.stem}{entry['name']}"))
    return cases


def run_inputs(side: dict, entry: dict):
    """Per-tile arguments and memories described by a sidecar's input block."""
    tiles = side["tiles"]
    inp = entry.get("input") or side.get("input") or {}
    args: dict[int, list] = {t: [] for t in range(tiles)}
    ct = glob = None
    if "argument" in inp and "per_tile" in inp:
        args = {int(t): [v] for t, v in inp["per_tile"].items()}
    if "ct_local_per_tile" in inp:
        ct = {int(t): np.array(v).ravel() for t, v in inp["ct_local_per_tile"].items()}
        args = {t: [0] for t in range(tiles)}  # %out_base = 0 on every tile
    if "memory" in inp:
        ct = {int(t): np.array(v).ravel() for t, v in inp["per_tile"].items()}
    if "global_before" in inp:
        glob = np.array(inp["global_before"]["values"]).ravel()
    return args, ct, glob
