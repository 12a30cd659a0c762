"""The second fault-class case set (tests/data/classes3/): well formed like the held-out sets, each case citing the
public threads whose shape it follows, none of them a thread a held-out set cites (those are scored blind), and every
case held by one of the class test files."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from classes3_cases import CASES, CLASSES3
from wild_cases import DATA, check_expectations

TESTS = Path(__file__).resolve().parent.parent
THREAD_RE = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")


def test_classes3_cases_are_well_formed():
    check_expectations(list(CASES.values()), CLASSES3)
    for name in CASES:
        assert THREAD_RE.search((CLASSES3 / name / "SOURCE.md").read_text()), name


@pytest.mark.parametrize("other", ["heldout3", "heldout4"])
def test_classes3_cite_no_thread_a_blind_set_cites(other):
    """Compared by address only (the blind sets' logs are not read): an overlap is named by the class case's folder."""
    ours = {m.group(0): p.parent.name for p in CLASSES3.glob("*/SOURCE.md") for m in THREAD_RE.finditer(p.read_text())}
    theirs = {m.group(0) for p in (DATA / other).glob("*/SOURCE.md") for m in THREAD_RE.finditer(p.read_text())}
    assert not [ours[u] for u in ours if u in theirs]


def test_every_classes3_case_is_held_by_a_class_test():
    text = "".join(p.read_text() for p in [*TESTS.glob("sources/test_*.py"), *TESTS.glob("rules/test_*.py"),
                                           *TESTS.glob("nccl/test_*.py")])
    assert not [n for n in CASES if f'"{n}"' not in text]
