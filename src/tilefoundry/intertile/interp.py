"""SPMD interpreter for one function of a KTIR file.

Every tile runs the body in lockstep (there is no control flow to diverge
on); a produce op runs its region on each producer tile with that tile's
group id, and a delivery op hands the partials to the reference executor.
The neighbouring ops are interpreted only as far as the fixtures need them,
which is enough to observe the store-order trap (e04) and select-then-scatter
(e06) in memory, not just in returned tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilefoundry.intertile.affine import points
from tilefoundry.intertile.executor import ExecutionError, deliver
from tilefoundry.intertile.ir import ELEMENTWISE, DeliveryOp, Function, Op, ProduceOp
from tilefoundry.intertile.model import resolve


def region_combiner(op: DeliveryOp):
    """A combiner callable that interprets the region's pure body."""
    def fn(lhs: tuple, rhs: tuple) -> tuple:
        env = dict(zip(op.block_args, (*lhs, *rhs)))
        for inner in op.region[:-1]:
            _pure(inner, env)
        return tuple(env[v] for v in op.region[-1].operands)
    return fn


def _pure(op: Op, env: dict) -> None:
    if op.name in ELEMENTWISE:
        a, b = (env[o] for o in op.operands)
        env[op.results[0]] = getattr(np, ELEMENTWISE[op.name])(a, b)
    elif op.name == "arith.constant":
        env[op.results[0]] = _constant(op)
    elif op.name == "tensor.empty":
        env[op.results[0]] = np.zeros(op.extra["type"].shape, dtype=np.float32)
    elif op.name == "tensor.extract_slice":
        env[op.results[0]] = _slice(op, env[op.operands[0]])
    else:
        raise ExecutionError(f"{op.loc}: cannot execute '{op.name}' here")


def _constant(op: Op):
    typ, value = op.extra["type"], op.extra["value"]
    if typ == "index" or not hasattr(typ, "shape"):
        return value
    dtype = np.float32 if typ.elem.startswith("f") else np.int64
    arr = np.asarray(value, dtype=dtype)
    return np.broadcast_to(arr, typ.shape).copy() if arr.ndim == 0 else arr.reshape(typ.shape)


def _slice(op: Op, value: np.ndarray) -> np.ndarray:
    idx = tuple(slice(o, o + s * st, st) for o, s, st in
                zip(op.extra["offsets"], op.extra["sizes"], op.extra["strides"]))
    return value[idx]


@dataclass
class View:
    space: str
    tile: int
    offset: int
    strides: tuple[int, ...]


@dataclass
class AccessTile:
    view: View
    base: tuple[int, ...]
    offsets: tuple[tuple[int, ...], ...]  # points of the set, row-major
    shape: tuple[int, ...]


@dataclass
class Run:
    """What one function did on every tile."""
    returned: dict[int, tuple] = field(default_factory=dict)
    ct_local: dict[int, np.ndarray] = field(default_factory=dict)
    global_mem: np.ndarray | None = None
    delivered: dict[str, dict[int, tuple]] = field(default_factory=dict)


def run_function(fn: Function, tiles: int, args: dict[int, list] | None = None,
                 ct_local: dict[int, np.ndarray] | None = None,
                 global_mem: np.ndarray | None = None) -> Run:
    run = Run(ct_local={t: np.array(ct_local.get(t, []), dtype=np.float32).ravel()
                        for t in range(tiles)} if ct_local else
              {t: np.zeros(0, np.float32) for t in range(tiles)},
              global_mem=(np.zeros(0, np.float32) if global_mem is None
                          else np.array(global_mem, np.float32).ravel()))
    envs = [dict() for _ in range(tiles)]
    for t in range(tiles):
        given = (args or {}).get(t, [])
        for (name, typ), value in zip(fn.args, given):
            envs[t][name] = value if typ == "index" else np.asarray(value, np.float32)
        if len(given) != len(fn.args):
            raise ExecutionError(f"{fn.loc}: {fn.name} takes {len(fn.args)} argument(s), "
                                 f"tile {t} was given {len(given)}")
    futures: dict[str, ProduceOp] = {}
    partials: dict[str, dict[int, tuple]] = {}
    for op in fn.ops:
        if isinstance(op, ProduceOp):
            futures[op.results[0]] = op
            partials[op.results[0]] = _produce(op, envs, run, tiles)
        elif isinstance(op, DeliveryOp):
            produce = futures[op.operands[0]]
            d = op.model
            identity = None
            if d.identity_names:
                identity = tuple(envs[0][n] for n in d.identity_names)
            res = resolve(produce.model, d, tiles)
            got = deliver(produce.model, d, partials[op.operands[0]], identity, resolved=res)
            run.delivered[op.results[0] if op.results else op.loc] = got
            for t in range(tiles):
                for k, r in enumerate(op.results):
                    envs[t][r] = got[t][k] if t in got else None
        elif op.name in ("return", "func.return"):
            for t in range(tiles):
                run.returned[t] = tuple(envs[t][o] for o in op.operands)
        else:
            for t in range(tiles):
                _step(op, envs[t], t, run)
    return run


