"""What the placer's readers share: which ops a split leaves whole, a kernel's
parameter, and one op written as authoring-DSL source."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ELEMENTWISE", "ROW_OPS", "Operand", "converter_lines", "op_text"]

#: ops that act on each element alone (their result has their operands' shape,
#: broadcast): a row split leaves every one of them whole within a CTA
ELEMENTWISE = frozenset({
    "binary", "unary", "cast", "silu", "gelu", "relu", "exp", "exp2", "log", "log2", "tanh",
    "sigmoid", "rsqrt", "square", "neg", "abs", "maximum", "minimum", "softplus", "round",
    "floor", "ceil", "clamp", "where",
})
#: ops that read one whole row (the last axis) and nothing across rows
ROW_OPS = frozenset({"reduce", "softmax", "rms_norm", "layer_norm"})


@dataclass(frozen=True)
class Operand:
    """A parameter of the logical kernel: its name, static shape, dtype name and
    whether it is a weight (``ConstTensor``)."""

    name: str
    shape: tuple
    dtype: str
    const: bool


#: binary kinds written as the operator a person writes
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def op_text(op, refs: list) -> str:
    """One op as authoring-DSL source over ``refs`` (its operands' source)."""
    from tilefoundry.render.printer import op_spelling
    from tilefoundry.render.values import format_value

    from tilefoundry.ir.tensor_type import TensorType

    callee, attrs = op_spelling(op)
    if op.name == "binary" and callee in _INFIX:
        return f" {_INFIX[callee]} ".join(refs)
    # a type attribute (arange's, full's) is written as the annotation a person writes
    typed = [_annotation(v) for _, v in attrs if isinstance(v, TensorType)]
    args = [*refs, *typed, *(f"{key}={format_value(value)}" for key, value in attrs
                             if not isinstance(value, TensorType))]
    return f"tf.{callee}({', '.join(args)})"


def _annotation(type_) -> str:
    shape = ", ".join(str(d) for d in type_.shape) + ("," if len(type_.shape) == 1 else "")
    return f'Tensor[({shape}), "{type_.dtype.name}"]'


def converter_lines(function) -> tuple:
    """The selected function's weight converters as class-body source lines
    (``@fn.converter("w")`` and a def per weight): the placed program converts a
    checkpoint's weight as the logical one does, so both read the same values
    (Gemma-2's norms store ``w`` and scale by ``1 + w``)."""
    from tilefoundry.analysis.check import iter_nodes
    from tilefoundry.ir.expr import Call, Constant, Var
    from tilefoundry.render.values import format_value

    lines = []
    for weight, converter in sorted(getattr(function, "converters", {}).items()):
        params = ", ".join(f"{p.name}: {_param_annotation(p)}" for p in converter.params)
        names, body = {}, []
        for index, node in enumerate(iter_nodes(converter.body)):
            if not isinstance(node, Call):
                continue
            refs = [a.name if isinstance(a, Var) else format_value(a.value) if isinstance(a, Constant)
                    else names[id(a)] for a in node.args]
            names[id(node)] = f"c{index}"
            body.append(f"        c{index} = {op_text(node.op, refs)}")
        if id(converter.body) not in names:
            return ()  # a converter that is not ops over its weight: none is written (the check then says)
        lines += ["", f'    @{function.name}.converter("{weight}")',
                  f"    def _({params}) -> {_annotation(converter.return_type)}:", *body,
                  f"        return {names[id(converter.body)]}"]
    return tuple(lines)


def _param_annotation(param) -> str:
    return ("ConstTensor" if param.is_const else "Tensor") + _annotation(param.type)[len("Tensor"):]
