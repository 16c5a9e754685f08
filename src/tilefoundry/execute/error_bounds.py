"""A forward error bound per element, computed alongside the logical run
(``check --tolerance dtype``, docs/execution.md "Bounds").

Each value is a ``Bounded``: the array the program computes (``x``, exactly
the logical run's) and an array ``e`` bounding, element by element,
``|x - exact|``, where *exact* is the program's arithmetic done in real
numbers on the same inputs. The rules (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., ch. 2-3):

- data movement (reshape, transpose, slice, concat, reshard, a loop's tile
  windows, where, ...) never rounds: the bound moves with its element;
- an arithmetic result rounds once to its dtype: ``u·|x|`` with the unit
  roundoff ``u = 2^-p`` (f32 2^-24, f16 2^-11, bf16 2^-8, fp8 e4m3 2^-4), on
  top of the propagated bounds of its operands (``|a|e_b + |b|e_a + e_a e_b``
  for a product, ``e_a + e_b`` for a sum);
- a sum or dot of n terms accumulated in f32 carries ``gamma_n·sum|terms|``
  with ``gamma_n = n·u/(1 - n·u)``;
- a special function (exp, log, rsqrt, tanh, sigmoid, ...) carries its stated
  ulp error (``SPECIAL_ULPS``) and its operand's bound through the function
  (the function at ``x ± e``);
- an integer or bool value is exact (as computed: an index or a comparison
  is taken as the program computed it).

Because the bound is carried per element, it is small where values are small
and never a fraction of the largest value. ``Derivation`` keeps, per op kind,
the largest share of the output's bound it contributed, for the printed
derivation.
"""
from __future__ import annotations

from tilefoundry.errors import EvaluationError
from tilefoundry.semantics.op_numerics import np
from tilefoundry.execute.logical import PerParticipant

__all__ = ["Bounded", "Derivation", "Model", "WORST", "RSS", "held_to", "held_apart", "is_exact", "unit_roundoff", "gamma", "SPECIAL_ULPS", "values_of", "bounds_of"]

#: ulps of error of a special function evaluated in f32 (numpy's float32 loops: exp/log
#: within 4 ulp, numpy 1.20 release notes "SIMD float32 exp and log"; we state 4 for every
#: one-call function and add one per further f32 operation of a composite form)
SPECIAL_ULPS = {"exp": 4, "exp2": 4, "log": 4, "log2": 4, "rsqrt": 4, "tanh": 4,
                "sigmoid": 7, "silu": 8, "softplus": 6, "gelu": 12}


def unit_roundoff(dtype) -> float:
    """u = 2^-(mantissa bits + 1) of a float DType (bf16 2^-8); 0 for an exact type."""
    return 2.0 ** -(dtype.mantissa_bits + 1) if dtype.is_float else 0.0


U32 = 2.0 ** -24


def gamma(n: int, u: float = U32) -> float:
    """gamma_n = n·u / (1 - n·u): the relative bound of n roundings (Higham eq. 3.8)."""
    nu = n * u
    return nu / (1.0 - nu) if nu < 1.0 else float("inf")


class Model:
    """How bounds combine. Every value carries two: ``worst-case``, the
    deterministic forward bound (every rounding error at its extreme, all of one
    sign: gamma_n = n·u/(1 - n·u), operand bounds add), and ``rss``, the root sum
    of squares of the same error terms, treating rounding errors as independent
    and of mean zero (Higham & Mary, "A New Approach to Probabilistic Rounding
    Error Analysis", SIAM J. Sci. Comput. 41(5), 2019): an n-term f32 sum carries
    sqrt(n)·u·sum|terms|, operand terms combine in quadrature. An output is held
    to ``min(worst-case, LAMBDA·rss)`` per element: by Hoeffding's inequality a
    sum of independent terms bounded by c_k exceeds LAMBDA·sqrt(sum c_k^2) with
    probability at most 2·exp(-LAMBDA^2/2) (6.1e-16 at LAMBDA = 8)."""

    LAMBDA = 8.0

    def __init__(self, name: str = "worst-case"):
        if name not in ("rss", "worst-case"):
            raise ValueError(name)
        self.name = name
        self.rss = name == "rss"

    def gamma(self, n: int, u: float = U32) -> float:
        worst = gamma(n, u)
        return min(worst, max(n, 1) ** 0.5 * u) if self.rss else worst

    def add(self, propagated, own):
        """An operand's bound and the op's own rounding, combined; an exact part (a
        bound held as the number 0) adds nothing, so no pass over the other is made."""
        if is_exact(own):
            return propagated
        if is_exact(propagated):
            return own
        if not self.rss:
            return propagated + own
        return np.sqrt(propagated * propagated + own * own)

    def total(self, e, axes, keep):
        """The bound of a sum of terms whose bounds are ``e``, over ``axes``."""
        if not self.rss:
            return np.sum(e, axis=axes, keepdims=keep)
        with np.errstate(all="ignore"):
            return np.sqrt(np.sum(e * e, axis=axes, keepdims=keep))

    def dot(self, product, a, eb, ea, b, square_of=None):
        """The bound a contraction ``product`` carries from its operands' bounds
        (``a``/``b`` magnitudes): |a|·e_b + e_a·|b| + e_a·e_b term by term; an
        exact operand (a bound of 0, held as one number) adds no term.
        ``square_of``: how rss squares a value (a caller may keep a weight's square)."""
        exact_a, exact_b = is_exact(ea), is_exact(eb)
        if exact_a and exact_b:
            return 0.0
        square = (lambda v: v) if not self.rss else (square_of or (lambda v: v * v))
        total = 0.0
        with np.errstate(all="ignore"):
            if not exact_b:
                total = total + product(square(a), square(eb))
            if not exact_a:
                total = total + product(square(ea), square(b))
            if not (exact_a or exact_b):
                total = total + product(square(ea), square(eb))
            return np.sqrt(total) if self.rss else total


