"""`tilefoundry relayout classify TABLES.json [--json]` (seed §7)."""
from __future__ import annotations


TABLES_FILE = 'a JSON file {"cores": N, "source": {...}, "destination": {...}}'


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "relayout", help="classify a relayout (two ownership tables) as a delivery op",
        description="Classify a relayout, given as the source and destination ownership "
                    "tables of a tensor, as one inter-tile delivery op (docs/intertile.md).",
        epilog="example (from the repository root):\n  tilefoundry relayout classify examples/relayout_s74.json")
    sub = parser.add_subparsers(dest="relayout_command", metavar="ACTION", required=True)
    p = sub.add_parser(
        "classify", help="axis table, verdict and op for two ownership tables",
        description="Print the axis table, the verdict and, when one op realises the "
                    "relayout, that op with its groups, and whether it verifies.",
        epilog="example (from the repository root):\n  tilefoundry relayout classify --json examples/relayout_s74.json")
    p.add_argument("tables", metavar="TABLES.json",
                   help='{"cores": N, "source": {...}, "destination": {...}} (see docs)')
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_classify)


def _classify(args) -> int:
    from tilefoundry.intertile.classify import classify_tables
    from tilefoundry.intertile.realize import realize, reproduces
    from tilefoundry.intertile.tables import load_tables

    from tilefoundry.cli.files import input_file

    tables = load_tables(input_file(args.tables, TABLES_FILE))
    cls = classify_tables(tables)
    out = cls.as_json()
    if cls.verdict == "op":
        diags = realize(tables, cls).diagnostics
        out["verifies"] = not diags
        out["reproduces_destination"] = bool(not diags and all(
            reproduces(tables, cls).values()))
    if args.json:
        from tilefoundry.render.json_contract import dumps, stamp

        print(dumps(stamp(out, "relayout-classify")), end="")
        return 0
    print(f"{'axis':<8}{'Ns':>4}{'Nd':>4}  {'relation':<10}{'fanin':>6}{'fanout':>7}"
          f"  {'uniform':<8}{'gcd':>4}")
    for r in out["axes"]:
        print(f"{r['axis']:<8}{r['Ns']:>4}{r['Nd']:>4}  {r['relation']:<10}{r['fanin']:>6}"
              f"{r['fanout']:>7}  {'yes' if r['uniform'] else 'no':<8}{r['gcd']:>4}")
    print(f"regions: {out['src_regions']} source, {out['dst_regions']} destination; "
          f"components {out['components']}; max_fanin {out['max_fanin']}, "
          f"max_fanout {out['max_fanout']}")
    row = out["row"] or "-"
    print(f"verdict: {out['verdict']} (row {row})" + (f": {out['reason']}"
                                                      if out.get("reason") else ""))
    if out["op"]:
        dims = ", ".join(f"{k} = [{', '.join(v)}]" for k, v in out.items()
                         if k.endswith("_dimensions"))
        print(f"op: {out['op']}" + (f", {dims}" if dims else "")
              + f"; {len(out['groups'])} group(s), M = {out['M']}, K = {out['K']}")
        for k, g in enumerate(out["groups"]):
            print(f"  group {k}: producers {g['producers']} -> consumers {g['consumers']}")
        if out.get("local_select"):
            print(f"  each consumer then selects its slice along {out['local_select']}")
        print(f"verifies: {'yes' if out['verifies'] else 'no'}; reproduces the destination: "
              f"{'yes' if out['reproduces_destination'] else 'no'}")
    return 0
