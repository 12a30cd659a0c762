"""Round nine's cases (tests/data/classes9/c9c_*): a script's own print of its rank and the world's size ("rank 2 of
4", "[rank 0/8]", "rank: 1, world_size: 4") gives the world size, stated once per rank however often it repeats."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes9")
MINE = SET.names("c9c_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,want", [
    ("Rank 2 of 4.", (2, 4)), ("hello from rank 3/8", (3, 8)), ("rank: 1, world_size: 4", (1, 4)),
    ("RANK=0 WORLD_SIZE=8", (0, 8)), ("Initializing rank 1 of 2 processes", (1, 2)),
    ("rank 0 step 3/10", None), ("[rank1]: epoch 3/4", None), ("Rank 5 of 4", None), ("rank 3/8/2", None),
    ("GLOBAL_RANK: 0, MEMBER: 1/4", None),
])
def test_a_scripts_rank_of_world_print(line, want):
    from ncclscope.sources.program_facts import rank_of_world

    assert rank_of_world(line) == want


def test_a_repeated_print_states_the_world_once_per_rank():
    from ncclscope.sources.records import WorldSize
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = [f"[rank {r}/4] step {s} loss 1.{s}" for s in range(50) for r in range(4)]
    worlds = [x for x in parse_torch_lines(enumerate(lines, 1), "train.log") if isinstance(x, WorldSize)]
    assert sorted((w.rank, w.world_size) for w in worlds) == [(r, 4) for r in range(4)]
