"""The second held-out set (tests/data/heldout2/, one folder per public thread cited neither by tests/data/wild/ nor
by tests/data/heldout/): logs in the shapes users paste, checked against tests/data/heldout2/EXPECTED.jsonl by the
same code as the wild set. Its expectations come from the threads and its known gaps were recorded against a frozen
revision of the analysis, so that it measures how well fixes generalise; it is not tuned against. A case ncclscope
reads wrong carries `known_gap` and runs as a strict xfail."""
from __future__ import annotations

import pytest
from wild_cases import DATA as _DATA
from wild_cases import case_params, check_expectations, thread_urls
from wild_cases import table as wild

HELDOUT2 = _DATA / "heldout2"
CASES = wild.load_expected(HELDOUT2)


@pytest.mark.parametrize("want", case_params(CASES))
def test_heldout2_case(want):
    got = wild.evaluate(want)
    assert got.problems() == [], f"{want['case']}: " + "; ".join(got.problems())


def test_heldout2_expectations_are_well_formed():
    check_expectations(CASES, HELDOUT2)


def test_heldout2_cites_one_thread_per_case():
    urls = thread_urls(HELDOUT2)
    assert len(urls) == len(CASES), "each case cites exactly one thread, and no two cases share one"


@pytest.mark.parametrize("other", ["wild", "heldout"])
def test_heldout2_threads_are_new(other):
    """A case counts only if its thread is cited by neither the wild set nor the first held-out set."""
    overlap = set(thread_urls(HELDOUT2)) & set(thread_urls(_DATA / other))
    assert not overlap, overlap


def test_heldout2_spread_of_classes():
    faults = [w["fault_class"] for w in CASES]
    assert 25 <= len(CASES) <= 30, len(CASES)
    for fault, least in (("hang", 5), ("config_error", 5), ("desync", 2), ("degraded", 2), ("healthy", 3), ("network", 3)):
        assert faults.count(fault) >= least, (fault, faults.count(fault))
    assert sum(faults.count(f) for f in ("crash", "cuda", "oom")) >= 4
    assert len({w["launcher"] for w in CASES}) >= 8
