"""The check of a large chain answer at reduced extents.

Checking a Llama-size MLP answer runs both programs in numpy with a forward
error bound per element: 2 x 58 M weights, each placed CTA on its own box, took
20-65 s on 2 cores, most of it the bound tracking. A chain's placed program is
a function of its extents and its choice only: the same text with every K and N
replaced is the same program at other extents. So the answer is checked at the
smallest extents that keep its structure:

- every extent ``e`` becomes a divisor ``e'`` of it, one per distinct extent (a
  stage's N is the next stage's K, and stays one extent);
- the CTA count is kept, and ``C`` still divides every stage's N', with at least
  two columns per CTA where the answer had two or more (so every CTA's column
  offset is exercised at a non-zero step);
- each stage's K tile is kept where it divides K' with two trips or more, else
  halved until it does (at least two trips where the answer had two: the loop's
  carried accumulator is exercised across trips);
- the ops are the same texts (a norm's literal 1/D stays: both programs read it).

Why that is sound: every op of a chain is elementwise, a reduction within one
row held whole by a CTA, or a matmul accumulated over K tiles, and the placement
decides only which columns a CTA owns (offset ``c * N/C``) and which K rows a
trip reads (offset ``t * tile``). Those are affine in the CTA and trip index
with the same coefficients' form at every extent; a reduced pair that keeps each
split and each loop at two or more parts exercises every offset term, both ends
of every range, and the cross-trip accumulation. What the reduction cannot see
is a fault that needs a particular count (say, 512 CTAs rather than 2 columns
each): the CTA count is kept for that reason, and the tile only shrinks where it
must. A chain whose matmul result dtype is not its operands' (an explicit
``out_dtype``), or whose extents admit no reduction, is checked at full size.
"""
from __future__ import annotations

from dataclasses import replace

__all__ = ["reduced_pair"]

#: a chain is checked at reduced extents when its weights hold more elements than this
FULL_CHECK_ELEMENTS = 1 << 22


def _weights(kernel) -> int:
    return sum(stage.k * n for stage in kernel.stages for _, _, n, _ in stage.matmuls)


