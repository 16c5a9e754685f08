"""Box-shaped access relations are counted without isl (companions §4.3: the
amount of a boundary is the number of distinct coordinates its relation
reaches; §4.4: a run-time parameter takes the smallest value its relations
allow). Every answer must equal the isl path's; a relation of another shape
must fall back to isl rather than be answered wrongly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fresh_process import assert_passes_fresh
from tests.models.zoo_cache import namespace
from tilefoundry.analysis.analyze import analyze
from tilefoundry.analysis.memory import box_counts as box
from tilefoundry.analysis.memory import traffic
from tilefoundry.dsl.loader import load_selection, resolve_selector
from tilefoundry.ir.tensor_type import TensorType
from tilefoundry.semantics.relations import AffineAccess, AxisMap, BoundaryRelation, proj

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"


def _asked_counts(monkeypatch, module, function, families, dims):
    """Every (counter, call, level, answer) the analysis asked of a counter."""
    asked, count = [], traffic.BoundaryCounter.count

    def recording(self, call, level):
        answer = count(self, call, level)
        asked.append((self, call, level, answer))
        return answer

    monkeypatch.setattr(traffic.BoundaryCounter, "count", recording)
    analyze(module, function, analysis=families, dims=dims)
    monkeypatch.setattr(traffic.BoundaryCounter, "count", count)
    return asked


def _boxed_share(monkeypatch, asked) -> tuple[int, int]:
    """(calls the box path answered, calls asked); asserts each box answer
    equals the isl path's for the same call and level."""
    answered = 0
    for counter, call, level, answer in asked:
        if box.box_counts(counter.boundaries(call), level, counter._held_masks) is None:
            continue
        answered += 1
        with monkeypatch.context() as isl_only:
            isl_only.setattr(traffic, "box_counts", lambda *a: None)
            fresh = traffic.BoundaryCounter(counter.level, counter.topologies)
            assert answer == fresh.count(call, level), f"{call.op} at level {level}"
    return answered, len(asked)


def _golden_entries():
    manifest = json.loads((PROGRAMS / "expected" / "manifest.json").read_text(encoding="utf-8"))
    return [e for e in manifest["valid"] if "memory" in e["families_ran"] or "performance" in e["families_ran"]]


@pytest.mark.parametrize("entry", _golden_entries(), ids=lambda e: e["stem"])
def test_companions_4_3_box_counts_equal_isl_on_golden_programs(monkeypatch, entry):
    module, function = load_selection(f"{PROGRAMS / entry['source']}:{entry['selector']}")
    families = tuple(f for f in entry["families_ran"] if f in ("memory", "performance"))
    asked = _asked_counts(monkeypatch, module, function, families, entry["dims"] or None)
    _boxed_share(monkeypatch, asked)


# three kinds of layer: grouped-query attention, latent attention, a state-space mixer
PLACED_KINDS = ("llama3-8b", "deepseek-v3-mla", "mamba2-2.7b")


def _placed_layers():
    from tilefoundry.models import MODELS

    found = [(model, selection) for model in MODELS for selection in model.selections
             if selection.kind == "layer" and "_H200." in selection.selector and model.name in PLACED_KINDS]
    assert {model.name for model, _s in found} == set(PLACED_KINDS), "a zoo model was renamed"
    return found


@pytest.mark.parametrize("model, selection", _placed_layers(),
                         ids=lambda v: getattr(v, "selector", getattr(v, "name", "")))
def test_companions_4_4_box_counts_equal_isl_on_placed_zoo_layers(monkeypatch, model, selection):
    module = resolve_selector(namespace(model.file), selection.selector)
    args = selection.dim_args()
    dims = dict(arg.split("=") for arg in args[1::2])
    asked = _asked_counts(monkeypatch, module, module.entry_function(), ("memory", "performance"),
                          {name: int(value) for name, value in dims.items()} or None)
    answered, total = _boxed_share(monkeypatch, asked)
    # a placed layer's windows, tiles and sharded operands are boxes: isl is left the reshapes
    assert answered >= 0.75 * total, (answered, total)


