"""The second held-out set (tests/data/heldout2/, one folder per public thread cited neither by tests/data/wild/ nor
by tests/data/heldout/): logs in the shapes users paste, checked against tests/data/heldout2/EXPECTED.jsonl by the
same code as the wild set. Its expectations come from the threads and its known gaps were recorded against a frozen
revision of the analysis, so that it measures how well fixes generalise; it is not tuned against. A case ncclscope
reads wrong carries `known_gap` and runs as a strict xfail."""
from __future__ import annotations

from pathlib import Path

import pytest
from wild_cases import DATA as _DATA
from wild_cases import VERDICTS, case_params
from wild_cases import table as wild

HELDOUT2 = _DATA / "heldout2"
CASES = wild.load_expected(HELDOUT2)
FAULTS = {"healthy", "degraded", "hang", "desync", "crash", "cuda", "oom", "config_error", "network"}


@pytest.mark.parametrize("want", case_params(CASES))
def test_heldout2_case(want):
    got = wild.evaluate(want)
    assert got.problems() == [], f"{want['case']}: " + "; ".join(got.problems())


def test_heldout2_expectations_are_well_formed():
    names = [w["case"] for w in CASES]
    assert len(names) == len(set(names)), "a case is listed twice"
    folders = {p.name for p in HELDOUT2.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders == set(names), f"folders without a line: {folders - set(names)}; lines without a folder: {set(names) - folders}"
    for w in CASES:
        assert w["verdict"] in VERDICTS, w["case"]
        assert w["fault_class"] in FAULTS, w["case"]
        assert {"nccl_release", "launcher", "facts", "culprit_ranks", "fault_class", "known_gap"} <= set(w), w["case"]
        assert (HELDOUT2 / w["case"] / "SOURCE.md").is_file(), w["case"]
        assert wild.case_inputs(w["case"], HELDOUT2), w["case"]
        assert w["known_gap"] is None or (isinstance(w["known_gap"], str) and w["known_gap"].strip()), w["case"]
        assert all(isinstance(r, int) and r >= 0 for r in w["culprit_ranks"]), w["case"]


def _thread_urls(root: Path) -> dict[str, str]:
    out = {}
    for src in root.glob("*/SOURCE.md"):
        for word in src.read_text().split():
            if word.startswith("https://github.com/"):
                out[word.rstrip(").,>")] = src.parent.name
    return out


def test_heldout2_cites_one_thread_per_case():
    urls = _thread_urls(HELDOUT2)
    assert len(urls) == len(CASES), "each case cites exactly one thread, and no two cases share one"


@pytest.mark.parametrize("other", ["wild", "heldout"])
def test_heldout2_threads_are_new(other):
    """A case counts only if its thread is cited by neither the wild set nor the first held-out set."""
    overlap = set(_thread_urls(HELDOUT2)) & set(_thread_urls(_DATA / other))
    assert not overlap, overlap


def test_heldout2_spread_of_classes():
    faults = [w["fault_class"] for w in CASES]
    assert 25 <= len(CASES) <= 30, len(CASES)
    for fault, least in (("hang", 5), ("config_error", 5), ("desync", 2), ("degraded", 2), ("healthy", 3), ("network", 3)):
        assert faults.count(fault) >= least, (fault, faults.count(fault))
    assert sum(faults.count(f) for f in ("crash", "cuda", "oom")) >= 4
    assert len({w["launcher"] for w in CASES}) >= 8
