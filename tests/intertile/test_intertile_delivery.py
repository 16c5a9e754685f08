"""intertile/delivery.py: a classified relayout (seed §7) written as KTIR text,
verified from the text read back, and executed; folds of seed §4–§5."""
from __future__ import annotations

from tilefoundry.intertile.classify import classify_tables
from tilefoundry.intertile.delivery import (affine_family, check_text, ktir_text,
                                            plan_delivery, reproduces_destination)
from tilefoundry.intertile.model import Delivery, ExplicitFamily, Produce, TensorType, resolve
from tilefoundry.intertile.tables import parse_tables


def _tiles(aset, groups):
    found = resolve(Produce(aset if not isinstance(aset, dict) else ExplicitFamily(aset),
                            tuple(range(groups)), (TensorType((1,)),)),
                    Delivery("consume", ExplicitFamily({})))
    return found.producers


def test_affine_family_fits_strided_and_two_digit_groups_exactly():
    """kt06's groups {g, g+8, g+16, g+24} (stride 8), and groups whose base is
    two-digit in g (g = 2a + b -> 16a + b): the fitted set enumerates back to the
    table; a table with different offsets per group has no such set."""
    from tilefoundry.intertile.model import AffineFamily

    strided = {g: (g, g + 8, g + 16, g + 24) for g in range(8)}
    two_digit = {g: (16 * (g // 2) + (g % 2), 16 * (g // 2) + (g % 2) + 4) for g in range(4)}
    for table in (strided, two_digit):
        aset = affine_family(table)
        assert aset is not None
        assert _tiles(AffineFamily(aset), len(table)) == table
    assert affine_family({0: (0, 1), 1: (2, 5)}) is None


def test_moved_partial_contributions_are_a_consume_not_a_fold():
    """Partial contributions on cores 0..3 moved whole to cores 4..7 (the partial
    axis unchanged): row 1 consume, no combiner; executing it gives core 4 + k
    contribution k."""
    src = {str(c): {"partial": c} for c in range(4)}
    dst = {str(c + 4): {"partial": c} for c in range(4)}
    tables = parse_tables({"cores": 8, "tensor": {"d0": 8, "partial": 4},
                           "source": src, "destination": dst})
    plan = plan_delivery(tables, classify_tables(tables), "sum")
    assert (plan.kind, plan.reduction, plan.partial) == ("consume", None, (8,))
    text = ktir_text(plan)
    diagnostics, produce, delivery = check_text(text, tables.cores)
    assert diagnostics == [] and "combiner" not in text and "identity" not in text
    assert reproduces_destination(tables, plan, produce, delivery)


def test_completed_partial_that_also_gathers_is_two_ops():
    """Partial on 2 holders of each of 2 row blocks, completed to the whole tensor
    on every core: the fold would also concatenate d0 — a reduce then a gather,
    refused by name."""
    import pytest
    from tilefoundry.errors import VerifyError

    src = {str(c): {"d0": c // 2, "partial": c % 2} for c in range(4)}
    dst = {str(c): {} for c in range(4)}
    tables = parse_tables({"cores": 4, "tensor": {"d0": 4, "partial": 2},
                           "source": src, "destination": dst})
    with pytest.raises(VerifyError, match="reduce followed by a gather"):
        plan_delivery(tables, classify_tables(tables), "sum")
