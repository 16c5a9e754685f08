"""analysis §1.2.2: a domain that cannot fit, cannot be expressed, or does not
settle in time raises AnalysisError saying which of the three happened; a
packing settles it with the packer's status."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tilefoundry.analysis.memory import allocation
from tilefoundry.packing import PackingResult
from tilefoundry.errors import AnalysisError

HIERARCHY = SimpleNamespace(explicit_levels=[SimpleNamespace(name="smem", capacity_bytes=8, owner="cta")])
# two 4-byte buffers over [0,2) and [2,4), one 4-byte over [0,4): 12 bytes in
# all but at most 8 live at once, so neither shortcut applies
LIFETIMES = [SimpleNamespace(level="smem", binding=f"v{k}:1", bytes=4, defined_at=a, last_used_at=z)
             for k, (a, z) in enumerate([(0, 1), (2, 3), (0, 3)])]


def _settle():
    return allocation.settle_allocation(LIFETIMES, (), HIERARCHY, "cta", (), ())


def test_1_2_2_a_searched_domain_records_the_packer_status():
    assert _settle().solver_status == "optimal"


@pytest.mark.parametrize("status, says", [
    ("infeasible", "no arrangement of this program's 'smem' buffers fits within the 8 B"),
    ("invalid", "the 'smem' placement cannot be expressed as a packing"),
    ("timeout", "the 'smem' placement did not settle within its time limit"),
])
def test_1_2_2_three_distinct_refusals(status, says, monkeypatch):
    monkeypatch.setattr(allocation, "solve_packing",
                        lambda buffers, capacity: PackingResult(status, True))
    with pytest.raises(AnalysisError, match=f"^{says}"):
        _settle()
