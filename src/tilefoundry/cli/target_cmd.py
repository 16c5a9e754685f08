"""``tilefoundry target list`` and ``tilefoundry target show ID`` (companions.md §6.9).

Thin over ``tilefoundry.target``: the rows and facts printed here are the
registered targets' values and their hardware documents, every number beside
its origin, conditions and source.
"""
from __future__ import annotations

import argparse
from typing import Any

from tilefoundry.errors import UsageError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "target",
        help="list the available targets or show one target's hardware facts",
        description="List the available targets, or show the hardware facts of one "
                    "target with the source of every number.",
        epilog="examples:\n  tilefoundry target list\n  tilefoundry target show nvidia.h200_sxm",
    )
    actions = parser.add_subparsers(dest="target_command", metavar="ACTION")
    list_parser = actions.add_parser(
        "list", help="list every available target value",
        description="List every registered target value with its identity.",
        epilog="example:\n  tilefoundry target list")
    list_parser.set_defaults(func=_list)
    show_parser = actions.add_parser(
        "show", help="show one target's facts and their sources",
        description="Show one target's hardware documents and every fact with its "
                    "origin, conditions and source.",
        epilog="example:\n  tilefoundry target show nvidia.h200_sxm")
    show_parser.add_argument("identity", metavar="ID",
                             help="a target identity, e.g. nvidia.h200_sxm (see `target list`)")
    show_parser.set_defaults(func=_show)
    parser.set_defaults(func=_missing_action)


def _missing_action(args: argparse.Namespace) -> int:
    raise UsageError("target needs an action: `tilefoundry target list` or "
                     "`tilefoundry target show ID`")


# ------------------------------------------------------------------------------ list

def list_lines() -> list[str]:
    from tilefoundry.target.catalog import available_targets

    values = available_targets()
    constructors = [repr(v) for v in values]
    width = max((len(c) for c in constructors), default=0)
    lines = ["Available targets:", ""]
    for constructor, value in zip(constructors, values):
        lines.append(f"  {constructor.ljust(width)}  identity: {value.identity}")
    classes = sorted({type(v).__name__ for v in values})
    lines += [
        "",
        f"from tilefoundry.target import {', '.join(classes)}",
        "Run `tilefoundry target show ID` for one target's facts and their sources.",
    ]
    return lines


def _list(args: argparse.Namespace) -> int:
    print("\n".join(list_lines()))
    return 0


# ------------------------------------------------------------------------------ show

def _format_value(fact: Any) -> str:
    value = fact.value
    if isinstance(value, tuple):
        text = repr(list(value))
    else:
        text = str(value)
    return f"{text} {fact.unit}"


def _fact_lines(fact: Any) -> list[str]:
    if not fact.available:
        return [f"  {fact.path}: unavailable", f"    conditions: {fact.conditions}"]
    lines = [f"  {fact.path}: {_format_value(fact)} [{fact.origin}]",
             f"    conditions: {fact.conditions}"]
    if fact.derivation is not None:
        lines.append(f"    derivation: {fact.derivation}")
    lines.append(f"    source: {fact.source}")
    return lines


def show_lines(identity: str) -> list[str]:
    from tilefoundry.target.catalog import resolve_identity

    target = resolve_identity(identity)
    lines = [f"target: {target!r}", f"identity: {target.identity}"]
    documents = getattr(target, "documents", ())
    if not documents:
        lines.append("facts: unavailable")
        return lines
    for doc in documents:
        lines += [f"{doc.kind}: {doc.id}", f"  title: {doc.title}",
                  f"  file: {doc.filename}", f"  digest: {doc.digest}"]
    lines.append("facts:")
    for doc in documents:
        for fact in doc.sorted_facts():
            lines += _fact_lines(fact)
    return lines


def _show(args: argparse.Namespace) -> int:
    print("\n".join(show_lines(args.identity)))
    return 0
