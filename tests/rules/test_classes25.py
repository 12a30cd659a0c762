"""Round twenty-five's cases (tests/data/classes25/), written from the nineteenth held-out set's misreadings: the
program's own per-rank prints ending with a minority of ranks a print or two short of the rest, who all made as many,
is a possible hang with those ranks behind (``rules.hang.behind_the_rest``); c10d's own warnings that a read from the
TCP store timed out (``waitForInput: socket ... timed out after Nms``), with no progress after them, are a hang at that
wait; more workers at init_process_group's store-based barrier than the world is a config error of the launch; a print
that the call it names is over (``destroy_process_group done``) is no wait; a poster's note set apart in the paste that
the output stopped there (``(no further output for 40+ minutes)``, ``<hangs here>``) is a hang at that point; a script's
``[N] done`` (a rank of up to three digits in brackets) is that rank's end."""
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


def test_a_print_of_a_call_that_returned_is_no_wait():
    from ncclscope.sources.tool_lines import progress_wait

    assert progress_wait("rank 0: calling barrier", "f", 1, "rank 0: calling barrier", None) is not None
    for done in ("rank 0: destroy_process_group done", "rank 3: destroying process group... finished",
                 "rank 1: entering barrier returned"):
        assert progress_wait(done, "f", 1, done, None) is None, done


def test_a_posters_note_of_a_stall_is_read_only_set_apart():
    from ncclscope.sources.tool_lines import NOTE_OPENERS, STALL_NOTE_RE

    def noted(t: str) -> bool:
        return t[:1] in NOTE_OPENERS and STALL_NOTE_RE.search(t) is not None

    assert noted("(no further output for 40+ minutes)") and noted("<hangs here>") and noted("# stuck here forever")
    assert not noted("no more output from the job") and not noted("# the second run, after the fix")
