"""Every scenario of PyTorch's test_fr_analysis.py (match_one_event, every collective, the backends, the
BuildDB cases), written as real dumps by benchmarks/fr_trace/scenarios.py, gets the answer the scenario calls for."""
from __future__ import annotations

import pytest
from fr_dumps import expected_of, judge, scenario_module

S = scenario_module()
CASES = [s for s in S.SCENARIOS if s.group == "test_fr_analysis"]


def test_every_scenario_of_the_test_file_is_here():
    names = {s.name for s in CASES}
    assert len([n for n in names if n.startswith("all_events_")]) == 27
    assert len([n for n in names if n.startswith("backend_")]) == 5
    assert len([n for n in names if n.startswith("builddb_")]) == 6
    assert len([n for n in names if n.startswith("match_")]) == 10


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_test_file_scenario(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline
