"""The fault-class case set (tests/data/classes/): well formed like the held-out sets, each case citing the public
thread whose shape it follows, and every case held by one of the class test files."""
from __future__ import annotations

import re
from pathlib import Path

from class_cases import CASES, CLASSES
from wild_cases import check_expectations

TESTS = Path(__file__).resolve().parent.parent


def test_class_cases_are_well_formed():
    check_expectations(list(CASES.values()), CLASSES)
    for name in CASES:
        assert re.search(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+", (CLASSES / name / "SOURCE.md").read_text()), name


def test_every_class_case_is_held_by_a_class_test():
    text = "".join(p.read_text() for p in [*TESTS.glob("sources/test_*.py"), *TESTS.glob("rules/test_*.py")])
    assert not [n for n in CASES if f'"{n}"' not in text]
