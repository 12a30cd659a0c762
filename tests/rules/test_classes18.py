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


def _judge_text(tmp_path, name, text):
    from ncclscope.analysis import analyze_paths

    (tmp_path / name).write_text(text)
    return analyze_paths([tmp_path / name], cache=False).decision


def test_a_ctrl_c_after_progress_is_no_stall(tmp_path):
    """A server that answered requests, then the user's ^C: the user's way to end it, not a stopped stall."""
    text = ("INFO:     Application startup complete.\n"
            'INFO:     10.0.0.5:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
            'INFO:     10.0.0.5:51236 - "POST /v1/completions HTTP/1.1" 200 OK\n'
            "^C\nINFO:     Shutting down\n")
    assert _judge_text(tmp_path, "server.log", text).verdict.value != "hang"


def test_a_clean_up_during_init_is_no_healthy_end(tmp_path):
    text = ("n1:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
            "n1:1001:1001 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
            "n1:1001:1001 [0] init.cc:2157 NCCL WARN commReclaim: cleanup comm 0x55d01e2a7c40 rank 0 failed in "
            "destroy/abort, error 3\n")
    assert _judge_text(tmp_path, "rank0.log", text).verdict.value != "healthy"


@pytest.mark.parametrize("line,stall", [
    ("Server not ready after 5s, retrying...", False),
    ("server not ready after 60 s (attempt 3/10)", False),
    ("ERROR: server did not become ready within 1200 s", True),
])
def test_a_wait_that_goes_on_is_no_giving_up(line, stall):
    from ncclscope.sources.framework_lines import framework_line
    from ncclscope.sources.records import FrameworkStall

    assert any(isinstance(r, FrameworkStall) for r in framework_line("f", 1, line, line, None)) is stall


@pytest.mark.parametrize("last,done", [
    ("[rank0]: epoch 1/3 step 500/500 loss 0.512", False),  # the epochs are not done
    ("=== 0 passed, 5 deselected in 0.10s ===", False),  # no test ran
])
def test_a_counter_at_its_end_beside_one_that_is_not(last, done):
    from ncclscope.rules.healthy import work_done

    assert (work_done(last, False, False, None) is not None) is done


def test_a_word_after_the_comms_table_ends_it():
    from ncclscope.sources.ds_comms import CommSummaryReader

    r = CommSummaryReader("f")
    lines = ["Comm. Op   Message Size   Count   Total Latency(ms)   Avg Latency(ms)   tput_avg (Gbps)   busbw_avg (Gbps)",
             "all_reduce", "    64.0 MB   10   100.0   10.0   50.0   87.5", "finished"]
    assert [r.read(i, t, t, None)[0] for i, t in enumerate(lines, 1)] == [True, True, True, False]


def test_a_long_run_of_equals_signs_is_read_in_linear_time():
    from ncclscope.sources.torch_log import PROGRESS_RE

    assert PROGRESS_RE.search("passed " + "=" * 200_000) is None  # (quadratic before: seconds)
