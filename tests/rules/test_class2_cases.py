"""The second fault-class case set (tests/data/classes2/): well formed like the held-out sets, each case citing a public
thread that no other set cites (the held-out sets are scored blind: their threads stay theirs), and every case held by
one of the class test files."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from class2_cases import CASES, CLASSES2
from wild_cases import DATA, check_expectations, thread_urls

TESTS = Path(__file__).resolve().parent.parent


def test_class2_cases_are_well_formed():
    check_expectations(list(CASES.values()), CLASSES2)
    for name in CASES:
        assert re.search(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+", (CLASSES2 / name / "SOURCE.md").read_text()), name


def test_class2_cases_cite_one_thread_each():
    assert len(thread_urls(CLASSES2)) == len(CASES)


@pytest.mark.parametrize("other", ["wild", "heldout", "heldout2", "heldout3", "heldout4", "classes"])
def test_class2_threads_are_cited_by_no_other_set(other):
    if not (DATA / other).is_dir():
        pytest.skip(f"no {other} set here")
    overlap = set(thread_urls(CLASSES2)) & set(thread_urls(DATA / other))
    assert not overlap, overlap


def test_every_class2_case_is_held_by_a_class_test():
    text = "".join(p.read_text() for p in [*TESTS.glob("sources/test_*.py"), *TESTS.glob("rules/test_*.py")])
    assert not [n for n in CASES if f'"{n}"' not in text]
