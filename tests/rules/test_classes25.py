"""Round twenty-five's cases (tests/data/classes25/), written from the nineteenth held-out set's misreadings: the
program's own per-rank prints ending with a minority of ranks a print or two short of the rest, who all made as many,
is a possible hang with those ranks behind (``rules.hang.behind_the_rest``); c10d's own warnings that a read from the
TCP store timed out (``waitForInput: socket ... timed out after Nms``), with no progress after them, are a hang at that
wait; more workers at init_process_group's store-based barrier than the world is a config error of the launch."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes25")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_a_minority_a_print_or_two_behind_is_named():
    from ncclscope.rules.hang import behind_the_rest

    assert behind_the_rest({0: 18, 1: 18, 2: 17, 3: 18}, True, False, False).culprits == (2,)
    assert behind_the_rest({0: 18, 1: 18, 2: 17, 3: 18}, False, False, False) is None  # the prints do not end the log
    assert behind_the_rest({0: 18, 1: 18, 2: 17, 3: 18}, True, True, False) is None  # something failed
    assert behind_the_rest({0: 18, 1: 17, 2: 17, 3: 18}, True, False, False) is None  # half behind: no minority
    assert behind_the_rest({0: 18, 1: 18, 2: 9, 3: 18}, True, False, False) is None  # far behind: prints otherwise
    assert behind_the_rest({0: 3, 1: 2}, True, False, False) is None  # two ranks


def test_store_read_timeouts_are_read_as_a_wait_that_ran_out():
    from ncclscope.sources.records import StoreSocket
    from ncclscope.sources.torch_log import C10D_WHAT

    line = "waitForInput: socket SocketImpl(fd=6, addr=[h]:5, remote=[m]:29500) timed out after 1800000ms"
    assert next(w for w, r in C10D_WHAT if r.search(line)) is StoreSocket.WAIT_TIMEOUT
