"""Recursive-descent reader for the inter-tile syntax (shared/intertile/syntax.md).

Accepts the spec (S) and implemented (I) spellings and the CPU hybrid (C),
singular dimension names as one-element lists, and `array<i64: ...>` lists.
Every refusal is one TextError line: file:line:col, what, and the remedy.
"""
from __future__ import annotations

import re
from pathlib import Path

from tilefoundry.intertile.affine import parse_affine_set
from tilefoundry.intertile.ir import (ELEMENTWISE, PURE_PREFIXES, DeliveryOp, Function,
                                      Module, Op, ProduceOp)
from tilefoundry.intertile.lexer import TextError, TokenStream, describe, tokenize
from tilefoundry.text_input import file_lines, utf8_text
from tilefoundry.intertile.model import (OP_PREFIX, OPS, AffineFamily, Combiner, Delivery,
                                         Produce, TensorType)

DIM_NAMES = ("gather_dimensions", "scatter_dimensions", "split_dimensions",
             "concat_dimensions")
ALLOWED = {
    kind: {"consumer_tiles_per_group", *spec["dims"]}
    | (set() if kind == "scatter" else {"producer_dependency_per_consumer"})
    | ({"identity"} if spec["fold"] else set())
    for kind, spec in OPS.items()
}


def read_file(path: str | Path) -> Module:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        from tilefoundry.errors import UsageError
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    return read_text(utf8_text(data, str(path), TextError), str(path))


def read_text(text: str, filename: str = "<text>") -> Module:
    return _Reader(TokenStream(tokenize(text, filename), filename, text)).module()


