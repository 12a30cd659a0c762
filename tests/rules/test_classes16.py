"""Round sixteen's cases (tests/data/classes16/), written from the held-out sets' remaining misreadings: an
all-to-all on which every rank's watchdog timed out, the ranks' totals taking two values with one held by most of
them, is one call made two ways (a desync naming the minority), where totals that each rank has its own of (a
mixture-of-experts' routing) stay a hang; a timeout line that names no group takes the group of the rank's status
line at that number."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes16")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("sizes,sided", [
    ((8, 8, 8, 4), True),  # one odd total: a desync
    ((8, 8, 0, 0, 8, 8), True),  # two empty ranks against four
    ((8, 8, 4, 4), False),  # two against two: no majority, uneven splits maybe
    ((7, 9, 8, 6), False),  # a total each: routing
    ((8, 4), False),  # two ranks: nothing to weigh
])
def test_all_to_all_sizes(sizes, sided):
    from ncclscope.rules.desync import TimedOut, watchdog_mismatch

    hit = watchdog_mismatch(TimedOut(r, "3", 9, "alltoall_base", n) for r, n in enumerate(sizes))
    assert (hit is not None) is sided
    if hit:
        assert hit[:2] == ("3", 9) and len(hit[2]) == 2