def test_digit_masks_hold_what_the_digit_constraints_state():
    for n, stride, modulus, limit in [(24, 1, None, 5), (24, 4, None, 2), (48, 2, 3, 1),
                                      (50, 3, 4, 2), (7, 1, 2, 1), (16, 8, 2, 3)]:
        mask = box._digit_mask(n, stride, modulus, limit)
        expected = [o for o in range(n)
                    if (o // stride if modulus is None else (o // stride) % modulus) < limit]
        assert [o for o in range(n) if mask >> o & 1] == expected, (n, stride, modulus, limit)


def _rows(*accesses):
    return [(BoundaryRelation(a), t, False, k) for k, (a, t) in enumerate(accesses)]


def _count(rows, level=None):
    return box.box_counts(rows, level, lambda t, lvl: [None] * len(t.shape))


F32 = "f32"


def test_box_counts_read_windows_guards_and_constants():
    window = AffineAccess((proj(0), AxisMap(dim=1, offset=2)), ("4", "6"))  # runs 2 past the box
    fixed = AffineAccess((AxisMap(offset=3), proj(1)), ("4", "6"))
    guarded = AffineAccess((proj(0), proj(1)), ("4", "6"), guards=("1 <= i0 < 3",))
    counts = _count(_rows((window, TensorType((4, 7), F32)), (fixed, TensorType((4, 6), F32)),
                          (guarded, TensorType((4, 6), F32))))
    assert counts == [4 * 5, 1 * 6, 2 * 6]


def test_a_run_time_start_takes_the_least_value_its_guards_allow():
    from tilefoundry.ir.expr import Var

    start = Var("s", TensorType((), "i32"))
    window = AffineAccess((AxisMap(dim=0, offset="p_s"),), ("3",), parameters=(("p_s", start),),
                          param_guards=("2 <= p_s and p_s + 2 <= 9 - 1",))
    assert box._settled(_rows((window, TensorType((9,), F32))), {"p_s": start})[0] == {"p_s": 2}
    assert _count(_rows((window, TensorType((4,), F32)))) == [2]  # 2 and 3 of 2..4 lie in the box


@pytest.mark.parametrize("access", [
    AffineAccess((proj(0), proj(0)), ("4",)),  # a diagonal: the image is no product
    AffineAccess((AxisMap(dim=0, coeff=2),), ("4",)),  # a stride
    AffineAccess((AxisMap(expr="floor(i0/2)"),), ("4",)),  # a reshape's quasi-affine axis
    AffineAccess((proj(0),), ("4",), guards=("(i0 < 1 or i0 >= 3)",)),  # a guard that is no interval
    AffineAccess((proj(0),), ("4",), guards=("i0 + o0 < 3",)),  # a guard on two dimensions
])
def test_relations_of_another_shape_are_left_to_isl(access):
    assert _count(_rows((access, TensorType((4, 4)[:access.rank], F32)))) is None


def test_a_tuple_is_charged_the_leaves_its_index_axis_reaches():
    from tilefoundry.ir.tensor_type import TupleType

    pair = TupleType((TensorType((2,), F32), TensorType((3,), F32), TensorType((), F32)))
    first_two = AffineAccess((AxisMap(free=True), AxisMap(offset=-7)), ("4",), guards=("0 <= o0 < 2",))
    last = AffineAccess((AxisMap(offset=2), proj(0)), ("4",))
    assert _count(_rows((first_two, pair), (last, pair))) == [(0, 1), (2,)]


def test_a_shift_past_the_mask_limit_is_left_to_isl():
    far = AffineAccess((AxisMap(dim=0, offset=-(box.MAX_EXTENT + 1)),), ("4",))
    assert _count(_rows((far, TensorType((4,), F32)))) is None


def test_a_start_without_a_lower_bound_is_left_to_isl():
    from tilefoundry.ir.expr import Var

    start = Var("s", TensorType((), "i32"))
    window = AffineAccess((AxisMap(dim=0, offset="p_s"),), ("3",), parameters=(("p_s", start),),
                          param_guards=("p_s <= 5",))
    assert _count(_rows((window, TensorType((9,), F32)))) is None


def test_a_program_without_loops_is_analysed_without_importing_islpy():
    code = (
        "import sys\n"
        "from tilefoundry.cli.main import main\n"
        f"code = main(['analyze', '--compute-cost', '--memory', '--roofline', {str(PROGRAMS / 'p02_dense_bias_gelu.py') + ':DenseBiasGelu'!r}])\n"
        "assert code == 0, code\n"
        "assert 'islpy' not in sys.modules, 'islpy was imported'\n"
    )
    assert_passes_fresh(code)


# ---------------------------------------------------------------- random relations against isl


def _random_case(rng):
    """(rows, digits by row type): random windows, constants, free axes and
    interval guards over a small box, with random held digits per type."""
    rank = rng.randint(1, 3)
    domain = tuple(str(rng.randint(1, 6)) for _ in range(rank))
    rows, digits = [], {}
    for index in range(rng.randint(1, 3)):
        shape = tuple(rng.randint(1, 8) for _ in range(rng.randint(1, 3)))
        unused = list(range(rank))
        rng.shuffle(unused)
        axes = []
        for _axis in shape:
            pick = rng.random()
            if unused and pick < 0.7:
                axes.append(AxisMap(dim=unused.pop(), offset=rng.randint(-2, 3)))
            elif pick < 0.9:
                axes.append(AxisMap(offset=rng.randint(-1, 8)))
            else:
                axes.append(AxisMap(free=True))
        guards = ()
        if rng.random() < 0.3:
            name = rng.choice([f"i{rng.randrange(rank)}", f"o{rng.randrange(len(shape))}"])
            guards = (f"{rng.randint(0, 2)} <= {name} < {rng.randint(1, 7)}",)
        type_ = TensorType(shape, F32)
        if type_ not in digits:
            digits[type_] = [(a, rng.choice([1, 2]), rng.choice([None, 2, 3]), rng.randint(1, 3))
                             for a in range(len(shape)) if rng.random() < 0.5]
        rows.append((BoundaryRelation(AffineAccess(tuple(axes), domain, guards=guards)), type_,
                     index == 0, index))
    return rows, digits


def _isl_count(monkeypatch, rows, digits, level):
    from types import SimpleNamespace

    def constraints(self, type_, lvl):
        return tuple(traffic.digit_constraint(*digit) for digit in digits[type_])

    monkeypatch.setattr(traffic.BoundaryCounter, "_held_constraints", constraints)
    monkeypatch.setattr(traffic, "box_counts", lambda *a: None)
    counter = traffic.BoundaryCounter(level, ())
    call = SimpleNamespace(op=object(), args=(), type=None)
    counter._boundaries[id(call)] = (call, rows)
    return [[amount for _leaf, _level, amount in charged] for charged in counter.count(call, level)]


def _masks(digits):
    def masks_of(type_, level):
        masks = [None] * len(type_.shape)
        for axis, stride, modulus, limit in digits[type_]:
            mask = box._digit_mask(type_.shape[axis], stride, modulus, limit)
            masks[axis] = mask if masks[axis] is None else masks[axis] & mask
        return masks
    return masks_of


def test_companions_4_3_random_box_relations_count_as_isl_counts(monkeypatch):
    import random

    rng, answered = random.Random(20261203), 0
    for _case in range(150):
        rows, digits = _random_case(rng)
        for level in (None, "cta"):
            counts = box.box_counts(rows, level, _masks(digits))
            if counts is None:
                continue
            answered += 1
            with monkeypatch.context() as patched:
                expected = _isl_count(patched, rows, digits, level)
            assert [[traffic.leaf_bytes(t, n)] for n, (_p, t, _o, _i) in zip(counts, rows)] == expected, \
                (rows, digits, level)
    assert answered >= 100, answered  # most random boxes are answered without isl
