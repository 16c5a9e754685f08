"""Issue 11 item 3 and issue 22, the fuzz suite: mutated DSL programs, KTIR
text, relayout tables, command lines, buffer CSVs, output paths, environment
settings, semantically mutated golden programs and zoo files, and issue 41's
damaged hardware documents, diff command lines, damaged checkpoint directories
and place runs keep the promise (exit 0, or exit 1/2 with one clean stderr line; no traceback, no
internal error, no hang, no memory blow-up). Bounded for CI: derandomized, a
fixed number of examples per campaign; bench/fuzz.py runs the long campaign
(>= 5,000 cases each)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.campaign import CAMPAIGNS, run_case

EXAMPLES = {"dsl": 100, "ktir": 120, "tables": 160, "cli": 160,
            "pack": 60, "outputs": 40, "env": 60, "semantic": 30,
            "targets": 60, "diff": 40, "checkpoints": 12, "place": 20, "sweep": 60}
#: kinds issue 41's campaign found in rooms other than the campaign's owner's,
#: reported there and open: a case of one of these kinds is not this test's
#: failure, any other kind is (remove a line when its room fixes the kind)
OPEN: set = set()  # every kind the campaigns found is fixed in its room


@pytest.mark.parametrize("campaign", sorted(CAMPAIGNS))
def test_fuzz_campaign_keeps_the_promise(campaign, tmp_path_factory):
    work = tmp_path_factory.mktemp(campaign)

    @settings(max_examples=EXAMPLES[campaign], deadline=None, derandomize=True,
              database=None, suppress_health_check=list(HealthCheck))
    @given(seed=st.integers(min_value=0, max_value=2 ** 32 - 1))
    def case(seed):
        verdict = run_case(campaign, seed, work)
        assert verdict.outcome != "failure" or (campaign, verdict.kind) in OPEN, (campaign, seed, verdict)

    case()
