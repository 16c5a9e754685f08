"""Reference prose of the elementwise ops (``ops.math``) and Cast: see ``ops.op_doc``."""
from __future__ import annotations

from tilefoundry.ops.op_doc import OpDoc

_LAYOUT_LIKE_X = (
    "Elementwise identity: the result has `x`'s layout -- its splits, strides and storage -- "
    "and an all-`Broadcast` (replicated) `x` keeps that placement. ")

_IDENTITY = "Identity: result element `i` reads element `i` of `x`; each is written once."

_UNRATED = ("cannot price (no published rate: the call's roofline reads `bound-by=unrated`) and "
            "performance refuses (\"target states no one-unit throughput for dtype 'i32'\").")

_ONE_FLOP = ("One flop per result element under the result dtype (companions §5.3); `x` is read and "
             "the result written.")


def _activation(formula: str, monotone: bool, tf_name: str, **extra) -> OpDoc:
    """Softplus, Silu, Sigmoid, Tanh, ReLU, Gelu: one float operand, one result."""
    partial = ("`Partial(\"max\")` and `Partial(\"min\")` pass (the function is monotone "
               "non-decreasing); `Partial(\"sum\")` is refused" if monotone
               else "every `Partial` is refused")
    return OpDoc(
        dtypes=(f"`x` must be a float tensor (`f32`, `f16`, `bf16`, `fp8e4m3`, ...); the result keeps its "
                f"dtype. A low-precision `x` is computed in f32 and rounded once to its dtype. {formula}"),
        shard=f"{_LAYOUT_LIKE_X}{partial}.",
        access=_IDENTITY,
        cost=(f"{_ONE_FLOP} The exponential or tangent inside is not counted as `special` service: "
              "the op is one flop per element."),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"bf16\"]):\n"
                 f"    return tf.{tf_name}(x{extra.get('args', '')})  # Tensor[(8, 64), \"bf16\"]"),
        example_cost="flops=bf16:512",
    )


_BINARY_PARTIAL = (
    "`Partial` operands are judged per mesh axis: `add`/`sub` need `Partial(\"sum\")` on both "
    "operands (the result is `Partial(\"sum\")`); `mul` takes one `Partial(\"sum\")` operand times one "
    "that is `Broadcast` on that mesh axis; `div` a `Partial(\"sum\")` dividend over a `Broadcast` "
    "divisor; `max`/`min` `Partial(\"max\")`/`Partial(\"min\")` on both operands or on one; every "
    "other kind, and every other mix (a `Partial` plus a replicated addend, say), is refused with a "
    "`reshard` remedy.")