def _reduced_extents(kernel, choice) -> dict | None:
    """extent -> its reduced divisor, or None when nothing shrinks."""
    from tilefoundry.placer.spaces import _divisors

    needs: dict = {}  # extent -> list of predicates its reduced value must meet
    for stage, tile in zip(kernel.stages, choice.tiles):
        per = stage.n // choice.ctas
        needs.setdefault(stage.n, []).append(
            lambda e, per=per: e % choice.ctas == 0 and e // choice.ctas >= min(2, per))
        trips, k = stage.k // tile, stage.k
        # two MMA k-steps of 16 per trip where the answer walked two trips or more
        needs.setdefault(stage.k, []).append(lambda e, trips=trips, k=k: e >= 16 * min(2, trips) or e == k)
    found = {}
    for extent, wanted in needs.items():
        fits = [d for d in _divisors(extent) if all(ok(d) for ok in wanted)]
        found[extent] = min(fits) if fits else extent
    return found if any(v != k for k, v in found.items()) else None


def _tile(tile: int, k: int, k_reduced: int) -> int:
    """The tile kept where it divides the reduced K with the trips it had (two at
    least), else halved until it does."""
    trips = min(2, k // tile)
    while tile > 1 and (k_reduced % tile or k_reduced // tile < trips):
        tile //= 2
    return tile


def _logical_text(kernel, level: str, ctas: int) -> str:
    """The chain as a logical program: each stage's prologue, its matmuls as
    ``left @ weight`` and its epilogue, under one mesh of the level."""
    from tilefoundry.placer.placed_program import _header

    lines = _header(kernel, f"{kernel.name}: the logical chain at reduced extents (place's check)",
                    [], level, ctas)
    body = [f'with Mesh(("{level}",), ({ctas},), ("all",)) as _all:']
    for stage in kernel.stages:
        for local, gmem, _, _ in stage.inputs:
            body.append(f"    {local}_s = {gmem[:-2] if gmem.endswith('_g') else gmem}")
        body += [f"    {name} = {text}" for name, text in stage.prologue]
        body += [f"    {name} = {stage.left} @ {weight}" for name, weight, _, _ in stage.matmuls]
        body += [f"    {name} = {text}" for name, text in stage.epilogue]
    body.append(f"    return {kernel.stages[-1].output[0]}")
    return "\n".join(lines + [f"        {line}" for line in body]) + "\n"


def _smallest(extent: int, parts: int, least: int) -> int:
    """The least divisor of ``extent`` that ``parts`` divides with at least
    ``least`` elements a part (``extent`` itself where none is smaller)."""
    from tilefoundry.placer.spaces import _divisors

    return min(d for d in _divisors(extent) if d % parts == 0 and d // parts >= least)


def _matmul_pair(kernel, choice, level: str) -> tuple | None:
    """A matmul answer at reduced extents: the same grid (each row and column
    split keeping two rows or columns a CTA where it had two), the same split-K,
    each CTA's K range walked in two trips or more of two MMA k-steps at least.
    The argument is a chain's of one stage: the placement decides only the
    offsets ``c * M/grid_m``, ``c * N/grid_n``, ``s * tile`` and ``t * tile *
    split``, affine in the CTA and trip index at every extent."""
    from tilefoundry.placer.placed_program import program_text

    a, b = kernel.params[:2]
    if not a.dtype == b.dtype == kernel.result[1]:
        return None
    m, k, n = kernel.dims["M"], kernel.dims["K"], kernel.dims["N"]
    trips = k // (choice.split_k * choice.tile_k)
    reduced_m = _smallest(m, choice.grid_m, min(2, m // choice.grid_m))
    reduced_n = _smallest(n, choice.grid_n, min(2, n // choice.grid_n))
    reduced_k = _smallest(k, choice.split_k, min(k // choice.split_k, 16 * min(2, trips)))
    if (reduced_m, reduced_k, reduced_n) == (m, k, n):
        return None
    tile = _tile(choice.tile_k, k // choice.split_k, reduced_k // choice.split_k)
    b_shape = (reduced_n, reduced_k) if kernel.b_transposed else (reduced_k, reduced_n)
    # an epilogue's operands (a bias row, a residual) at the reduced output's extents
    rest = tuple(replace(p, shape=(reduced_m, reduced_n) if len(p.shape) == 2 else (reduced_n,))
                 for p in kernel.params[2:])
    params = (replace(a, shape=(reduced_m, reduced_k)), replace(b, shape=b_shape), *rest)
    small = replace(kernel, params=params, result=((reduced_m, reduced_n), kernel.result[1]))
    placed = program_text(small, replace(choice, tile_k=tile), level)
    logical = _logical_matmul_text(small, level, choice.ctas)
    named = {"M": (m, reduced_m), "K": (k, reduced_k), "N": (n, reduced_n)}
    return logical, placed, {f"{name} {full}": small_ for name, (full, small_) in named.items() if full != small_}


def _logical_matmul_text(kernel, level: str, ctas: int) -> str:
    from tilefoundry.placer.placed_program import _header

    a, b = kernel.params[:2]
    lines = _header(kernel, f"{kernel.name}: the logical matmul at reduced extents (place's check)",
                    [], level, ctas)
    right = f"tf.transpose({b.name}, (1, 0))" if kernel.b_transposed else b.name
    body = [f'with Mesh(("{level}",), ({ctas},), ("all",)) as _all:']
    if kernel.lines:  # the epilogue as the logical kernel writes it, over the product "mm"
        body += [f"    mm = {a.name} @ {right}", *(f"    {name} = {text}" for name, text in kernel.lines),
                 f"    return {kernel.returned}"]
    else:
        body.append(f"    return {a.name} @ {right}")
    return "\n".join(lines + [f"        {line}" for line in body] + list(kernel.converters)) + "\n"


def reduced_pair(kernel, choice, level: str = "cta") -> tuple | None:
    """(logical text, placed text, the extents replaced) of a large chain or
    matmul answer at reduced extents, or None where the full check is kept."""
    from tilefoundry.placer.chain import ChainChoice, chain_text

    if kernel.kind == "matmul":
        from math import prod

        a, b = kernel.params[:2]
        large = prod(a.shape) + prod(b.shape) > FULL_CHECK_ELEMENTS
        # a batched matmul is checked whole: each batch entry is an independent product
        return _matmul_pair(kernel, choice, level) if large and "B" not in kernel.dims else None
    if kernel.kind != "chain" or _weights(kernel) <= FULL_CHECK_ELEMENTS:
        return None
    if any(dtype != stage.left_dtype for stage in kernel.stages for _, _, _, dtype in stage.matmuls):
        return None
    extents = _reduced_extents(kernel, choice)
    if extents is None:
        return None

    def shape(dims) -> tuple:
        return tuple(extents.get(d, d) for d in dims)

    stages = tuple(replace(stage, k=extents[stage.k], n=extents[stage.n],
                           matmuls=tuple((name, w, extents[n], dt) for name, w, n, dt in stage.matmuls),
                           inputs=tuple((lo, gm, shape(sh), dt) for lo, gm, sh, dt in stage.inputs),
                           output=(stage.output[0], shape(stage.output[1]), stage.output[2]))
                   for stage in kernel.stages)
    params = tuple(replace(p, shape=shape(p.shape)) for p in kernel.params)
    small = replace(kernel, stages=stages, params=params, result=(shape(kernel.result[0]), kernel.result[1]))
    tiles = tuple(_tile(t, s.k, extents[s.k]) for s, t in zip(kernel.stages, choice.tiles))
    placed = chain_text(small, ChainChoice(choice.ctas, tiles), level)
    return _logical_text(small, level, choice.ctas), placed, {k: v for k, v in extents.items() if k != v}
