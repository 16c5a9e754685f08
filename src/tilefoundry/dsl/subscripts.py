"""Tensor subscripts (authoring.md §5.5): ``x[i0, i1, ...]`` lowers to
``slice`` (then ``reshape`` when int indexers drop axes); tuple and list items."""
from __future__ import annotations

import ast

from tilefoundry.ir.dim import is_static
from tilefoundry.ir.expr import Expr
from tilefoundry.ir.tensor_type import TensorType, TupleType
from tilefoundry.dsl import opcall
from tilefoundry.dsl.sugar import MeshValue
from tilefoundry.dsl.window import Window


class SubscriptMixin:
    # ---------------------------------------------------------------- subscripts
    def subscript(self, node, binding):
        base = self.ev(node.value)
        if isinstance(base, list):
            index = self.ev(node.slice)
            if isinstance(index, (Expr, Window)):
                self.error(node.slice, f"a list is indexed at authoring time: `{ast.unparse(node.slice)}` is a "
                                       "runtime value (a loop variable?), not a compile-time int (§5.2)")
            if not is_static(index):
                self.error(node.slice, "a list index must be a compile-time int")
            try:
                return base[index]
            except IndexError:
                self.error(node, f"list index {index} out of range for {len(base)} items")
        if isinstance(base, tuple):
            return self.static(node, "tuple item")
        if isinstance(base, MeshValue):
            self.error(node, "a mesh slice is accepted only as a `with` item (`with grid[:4] as left`)")
        if not isinstance(base, Expr):
            self.error(node, f"cannot subscript {type(base).__name__}")
        if isinstance(base.type, TupleType):
            index = self.static(node.slice, "tuple index")
            if not is_static(index):
                self.error(node.slice, "a tuple index must be an int literal")
            if not -len(base.type.fields) <= index < len(base.type.fields):
                self.error(node.slice, f"tuple index {index} out of range for {len(base.type.fields)} fields")
            return self.tuple_item(base, index % len(base.type.fields), node, binding)
        return self.slice_tensor(base, node, binding)

    def slice_tensor(self, base, node, binding):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        shape = base.type.shape
        if len(items) != len(shape):
            self.error(node, f"subscript needs exactly one indexer per axis: {len(items)} for a rank-{len(shape)} tensor")
        starts, sizes, strides, kept = [], [], [], []
        for axis, (item, extent) in enumerate(zip(items, shape)):
            if isinstance(item, ast.Constant) and (item.value is Ellipsis or item.value is None):
                self.error(item, "`...` and `None` are not accepted as indexers")
            if isinstance(item, ast.Slice):
                start, size, step = self.slice_axis(item, extent)
                starts.append(start); sizes.append(size); strides.append(step); kept.append(size)
                continue
            value = self.ev(item)
            if isinstance(value, Window):
                # where its trips take the window (before 0, past the extent) is
                # the program check's question, asked once every extent is bound
                # (analysis/window_bounds.py)
                starts.append(self.window_start(value, item)); sizes.append(value.step); strides.append(1)
                kept.append(value.step)
                continue
            if is_static(value):
                if not is_static(extent):
                    self.error(item, "an int index needs a static extent")
                index = value + extent if value < 0 else value
                if not 0 <= index < extent:
                    self.error(item, f"index {value} out of range for extent {extent}")
                starts.append(index); sizes.append(1); strides.append(1)
                continue
            if isinstance(value, Expr) and isinstance(value.type, TensorType) and value.type.rank == 0:
                starts.append(value); sizes.append(1); strides.append(1)
                continue
            self.error(item, f"unsupported indexer `{ast.unparse(item)}`")
        dropped = len(kept) != len(shape)
        start_tuple = opcall.tuple_expr([self.as_input(s, node) for s in starts])
        sliced = self.build_named("slice", [base, start_tuple], {"sizes": tuple(sizes), "strides": tuple(strides)},
                                  node, None if dropped else binding)
        if dropped:
            return self.build_named("reshape", [sliced], {"new_shape": tuple(kept)}, node, binding)
        return sliced

    def slice_axis(self, item: ast.Slice, extent):
        step = 1 if item.step is None else self.static(item.step, "slice step")
        if not is_static(step) or step <= 0:
            self.error(item, f"a slice step must be a positive compile-time int, got {step!r}")
        lower = 0 if item.lower is None else self.ev(item.lower)
        if isinstance(lower, Expr):
            if step != 1:
                self.error(item, "a runtime start needs step 1")
            upper = item.upper
            if (isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add)
                    and ast.dump(upper.left) == ast.dump(item.lower)):
                size = self.static(upper.right, "slice size")
                if is_static(size):
                    return lower, size, 1
            self.error(item, "a runtime slice start takes the form `s : s + K` with K a compile-time int")
        upper = extent if item.upper is None else self.static(item.upper, "slice bound")
        if not is_static(lower) or not (is_static(upper) or upper is extent):
            self.error(item, "slice bounds must be compile-time ints")
        if is_static(extent):
            start, stop, _ = slice(lower, upper, step).indices(extent)
            size = max(0, -(-(stop - start) // step))
            return start, size, step
        if lower < 0 or (is_static(upper) and upper < 0):
            self.error(item, "negative slice bounds need a static extent")
        size = upper - lower
        return lower, (size if step == 1 else -(-size // step)), step
