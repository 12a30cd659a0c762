"""The held-out set (tests/data/heldout/, one folder per public thread not cited by tests/data/wild/): logs in the
shapes users paste, checked against tests/data/heldout/EXPECTED.jsonl by the same code as the wild set. It measures
how well fixes made against the wild cases generalise, so it is not tuned against: a case ncclscope reads wrong
carries `known_gap` and runs as a strict xfail."""
from __future__ import annotations

import pytest
from wild_cases import DATA as _DATA
from wild_cases import case_params, check_expectations, thread_urls
from wild_cases import table as wild

HELDOUT = _DATA / "heldout"
CASES = wild.load_expected(HELDOUT)


@pytest.mark.parametrize("want", case_params(CASES))
def test_heldout_case(want):
    got = wild.evaluate(want)
    assert got.problems() == [], f"{want['case']}: " + "; ".join(got.problems())


def test_heldout_expectations_are_well_formed():
    check_expectations(CASES, HELDOUT)


def test_heldout_threads_are_not_cited_by_the_wild_set():
    """A held-out case counts only if its thread is new: no thread cited in tests/data/wild/*/SOURCE.md."""
    overlap = set(thread_urls(HELDOUT)) & set(thread_urls(_DATA / "wild"))
    assert not overlap, overlap


def test_heldout_spread_of_classes():
    faults = [w["fault_class"] for w in CASES]
    assert 30 <= len(CASES) <= 40, len(CASES)
    # desync and degraded: 2 each, since a third case of each left the set when the wild set came to cite its thread
    for fault, least in (("hang", 6), ("config_error", 6), ("desync", 2), ("degraded", 2), ("healthy", 5)):
        assert faults.count(fault) >= least, (fault, faults.count(fault))
    assert sum(faults.count(f) for f in ("crash", "cuda", "oom")) >= 5
    assert faults.count("network") >= 4
