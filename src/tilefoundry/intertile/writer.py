"""Writer: a parsed module back to text, inter-tile ops in the S spelling.

Neighbouring ops are written from their token span (formatting is not kept,
meaning is); inter-tile ops are written canonically, items in the order of
syntax.md §4.1, so that read -> write -> read gives the same model.
"""
from __future__ import annotations

from tilefoundry.errors import VerifyError
from tilefoundry.intertile.affine import AffineSet
from tilefoundry.intertile.ir import DeliveryOp, Function, Module, Op, ProduceOp
from tilefoundry.intertile.model import OPS, AffineFamily, Delivery, Produce

_ORDER = {
    "consume": ("consumer_tiles_per_group", "producer_dependency_per_consumer"),
    "reduce": ("consumer_tiles_per_group", "producer_dependency_per_consumer", "identity"),
    "reduce_scatter": ("consumer_tiles_per_group", "scatter_dimensions",
                       "producer_dependency_per_consumer", "identity"),
    "gather": ("consumer_tiles_per_group", "gather_dimensions",
               "producer_dependency_per_consumer"),
    "all_to_all": ("consumer_tiles_per_group", "split_dimensions", "concat_dimensions",
                   "producer_dependency_per_consumer"),
    "scatter": ("consumer_tiles_per_group", "scatter_dimensions"),
}


def write_module(module: Module) -> str:
    lines = [f"{name} = {module.aliases[name][2]}" for name in module.alias_order]
    lines += ["", "module {"]
    for fn in module.functions:
        lines += ["  " + ln for ln in _function(fn)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _type(t) -> str:
    if t == "index":
        return "index"
    if isinstance(t, tuple):
        kind, shape = t
        elem = "index" if kind == "!ktdp.access_tile" else "f32"
        return f"{kind}<{''.join(f'{d}x' for d in shape)}{elem}>"
    return t.text()


def _function(fn: Function) -> list[str]:
    args = ", ".join(f"{n}: {_type(t)}" for n, t in fn.args)
    res = ""
    if fn.result_types:
        rs = [_type(t) for t in fn.result_types]
        res = " -> " + (rs[0] if len(rs) == 1 else "(" + ", ".join(rs) + ")")
    out = [f"func.func {fn.name}({args}){res} {{"]
    for op in fn.ops:
        out += ["  " + ln for ln in write_op(op)]
    out.append("}")
    return out


def _results(op: Op) -> str:
    if not op.results:
        return ""
    if len(op.results) > 1 and all("#" in r for r in op.results):
        return f"{op.results[0].split('#')[0]}:{len(op.results)} = "
    return ", ".join(op.results) + " = "


def write_op(op: Op) -> list[str]:
    if isinstance(op, ProduceOp):
        return _produce(op)
    if isinstance(op, DeliveryOp):
        return _delivery(op)
    return [f"{_results(op)}{op.name} {op.text}".rstrip()]


def _set(fam) -> str:
    if isinstance(fam, AffineSet):
        return fam.to_text()
    if not isinstance(fam, AffineFamily):
        raise VerifyError("an explicit tile table has no affine_set spelling; "
                          "write the sets as affine sets to print them")
    return fam.text()


def future_type(p: Produce) -> str:
    groups = p.groups_alias or _set(p.groups)
    return ("!ktdp.tile_future<" + ", ".join(t.text() for t in p.partial_types)
            + f", {groups}>")


def _produce(op: ProduceOp) -> list[str]:
    p = op.model
    parts = ", ".join(t.text() for t in p.partial_types)
    out = [f"{_results(op)}ktdp.inter_tile_produce",
           f"    producer_tiles_per_group = {_set(p.producers)}",
           f"    : {parts} -> {future_type(p)}",
           "{", f"  ^bb0({op.block_arg}: index):"]
    for inner in op.region:
        out += ["    " + ln for ln in write_op(inner)]
    out.append("}")
    return out


def _delivery(op: DeliveryOp) -> list[str]:
    d: Delivery = op.model
    items = []
    for key in _ORDER[d.kind]:
        if key == "producer_dependency_per_consumer":
            if d.dependency is not None:
                items.append(f"{key} = {_set(d.dependency)}")
        elif key == "consumer_tiles_per_group":
            items.append(f"{key} = {_set(d.consumers)}")
        elif key == "identity":
            ids = ", ".join(f"{n} : {t.text()}" for n, t in zip(d.identity_names,
                                                                d.identity_types or ()))
            items.append(f"identity({ids})")
        else:
            items.append(f"{key} = [{', '.join(str(a) for a in d.dims[key])}]")
    parts, groups, galias = d.future_type
    fut = ("!ktdp.tile_future<" + ", ".join(t.text() for t in parts) + ", "
           + (galias or groups.to_text()) + ">")
    results = ", ".join(t.text() for t in d.result_types)
    out = [f"{_results(op)}{d.opname}({op.operands[0]})"]
    out += [f"    {item}," for item in items[:-1]] + [f"    {items[-1]}"]
    out.append(f"    : {fut} -> {results}")
    if OPS[d.kind]["fold"]:
        args = ", ".join(f"{a}: {t.text()}" for a, t in
                         zip(op.block_args, list(parts) * 2))
        out += ["{", f"  ^bb0({args}):"]
        for inner in op.region:
            out += ["    " + ln for ln in write_op(inner)]
        out.append("}")
    return out