WORST, RSS = Model("worst-case"), Model("rss")


def is_exact(e) -> bool:
    """A bound held as the single number 0: an exact value of any shape (inputs, integers),
    kept that way so an exact weight costs no memory beside its value."""
    return np.ndim(e) == 0 and float(e) == 0.0


def held_to(worst, rss):
    """The bound an output is held to: min(worst-case, LAMBDA·rss) per element."""
    return np.minimum(np.asarray(worst, np.float64), Model.LAMBDA * np.asarray(rss, np.float64))


def held_apart(mine: tuple, theirs: tuple):
    """The bound on |program - reference| from each side's (worst-case, rss) bounds:
    worst cases add; the two sides' rounding errors are independent, so their rss
    terms join in quadrature before LAMBDA (one Hoeffding bound over both sides)."""
    (wp, rp), (wr, rr) = mine, theirs
    worst = np.asarray(wp, np.float64) + np.asarray(wr, np.float64)
    rss = np.sqrt(np.square(np.asarray(rp, np.float64)) + np.square(np.asarray(rr, np.float64)))
    return np.minimum(worst, Model.LAMBDA * rss)


class Bounded:
    """A value and the bounds of its error, element by element: ``e`` worst-case,
    ``s`` root-sum-square (``Model``); a tuple value is a tuple of Bounded."""

    __slots__ = ("x", "e", "s")

    def __init__(self, x, e, s=None):
        self.x = x
        self.e = e
        self.s = e if s is None else s


def values_of(value):
    if isinstance(value, Bounded):
        return value.x
    if isinstance(value, tuple):
        return tuple(values_of(v) for v in value)
    return value


def bounds_of(value, rss: bool = False):
    if isinstance(value, Bounded):
        return value.s if rss else value.e
    return tuple(bounds_of(v, rss) for v in value)


#: elements a derivation share is read from; a longer value is sampled with a stride
_NOTED = 1 << 16


class Derivation:
    """What each kind of op adds of its own, for the printed derivation: per op kind
    and model, the largest median over a value's elements (those at least 1e-3 of
    its largest) of the op's own bound relative to the element's magnitude."""

    def __init__(self):
        self.terms: dict = {}  # (op kind, "worst-case" | "rss") -> share
        self.parts: dict = {}  # output name -> (worst-case, rss) bounds, per element
        self.tie = None  # the run's first top-k/argmax near tie (execute/near_ties.py), or None

    def note(self, what: str, amount, x, model: str = "worst-case") -> None:
        amount = np.asarray(amount, dtype=np.float64)
        if not amount.size or isinstance(x, PerParticipant):
            return
        values = np.asarray(x)
        if (amount.ndim and amount.shape != values.shape) or not values.size:
            return
        flat = values.reshape(-1)
        top = max(float(np.max(flat)), -float(np.min(flat)))
        # the median is read off a strided sample of a large value: it is the printed
        # derivation's figure, not the bound, and a layer's values are millions long
        step = -(-flat.size // _NOTED)
        wide = np.abs(flat[::step].astype(np.float64))
        amount = (np.broadcast_to(amount, values.shape).reshape(-1)[::step] if amount.ndim
                  else np.broadcast_to(amount, wide.shape))
        counted = wide >= max(1e-3 * top, np.finfo(np.float64).tiny)
        if not counted.any():
            return
        with np.errstate(all="ignore"):
            share = float(np.median(amount[counted] / wide[counted]))
        if share == share and share > self.terms.get((what, model), 0.0):
            self.terms[(what, model)] = share

    def dominant(self, count: int = 3) -> list:
        """(op kind, worst-case share, LAMBDA·rss share) of the ``count`` kinds whose
        held share, the smaller of the two, is largest."""
        kinds = {what for what, _ in self.terms}
        rows = [(what, self.terms.get((what, "worst-case"), 0.0),
                 Model.LAMBDA * self.terms.get((what, "rss"), 0.0)) for what in kinds]
        return sorted(rows, key=lambda row: -min(row[1], row[2]))[:count]


def check_supported(call) -> None:
    """A refusal for an op with no bound rule (a user's own op): one line, the remedy."""
    raise EvaluationError(f"{call.op.name}: no error-bound rule for this op, so check cannot "
                          "derive a bound (--tolerance dtype); state one with --rtol/--atol")