DOCS = {
    "binary": OpDoc(
        dtypes=(
            "`lhs` and `rhs` have one dtype: tensor operands are never promoted (`tf.cast` one side). "
            "A Python float next to a tensor takes the tensor's float dtype (`x * 2.0` with a bf16 `x` "
            "is bf16); a Python int is an `i64` constant, so `f32_x + 1` is refused (write `1.0`). "
            "The comparisons (`cmp_*`) and logical kinds give `bool`; `logical_and`/`logical_or` need "
            "`bool` operands, `floor_div`/`mod` `i32`/`i64` ones; every other kind keeps the operand "
            "dtype. Shapes broadcast right-aligned (numpy). Storage: the operands' concrete storages "
            "must agree (a `umat` constant abstains)."),
        shard=(
            "Relation-driven (semantic-analysis §3.2): each operand axis maps to the result axis it is "
            "right-aligned with, so a `Split` of an operand axis splits that result axis; operands "
            "that split one mesh axis must split the same result axis (else refused: reshard one). An "
            "operand `Broadcast` on a mesh axis adds nothing there, so split + replicated is split. "
            "With no real split, operands placed all-`Broadcast` on one mesh give a result with that "
            "replicated placement; with no placement at all the result takes an equal-shape "
            "operand's plain `Layout`, else, in `rmem`/`smem`, a fresh C-order one. "
            f"{_BINARY_PARTIAL}"),
        access=("One iteration per result element; each operand is read at the result index "
                "right-aligned, an operand axis of extent 1 that broadcasts being read at index 0; the "
                "result is written once per element."),
        cost=("One flop per result element under the result dtype for the arithmetic kinds (`div`, "
              "`min`, `max` one each); the comparisons and logical kinds record `predicate` service "
              "and an arithmetic kind with an integer result `integer` service, one per result "
              "element, never flops (companions §5.2). Both operands are read, the result written."),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"bf16\"], g: Tensor[(64,), \"bf16\"]):\n"
                 "    return tf.add(x, g)  # Tensor[(8, 64), \"bf16\"]"),
        example_cost="flops=bf16:512",
        also=("the operators `a + b`, `a - b`, `a * b`, `a / b`, `a // b`, `a % b`, `a == b`, `a != b`, "
              "`a < b`, `a <= b`, `a > b`, `a >= b`, `a and b`, `a or b` (authoring §5.3)."),
        alias_costs={
            "add": "flops", "sub": "flops", "mul": "flops", "div": "flops", "floor_div": "integer",
            "mod": "integer", "min": "flops", "minimum": "flops", "max": "flops", "maximum": "flops",
            "cmp_eq": "predicate", "cmp_ne": "predicate", "cmp_lt": "predicate", "cmp_le": "predicate",
            "cmp_gt": "predicate", "cmp_ge": "predicate", "logical_and": "predicate",
            "logical_or": "predicate"},
    ),
    "unary": OpDoc(
        dtypes=("The result keeps `x`'s dtype. `rsqrt`, `exp`, `log`, `exp2`, `log2`, `ceil` and `round` "
                "need a float `x` (`tf.cast(x, \"f32\")` first); `logical_not` needs `bool`; kind "
                "`cast` is refused (use `tf.cast(x, dtype)`)."),
        shard=(f"{_LAYOUT_LIKE_X}`neg` carries `Partial(\"sum\")`; the monotone kinds `exp`, `exp2`, "
               "`log`, `log2`, `ceil`, `round` (and `relu`) carry `Partial(\"max\")` and "
               "`Partial(\"min\")`; every other kind or reduction is refused."),
        access=_IDENTITY,
        cost=("`logical_not` records `predicate` service; `rsqrt`, `exp`, `log`, `exp2`, `log2` record "
              "`special` service (the target's special-function rate); any other kind records "
              "`integer` service on an integer result and otherwise one flop per element under the "
              "result dtype. `x` is read, the result written."),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"f32\"]):\n"
                 "    return tf.rsqrt(x)  # Tensor[(8, 64), \"f32\"]"),
        example_cost="service=special:512",
        also="the operators `-a` and `not a`.",
        alias_costs={
            "logical_not": "predicate", "neg": "flops", "abs": "flops", "rsqrt": "special",
            "exp": "special", "log": "special", "square": "flops", "ceil": "flops", "round": "flops",
            "exp2": "special", "log2": "special"},
    ),
    "clamp": OpDoc(
        dtypes=("Any dtype but `bool` (a bool operand is refused when it is evaluated); the result keeps "
                "`x`'s dtype. `min_val <= max_val` (both required)."),
        shard=(f"{_LAYOUT_LIKE_X}`Partial(\"max\")` and `Partial(\"min\")` pass (clamping is monotone); "
               "`Partial(\"sum\")` is refused."),
        access=_IDENTITY,
        cost=(f"{_ONE_FLOP} On an integer `x` that is a flop under the integer dtype, which roofline "
              f"{_UNRATED}"),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"f32\"]):\n"
                 "    return tf.clamp(x, -448.0, 448.0)  # Tensor[(8, 64), \"f32\"]"),
        example_cost="flops=f32:512",
    ),
    "softplus": _activation("`log(1 + exp(x))`.", True, "softplus"),
    "silu": _activation("`x * sigmoid(x)`.", False, "silu"),
    "sigmoid": _activation("`1 / (1 + exp(-x))`.", True, "sigmoid"),
    "tanh": _activation("`tanh(x)`.", True, "tanh"),
    "relu": _activation("`max(x, 0)`.", True, "relu"),
    "gelu": _activation("The string `approximate` is kept as written; `\"tanh\"` and `\"none\"` (exact) "
                        "evaluate, any other is refused when evaluated.", False, "gelu",
                        args=', approximate="none"'),
    "where": OpDoc(
        dtypes=("`condition` is `bool`; `input` and `other` have one dtype, which the result takes (no "
                "promotion). Shapes broadcast three ways, right-aligned. Storage comes from `input` and "
                "`other` only: the condition's storage does not vote."),
        shard=("As `binary`: the splits of `condition`, `input` and `other` carry to the result axes "
               "they align with and must agree per mesh axis; a replicated set keeps its placement. "
               "Every `Partial` operand is refused: no selection commutes with a pending reduction, "
               "so complete it with `reshard` first."),
        access=("One iteration per result element; each operand is read at the result index "
                "right-aligned (a broadcast axis at 0); the result is written once per element."),
        cost=("`select` service, one per result element (no flops); the three operands are read, the "
              "result written."),
        example=("@func\n"
                 "def example(c: Tensor[(8, 64), \"bool\"], x: Tensor[(8, 64), \"f32\"]):\n"
                 "    return tf.where(c, x, 0.0)  # Tensor[(8, 64), \"f32\"]"),
        example_cost="service=select:512",
    ),
    "cast": OpDoc(
        dtypes=("Any dtype to any dtype (`dtype` positional or keyword: `tf.cast(x, \"bf16\")`). Cast is "
                "the only op that changes a dtype: no other op promotes, and the low-precision types "
                "(`bf16`, `f16`, `fp8e4m3`, `f4e2m1`, ...) enter and leave a program only through it."),
        shard=("The result is `x`'s type with the new dtype: layout, splits, strides and storage "
               "unchanged. A float-to-float cast carries any `Partial` (conversion commutes with sum, "
               "max and min, rounding aside); a cast to or from an integer or `bool` refuses it."),
        access=_IDENTITY,
        cost=(f"{_ONE_FLOP} A cast to an integer dtype records flops under that dtype too (companions "
              f"§5.2), which roofline {_UNRATED}"),
        example=("@func\n"
                 "def example(x: Tensor[(8, 64), \"f32\"]):\n"
                 "    return tf.cast(x, \"bf16\")  # Tensor[(8, 64), \"bf16\"]"),
        example_cost="flops=bf16:512",
    ),
}
