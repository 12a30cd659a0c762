"""Round twenty-two's cases (tests/data/classes22/), written from the seventeenth held-out set's misreadings: a hangup
signal (SIGHUP: the session the launcher ran under closed) that ends a job while it prints its progress is a crash from
outside, not a user's reaction to a stall (after a stall signal, the stall stays the story); torch <= 1.7's mp.spawn
raised a bare ``Exception: process N terminated with signal ...``, read as process N's end like the later
ProcessExitedException."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes22")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_a_bare_spawn_exception_is_the_process_end():
    from ncclscope.sources.records import LauncherExit
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = ["Traceback (most recent call last):", '  File "spawn.py", line 105, in join', "    raise Exception(",
             "Exception: process 3 terminated with signal SIGKILL", "Exception: something else went wrong"]
    recs = list(parse_torch_lines(list(enumerate(lines, 1)), "t.log"))
    exits = [r for r in recs if isinstance(r, LauncherExit)]
    assert [(e.rank, e.exitcode) for e in exits] == [(3, -9)]