class _Reader:
    def __init__(self, ts: TokenStream):
        self.ts = ts
        self.aliases: dict[str, tuple[str, object, str]] = {}
        self.order: list[str] = []

    # ---------------------------------------------------------- top level
    def module(self) -> Module:
        ts = self.ts
        while ts.peek().kind == "alias" and ts.at("=", 1):
            self.alias()
        funcs: list[Function] = []
        if ts.accept("module"):
            ts.expect("{", "to open the module")
            while not ts.at("}"):
                funcs.append(self.function())
            ts.expect("}")
        while ts.peek().kind != "eof":
            funcs.append(self.function())
        return Module(ts.filename, self.aliases, funcs, self.order)

    def alias(self) -> None:
        tok = self.ts.next()
        self.ts.expect("=")
        if tok.text in self.aliases:
            self.ts.fail(tok, f"alias {tok.text} is defined twice", "rename one of them")
        if self.ts.at("affine_set"):
            start = self.ts.pos
            value = parse_affine_set(self.ts)
            self.aliases[tok.text] = ("set", value, self._span(start))
        elif self.ts.at("affine_map"):
            start = self.ts.pos
            self.ts.next()
            self._balanced("<", ">")
            self.aliases[tok.text] = ("map", None, self._span(start))
        else:
            self.ts.fail(self.ts.peek(), f"alias {tok.text} must be an affine_set or "
                                         f"affine_map, found {describe(self.ts.peek())}")
        self.order.append(tok.text)

    def function(self) -> Function:
        ts = self.ts
        start = ts.peek()
        if not ts.at("func.func"):
            ts.fail(start, f"expected 'func.func' or an alias, found {describe(start)}")
        ts.next()
        name = ts.expect_kind("sym", "a function name like @f").text
        ts.expect("(")
        args: list[tuple[str, object]] = []
        defined: set[str] = set()
        while not ts.at(")"):
            arg = ts.expect_kind("ssa", "an argument like %x").text
            ts.expect(":")
            args.append((arg, self.type()))
            defined.add(arg)
            if not ts.accept(","):
                break
        ts.expect(")")
        results: list[object] = []
        if ts.accept("->"):
            if ts.accept("("):
                while not ts.at(")"):
                    results.append(self.type())
                    if not ts.accept(","):
                        break
                ts.expect(")")
            else:
                results.append(self.type())
        ts.expect("{", "to open the function body")
        ops = self.block(defined, end_ops=("return", "func.return"))
        ts.expect("}", "to close the function")
        return Function(name, args, results, ops, ts.where(start))

    # ------------------------------------------------------------- blocks
    def block(self, defined: set[str], end_ops: tuple[str, ...]) -> list[Op]:
        ops: list[Op] = []
        while not self.ts.at("}"):
            op = self.op(defined)
            ops.append(op)
            if op.name in end_ops:
                break
        return ops

    def op(self, defined: set[str]) -> Op:
        ts = self.ts
        first = ts.peek()
        results: list[str] = []
        if first.kind == "ssa":
            results.append(ts.next().text)
            if ts.accept(":"):
                n = int(ts.expect_kind("int", "a result count").text)
                base = results.pop()
                results = [f"{base}#{k}" for k in range(n)]
            while ts.accept(","):
                results.append(ts.expect_kind("ssa", "a result name").text)
            ts.expect("=", "after the result names")
        name_tok = ts.peek()
        if name_tok.kind != "ident":
            ts.fail(name_tok, f"expected an op name, found {describe(name_tok)}")
        ts.next()
        name = name_tok.text
        loc = ts.where(name_tok)
        start = ts.pos
        if name == "ktdp.inter_tile_produce":
            op = self.produce(loc, defined)
        elif name.startswith(OP_PREFIX) and name[len(OP_PREFIX):] in OPS:
            op = self.delivery(name[len(OP_PREFIX):], loc, defined, len(results))
        else:
            parser = getattr(self, "op_" + name.replace(".", "_"), None)
            if parser is None and name in ELEMENTWISE:
                parser = self.op_elementwise
            if parser is None:
                ts.fail(name_tok, f"unknown op '{name}'",
                        "the reader knows the inter-tile ops and the neighbouring ops of "
                        "syntax.md §5")
            op = parser(name, loc)
        op.name, op.loc = name, loc
        op.results = tuple(results)
        op.text = self._span(start)
        for operand in op.operands:
            base = operand.split("#")[0] if operand.split("#")[0] in defined else operand
            if operand not in defined and base not in defined:
                ts.fail(name_tok, f"'{name}' uses {operand}, which is not defined before it",
                        "define the value earlier in the function")
        for r in results:
            if r in defined:
                ts.fail(first, f"{r} is defined twice", "give each result its own name")
            defined.add(r)
        if len(results) > 1:
            defined.add(results[0].split("#")[0])
        return op

    # ------------------------------------------------------ inter-tile ops
    def produce(self, loc: str, defined: set[str]) -> ProduceOp:
        ts = self.ts
        ts.expect("producer_tiles_per_group")
        ts.expect("=")
        producers = self.setref()
        if ts.at("{"):
            self._balanced("{", "}")
        declared: list[TensorType] = []
        if ts.accept(":"):
            declared.append(self.tensor_type())
            while ts.accept(","):
                declared.append(self.tensor_type())
        ts.expect("->", "before the future type")
        parts, groups, galias = self.future_type()
        if declared and declared != parts:
            ts.fail(ts.peek(), "produce lists partial types "
                    f"{[t.text() for t in declared]} but its future carries "
                    f"{[t.text() for t in parts]}", "make them equal")
        ts.expect("{", "to open the produce region")
        ts.expect_kind("bb", "'^bb0'")
        ts.expect("(")
        arg = ts.expect_kind("ssa", "the group-id argument %gid").text
        ts.expect(":")
        ts.expect("index", "(the group id argument is an index)")
        ts.expect(")")
        ts.expect(":")
        inner = set(defined) | {arg}
        region = self.block(inner, end_ops=("ktdp.yield_partial",))
        close = ts.expect("}", "to close the produce region")
        if not region or region[-1].name != "ktdp.yield_partial":
            ts.fail(close, "the produce region must end in ktdp.yield_partial")
        yields = region[-1].operands
        ytypes = region[-1].extra["types"]
        if list(ytypes) != list(parts):
            ts.fail(close, f"yield_partial types {[t.text() for t in ytypes]} differ from "
                           f"the future's partial types {[t.text() for t in parts]}")
        model = Produce(producers, groups, tuple(parts), loc=loc, groups_alias=galias,
                        yields=tuple(yields))
        return ProduceOp("", operands=tuple(o for o in yields if o in defined), model=model,
                         block_arg=arg, region=region)

    def delivery(self, kind: str, loc: str, defined: set[str], nresults: int) -> DeliveryOp:
        ts = self.ts
        ts.expect("(")
        future = ts.expect_kind("ssa", "the future operand").text
        ts.expect(")")
        items: dict[str, object] = {}
        idents: tuple[str, ...] = ()
        id_types: list[TensorType] = []
        while True:
            tok = ts.expect_kind("ident", "an attribute name")
            name = tok.text
            single = name + "s" if name + "s" in DIM_NAMES else None
            key = single or name
            if key not in ALLOWED[kind] and key not in DIM_NAMES and key not in (
                    "consumer_tiles_per_group", "producer_dependency_per_consumer",
                    "identity"):
                ts.fail(tok, f"unknown attribute '{name}' on {OP_PREFIX}{kind}",
                        f"allowed: {', '.join(sorted(ALLOWED[kind]))}")
            if key not in ALLOWED[kind]:
                ts.fail(tok, f"attribute '{name}' is not allowed on {OP_PREFIX}{kind}",
                        f"allowed: {', '.join(sorted(ALLOWED[kind]))}")
            if key in items:
                ts.fail(tok, f"attribute '{name}' is given twice", "keep one")
            if key == "identity":
                idents, id_types = self.identity()
                items[key] = True
            else:
                ts.expect("=")
                if key in DIM_NAMES:
                    items[key] = ((int(ts.expect_kind("int", "an axis").text),)
                                  if single else self.dim_list())
                else:
                    items[key] = self.setref()
            if not ts.accept(","):
                break
        if ts.at("{"):
            self._balanced("{", "}")
        missing = [k for k in ("consumer_tiles_per_group", *OPS[kind]["dims"])
                   if k not in items]
        if OPS[kind]["fold"] and "identity" not in items:
            missing.append("identity")
        if missing:
            ts.fail(ts.peek(), f"{OP_PREFIX}{kind} lacks {', '.join(missing)}",
                    "add the missing attribute(s)")
        ts.expect(":", "before the future type")
        parts, groups, galias = self.future_type()
        ts.expect("->")
        results = [self.tensor_type()]
        while ts.accept(","):
            results.append(self.tensor_type())
        if nresults and nresults != len(results):
            ts.fail(ts.peek(), f"{nresults} result names but {len(results)} result types")
        model = Delivery(kind, items["consumer_tiles_per_group"],
                         items.get("producer_dependency_per_consumer"),
                         {k: items[k] for k in OPS[kind]["dims"]},
                         tuple(results), future=future, loc=loc,
                         identity_types=tuple(id_types) if OPS[kind]["fold"] else None,
                         identity_names=idents, future_type=(tuple(parts), groups, galias))
        op = DeliveryOp("", operands=(future, *idents), model=model)
        if OPS[kind]["fold"]:
            if not ts.at("{"):
                ts.fail(ts.peek(), f"{OP_PREFIX}{kind} needs a combiner region "
                                   "{ ^bb0(%lhs..., %rhs...): ... ktdp.yield_reduced ... }")
            ts.expect("{")
            ts.expect_kind("bb", "'^bb0'")
            ts.expect("(")
            args = []
            while not ts.at(")"):
                args.append(ts.expect_kind("ssa", "a combiner argument").text)
                ts.expect(":")
                self.tensor_type()
                if not ts.accept(","):
                    break
            ts.expect(")")
            ts.expect(":")
            region = self.block(set(defined) | set(args), end_ops=("ktdp.yield_reduced",))
            close = ts.expect("}", "to close the combiner region")
            if not region or region[-1].name != "ktdp.yield_reduced":
                ts.fail(close, "the combiner region must end in ktdp.yield_reduced")
            if len(args) != 2 * len(parts):
                ts.fail(close, f"the combiner takes {len(args)} arguments; a future of "
                               f"{len(parts)} role(s) needs {2 * len(parts)} (lhs..., rhs...)")
            op.block_args, op.region = tuple(args), region
            impure = tuple(o.name for o in region[:-1]
                           if not o.name.startswith(PURE_PREFIXES))
            from tilefoundry.intertile.interp import region_combiner
            model.combiner = Combiner("region", region_combiner(op), impure)
        return op

    def identity(self) -> tuple[tuple[str, ...], list[TensorType]]:
        ts = self.ts
        ts.expect("(")
        names: list[str] = []
        types: list[TensorType] = []
        while True:
            names.append(ts.expect_kind("ssa", "an identity value").text)
            if ts.accept(":"):
                types.append(self.tensor_type())
                if ts.accept(","):
                    continue
                while ts.accept(","):  # I spelling: %a, %b : T1, T2
                    types.append(self.tensor_type())
                break
            ts.expect(",")
        ts.expect(")")
        if len(types) != len(names):
            ts.fail(ts.peek(), f"identity names {len(names)} values but {len(types)} types")
        return tuple(names), types

    # --------------------------------------------------------------- types
    def future_type(self):
        ts = self.ts
        if ts.peek().text == "!ktdp.tile_future":
            ts.next()
        elif not ts.at("<"):
            ts.fail(ts.peek(), f"expected a !ktdp.tile_future type, found {describe(ts.peek())}")
        ts.expect("<")
        parts: list[TensorType] = []
        if ts.accept("("):  # I: (T...), groups = G
            parts.append(self.tensor_type())
            while ts.accept(","):
                parts.append(self.tensor_type())
            ts.expect(")")
            ts.expect(",")
            ts.expect("groups")
            ts.expect("=")
        else:
            parts.append(self.tensor_type())
            ts.expect(",")
            while ts.peek().text == "tensor":
                parts.append(self.tensor_type())
                ts.expect(",")
            if ts.accept("groups"):  # C: T, groups = G
                ts.expect("=")
        galias = ts.peek().text if ts.peek().kind == "alias" else None
        fam = self.setref()
        ts.expect(">", "to close the future type")
        return parts, fam.aset, galias

    def tensor_type(self) -> TensorType:
        ts = self.ts
        tok = ts.expect("tensor", "(a ranked tensor type)")
        ts.expect("<")
        t = ts.next()
        if t.kind == "shape":
            shape, elem = split_shape(t.text)
        elif t.kind == "ident":
            shape, elem = (), t.text
        else:
            ts.fail(t, f"expected a static shape like 2x3xf32, found {describe(t)}",
                    "use a ranked, statically shaped tensor")
        ts.expect(">", "to close the tensor type")
        del tok
        return TensorType(shape, elem)

    def type(self):
        ts = self.ts
        tok = ts.peek()
        if tok.text == "index":
            ts.next()
            return "index"
        if tok.text == "tensor":
            return self.tensor_type()
        if tok.text in ("memref", "!ktdp.access_tile"):
            ts.next()
            ts.expect("<")
            shape_tok = ts.next()
            ts.expect(">")
            dims = split_shape(shape_tok.text)[0] if shape_tok.kind == "shape" else ()
            return (tok.text, dims)
        ts.fail(tok, f"expected a type, found {describe(tok)}")

    def setref(self) -> AffineFamily:
        ts = self.ts
        tok = ts.peek()
        if tok.kind == "alias":
            ts.next()
            entry = self.aliases.get(tok.text)
            if entry is None:
                ts.fail(tok, f"undefined alias {tok.text}", "declare it before 'module'")
            if entry[0] != "set":
                ts.fail(tok, f"{tok.text} is an affine_map; an integer set is needed here")
            return AffineFamily(entry[1], tok.text)
        if tok.text == "affine_set":
            return AffineFamily(parse_affine_set(ts))
        ts.fail(tok, f"expected an integer set (#alias or affine_set<...>), found {describe(tok)}")

    def dim_list(self) -> tuple[int, ...]:
        ts = self.ts
        if ts.accept("array"):
            ts.expect("<")
            ts.expect("i64")
            ts.expect(":")
            close = ">"
        else:
            ts.expect("[", "to open a dimension list")
            close = "]"
        values: list[int] = []
        while not ts.at(close):
            neg = ts.accept("-")
            v = int(ts.expect_kind("int", "an axis index").text)
            values.append(-v if neg else v)
            if not ts.accept(","):
                break
        ts.expect(close)
        return tuple(values)

    # ---------------------------------------------------- neighbouring ops
    def _operands(self) -> list[str]:
        out = [self.ts.expect_kind("ssa", "an operand").text]
        while self.ts.at(",") and self.ts.peek(1).kind == "ssa":
            self.ts.next()
            out.append(self.ts.next().text)
        return out

    def _types_after_colon(self) -> list:
        self.ts.expect(":")
        types = [self.type()]
        while self.ts.accept(","):
            types.append(self.type())
        return types

    def op_arith_constant(self, name, loc) -> Op:
        ts = self.ts
        if ts.accept("dense"):
            ts.expect("<")
            value = self._literal()
            ts.expect(">")
        else:
            value = self._literal()
        ts.expect(":")
        return Op(name, extra={"value": value, "type": self.type()})

    def _literal(self):
        ts = self.ts
        if ts.accept("["):
            items = []
            while not ts.at("]"):
                items.append(self._literal())
                if not ts.accept(","):
                    break
            ts.expect("]")
            return items
        neg = -1 if ts.accept("-") else 1
        tok = ts.next()
        if tok.kind == "int":
            return neg * int(tok.text)
        if tok.kind == "float":
            return neg * float(tok.text)
        if tok.text in ("true", "false"):
            return tok.text == "true"
        ts.fail(tok, f"expected a number, found {describe(tok)}")

    def op_elementwise(self, name, loc) -> Op:
        operands = self._operands()
        return Op(name, operands=tuple(operands), extra={"types": self._types_after_colon()})

    def op_ktdp_get_compute_tile_id(self, name, loc) -> Op:
        self._types_after_colon()
        return Op(name)

    def op_return(self, name, loc) -> Op:
        operands = self._operands() if self.ts.peek().kind == "ssa" else []
        types = self._types_after_colon() if operands else []
        return Op(name, operands=tuple(operands), extra={"types": types})

    op_func_return = op_return

    def op_ktdp_yield_partial(self, name, loc) -> Op:
        return self.op_return(name, loc)

    op_ktdp_yield_reduced = op_ktdp_yield_partial

    def op_ktdp_construct_memory_view(self, name, loc) -> Op:
        ts = self.ts
        offset = ts.expect_kind("ssa", "the offset operand").text
        extra: dict = {}
        for key in ("sizes", "strides"):
            ts.expect(",")
            ts.expect(key)
            ts.expect(":")
            extra[key] = tuple(self.dim_list())
        extra["attrs"] = self._attr_dict()
        extra["type"] = self._types_after_colon()[0]
        return Op(name, operands=(offset,), extra=extra)

    def op_ktdp_construct_access_tile(self, name, loc) -> Op:
        ts = self.ts
        view = ts.expect_kind("ssa", "a memory view").text
        ts.expect("[")
        idx = self._operands()
        ts.expect("]")
        attrs = self._attr_dict()
        ts.expect(":")
        src = self.type()
        ts.expect("->")
        return Op(name, operands=(view, *idx),
                  extra={"attrs": attrs, "type": self.type(), "source": src})

    def op_ktdp_load(self, name, loc) -> Op:
        ts = self.ts
        at = ts.expect_kind("ssa", "an access tile").text
        ts.expect(":")
        self.type()
        ts.expect("->")
        return Op(name, operands=(at,), extra={"type": self.type()})

    def op_ktdp_store(self, name, loc) -> Op:
        operands = self._operands()
        if len(operands) != 2:
            self.ts.fail(self.ts.peek(), "ktdp.store takes a value and an access tile")
        return Op(name, operands=tuple(operands), extra={"types": self._types_after_colon()})

    def op_tensor_extract_slice(self, name, loc) -> Op:
        ts = self.ts
        src = ts.expect_kind("ssa", "a tensor").text
        lists = [self.dim_list() for _ in range(3)]
        ts.expect(":")
        self.type()
        ts.expect("to")
        return Op(name, operands=(src,), extra={"offsets": lists[0], "sizes": lists[1],
                                                "strides": lists[2], "type": self.type()})

    def op_tensor_empty(self, name, loc) -> Op:
        self.ts.expect("(")
        self.ts.expect(")")
        return Op(name, extra={"type": self._types_after_colon()[0]})

    def _attr_dict(self) -> dict:
        ts = self.ts
        attrs: dict = {}
        ts.expect("{")
        while not ts.at("}"):
            key = ts.expect_kind("ident", "an attribute name").text
            ts.expect("=")
            tok = ts.peek()
            if tok.text == "affine_set" or (tok.kind == "alias" and tok.text in self.aliases
                                            and self.aliases[tok.text][0] == "set"):
                attrs[key] = self.setref().aset
            elif tok.kind == "alias" and ts.at("<", 1):
                ts.next()
                inner = self._balanced("<", ">")
                attrs[key] = (tok.text, inner.strip("<>").strip())
            elif tok.kind == "alias":
                ts.next()
                if tok.text not in self.aliases:
                    ts.fail(tok, f"undefined alias {tok.text}", "declare it before 'module'")
                attrs[key] = self.aliases[tok.text][2]
            elif tok.text == "affine_map":
                start = ts.pos
                ts.next()
                self._balanced("<", ">")
                attrs[key] = self._span(start)
            else:
                attrs[key] = self._literal()
            if not ts.accept(","):
                break
        ts.expect("}")
        return attrs

    # -------------------------------------------------------------- helpers
    def _balanced(self, open_: str, close: str) -> str:
        ts = self.ts
        start = ts.pos
        ts.expect(open_)
        depth = 1
        while depth:
            tok = ts.next()
            if tok.kind == "eof":
                ts.fail(tok, f"unbalanced '{open_}'", f"close it with '{close}'")
            if tok.text == open_:
                depth += 1
            elif tok.text == close:
                depth -= 1
        return self._span(start)

    def _span(self, start: int) -> str:
        toks = self.ts.tokens[start:self.ts.pos]
        if not toks:
            return ""
        raw = self.ts.source[toks[0].start:toks[-1].end]
        # Comments inside an op span would swallow the rest of a written line.
        raw = "\n".join(line.split("//")[0] for line in file_lines(raw))
        return " ".join(raw.split())


def split_shape(text: str) -> tuple[tuple[int, ...], str]:
    """'2x3xf32' -> ((2, 3), 'f32'); the element type may contain an x."""
    m = re.match(r"((?:\d+x)*)(.*)", text)
    return tuple(int(d) for d in m.group(1).split("x") if d), m.group(2)
