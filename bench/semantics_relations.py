"""Bench: build and type a 150-call program, then build every call's access
relations (structural form) and, separately, their isl maps (memoised by
structural key). Prints the figures; the target is <= 0.2 s for typing +
relations. Run: python bench/semantics_relations.py"""
from __future__ import annotations

import time


def build_program():
    from tilefoundry.ir.dtype import DType
    from tilefoundry.ir.expr import Constant, Var
    from tilefoundry.ir.shard import Layout, Mesh, S, ShardLayout, Topology
    from tilefoundry.ir.storage import StorageKind as SK
    from tilefoundry.ir.tensor_type import TensorType
    from tilefoundry.ops import Binary, BinaryKind as BK, Cast, MatMul, Reduce, ReduceKind as RK, Reshard
    from tilefoundry.ops import Unary, UnaryKind as UK
    from tilefoundry.semantics.typeinfer import build_call

    mesh = Mesh((Topology("cta", 8), Topology("thread", 128)), Layout((8, 4, 32), (128, 32, 1)),
                names=("row", "warp", "lane"))
    x = Var("x", TensorType((8, 2048), DType.bf16))
    w = Var("w", TensorType((2048, 2048), DType.f32))
    lay = ShardLayout(Layout((8, 4, 32, 16)), (S(0), S(1), S(2)), mesh)
    eps = Constant(1e-5, TensorType((), DType.f32, None, SK.UMAT))
    calls = []
    h = build_call(Cast(DType.f32), (build_call(Reshard(lay, SK.RMEM), (x,)),))
    calls.append(h)
    while len(calls) < 150:
        sq = build_call(Binary(BK.MUL), (h, h))
        red = build_call(Reduce((-1,), True, RK.SUM), (sq,))
        inv = build_call(Unary(UK.RSQRT), (build_call(Binary(BK.ADD), (red, eps)),))
        h = build_call(Binary(BK.MUL), (h, inv))
        calls.extend([sq, red, inv, h])
    unsharded = Var("u", TensorType((64, 2048), DType.f32))
    for _ in range(6):
        unsharded = build_call(MatMul(), (unsharded, w))
        calls.append(unsharded)
    return calls


def main():
    import tilefoundry.ops  # noqa: F401  (registries; import cost is not part of the figure)
    from tilefoundry.semantics.relations import clear_isl_cache, isl_cache_size, relations_of_call

    build_program()  # warm the per-process caches of dims and regroups once
    clear_isl_cache()
    t0 = time.perf_counter()
    calls = build_program()
    t1 = time.perf_counter()
    relations = [relations_of_call(c) for c in calls]
    t2 = time.perf_counter()
    for rel in relations:
        for boundary in list(rel.inputs) + list(rel.outputs):
            if boundary is not None:
                boundary.pattern.relation
    t3 = time.perf_counter()
    print(f"calls={len(calls)}")
    print(f"typing (incl. shard propagation) = {(t1 - t0) * 1e3:.1f} ms")
    print(f"relations (structural)            = {(t2 - t1) * 1e3:.1f} ms")
    print(f"typing + relations                = {(t2 - t0) * 1e3:.1f} ms (target <= 200 ms)")
    print(f"isl maps built on demand          = {(t3 - t2) * 1e3:.1f} ms for {isl_cache_size()} distinct maps")


if __name__ == "__main__":
    main()
