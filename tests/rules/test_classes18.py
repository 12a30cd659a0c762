"""Round eighteen's cases (tests/data/classes18/), written from the fourteenth held-out set's misreadings: mpirun's
``--timestamp-output`` stamp in front of its rank tag is peeled (an nccl-tests output behind it read as nothing); an
nccl-tests output that ends after its preamble (devices, NCCL's release) with no table, or whose sweep stops at a row
with no summary after it, is a possible hang of every rank; pytest's summary of a session whose every test passed ends
its work; vLLM's metrics with requests running and no token made, to the end of the server's output, are a stalled
engine step, where a later metrics line with tokens made is a slow one."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes18")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,rank,body", [
    ("Tue May 14 09:41:07 2024[1,3]<stdout>:[rank3]: hello", 3, "hello"),
    ("Wed Oct  2 14:03:11 2024[1,0]<stdout>:# nThread 1", 0, "# nThread 1"),
    ("Tue May 14 09:41:07 2024 the job started", None, "Tue May 14 09:41:07 2024 the job started"),  # no tag: no stamp
])
def test_mpirun_timestamp_output(line, rank, body):
    from ncclscope.sources.lines import strip_tool_prefixes

    assert strip_tool_prefixes(line) == (rank, body)


@pytest.mark.parametrize("last_row,last_line,failed,exit_known,stopped", [
    (40, 40, False, False, True), (40, 43, False, False, False), (40, 40, True, False, False), (40, 40, False, True, False),
])
def test_a_sweep_that_stops(last_row, last_line, failed, exit_known, stopped):
    from ncclscope.rules.hang import sweep_stopped

    assert sweep_stopped(last_row, last_line, failed, exit_known) is stopped


@pytest.mark.parametrize("summary,done", [
    ("======================= 11 passed, 1 skipped in 41.07s ========================", True),
    ("=== 6 passed, 3 warnings in 52.37s ===", True),
    ("==== 1 failed, 10 passed in 40.11s ====", False),
    ("==== 10 passed, 1 error in 40.11s ====", False),
])
def test_a_test_session_that_passed(summary, done):
    from ncclscope.rules.healthy import work_done

    assert (work_done(summary, False, False, None) is not None) is done
