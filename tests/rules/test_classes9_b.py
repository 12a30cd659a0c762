"""Round nine's cases (tests/data/classes9/c9b_*): a library's or a backend's own check that the ranks called a
collective differently (Accelerate's shape check of a gather, gloo's enforce), in a log with no record of the
collectives, is a desync with no culprit; the world is at least as large as the highest rank a tagged line shows."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes9")
MINE = SET.names("c9b_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_accelerates_shape_check_is_a_mismatch_kind():
    from ncclscope.rules.exits import FailureKind, failure_kind

    text = ("accelerate.utils.operations.DistributedOperationException: Cannot apply desired operation due to shape "
            "mismatches. All shapes across devices must be valid.")
    assert failure_kind(text) is FailureKind.MISMATCH
