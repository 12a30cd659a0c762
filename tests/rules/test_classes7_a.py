"""Round seven's cases (tests/data/classes7/c7a_*): whom a hang names. A rank alone in a collective the others never
issued, or the few ranks shown elsewhere while the rest wait in a group's collective, are the culprits; the Ray
executor's driver missing from its workers' timeouts names no rank."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.rules.hang import odd_one_out
from ncclscope.rules.ray import driver_rank_absent

SET = CaseSet(DATA / "classes7")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes7" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c7a_"))


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_the_odd_side_is_the_culprit_only_when_the_sides_are_uneven():
    alone = odd_one_out({0}, {1, 2, 3})
    assert alone is not None and alone.culprits == (0,)
    few = odd_one_out(set(range(1, 12)), {0})
    assert few is not None and few.culprits == (0,)
    assert odd_one_out({0}, {1}) is None  # two ranks: either may be the one
    assert odd_one_out({0, 1, 2, 3}, {4, 5, 6, 7}) is None  # half and half: other groups, a cut log
    assert odd_one_out({0, 1}, {2, 3, 4}) is None
    assert odd_one_out({0, 1, 2}, set()) is None


def test_the_ray_driver_missing_from_its_workers_timeouts_is_no_culprit():
    workers = [f"(RayWorkerWrapper pid={40 + r}) [rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught"
               for r in (1, 2, 3)]
    assert driver_rank_absent([0], workers)
    assert not driver_rank_absent([2], workers)  # a worker missing is a worker missing
    plain = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught" for r in (1, 2, 3)]
    assert not driver_rank_absent([0], plain)  # torchrun's rank 0 is a rank like the others