def _produce(op: ProduceOp, envs, run: Run, tiles: int) -> dict[int, tuple]:
    groups_of: dict[int, int] = {}
    res = resolve(op.model, _dummy_delivery(), tiles)
    for g in res.groups:
        for t in res.producers[g]:
            groups_of.setdefault(t, g)
    out: dict[int, tuple] = {}
    for t, g in groups_of.items():
        env = dict(envs[t])
        env[op.block_arg] = g
        for inner in op.region[:-1]:
            _step(inner, env, t, run)
        out[t] = tuple(env[v] for v in op.region[-1].operands)
    return out


def _dummy_delivery():
    from tilefoundry.intertile.model import Delivery, ExplicitFamily

    return Delivery("consume", ExplicitFamily({}))


def _step(op: Op, env: dict, tile: int, run: Run) -> None:
    name = op.name
    if name == "ktdp.get_compute_tile_id":
        env[op.results[0]] = tile
    elif name == "ktdp.construct_memory_view":
        space = op.extra["attrs"].get("memory_space", ("", "global"))[1]
        space = "global" if "global" in space else "ct_local"
        env[op.results[0]] = View(space, tile, int(env[op.operands[0]]), op.extra["strides"])
    elif name == "ktdp.construct_access_tile":
        aset = op.extra["attrs"]["access_tile_set"]
        pts = points(aset.isl_text(order=aset.dims))
        shape = op.extra["type"][1]
        if len(pts) != int(np.prod(shape)):
            raise ExecutionError(f"{op.loc}: access_tile_set has {len(pts)} points, the "
                                 f"type {shape} needs {int(np.prod(shape))}")
        base = tuple(int(env[o]) for o in op.operands[1:])
        env[op.results[0]] = AccessTile(env[op.operands[0]], base, pts, shape)
    elif name == "ktdp.load":
        at = env[op.operands[0]]
        mem = _memory(run, at.view, _addresses(at))
        env[op.results[0]] = mem[_addresses(at)].reshape(at.shape).copy()
    elif name == "ktdp.store":
        value, at = env[op.operands[0]], env[op.operands[1]]
        addr = _addresses(at)
        mem = _memory(run, at.view, addr)
        mem[addr] = np.asarray(value, np.float32).reshape(-1)
    else:
        _pure(op, env)


def _addresses(at: AccessTile) -> np.ndarray:
    offs = np.asarray(at.offsets) + np.asarray(at.base)
    return at.view.offset + offs @ np.asarray(at.view.strides)


def _memory(run: Run, view: View, addr: np.ndarray) -> np.ndarray:
    need = int(addr.max()) + 1 if addr.size else 0
    if view.space == "global":
        if run.global_mem.size < need:
            run.global_mem = np.concatenate([run.global_mem,
                                             np.zeros(need - run.global_mem.size, np.float32)])
        return run.global_mem
    mem = run.ct_local[view.tile]
    if mem.size < need:
        run.ct_local[view.tile] = mem = np.concatenate([mem, np.zeros(need - mem.size,
                                                                      np.float32)])
    return mem
