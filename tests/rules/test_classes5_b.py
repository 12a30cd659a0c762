"""Round five's cases (tests/data/classes5/c5b_*): whom an out-of-memory failure blames (the ranks whose lines show
the OOM when others only wait on them, none when every rank seen failed alike, the one rank of an unranked OOM that
is not waiting), a worker SIGKILLed from outside (the host's OOM killer: no rank's code), and torchrun's summary cut
to its last fields still read."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from ncclscope.rules.cause import Cause, CauseVerdict, Failure, host_killed, lone_unwaiting_rank, root_cause
from ncclscope.rules.exits import FailureKind
from ncclscope.sources.torch_log import parse_torch_lines
from wild_cases import DATA

SET = CaseSet(DATA / "classes5")
MINE = SET.names("c5b_")
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {g} has a total capacity of 79 GiB"


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _oom(rank: int | None, line: int, gpu: int = 0) -> Failure:
    return Failure(rank, FailureKind.OOM, OOM.format(g=gpu), None, ("run.log", line))


def _waits(rank: int, line: int) -> Failure:
    return Failure(rank, FailureKind.TIMEOUT, f"[Rank {rank}] Watchdog caught collective operation timeout", None,
                   ("run.log", line))


def test_untimed_ooms_name_every_rank_that_ran_out_when_others_wait_and_none_when_none_waits():
    stage = root_cause([_oom(2, 10, 2), _oom(0, 20), _waits(3, 30), _waits(1, 31)])
    assert stage is not None and stage.verdict == CauseVerdict.CRASH and stage.culprits == (0, 2)
    alike = root_cause([_oom(2, 10, 2), _oom(0, 20), _oom(1, 25, 1)])
    assert alike is not None and alike.verdict == CauseVerdict.CRASH and alike.culprits == ()
    one = root_cause([_oom(2, 10, 2), _waits(3, 30)])  # a lone OOM keeps its rank
    assert one is not None and one.culprits == (2,)


def test_unranked_oom_is_the_one_rank_not_waiting_only_when_its_device_agrees():
    def cause(gpu: int, waiting: list[int]) -> Cause:
        c = root_cause([_oom(None, 5, gpu)] + [_waits(r, 10 + r) for r in waiting])
        assert c is not None
        return c

    assert lone_unwaiting_rank(cause(1, [0, 2, 3]), 4) == 1
    assert lone_unwaiting_rank(cause(2, [0, 2, 3]), 4) is None  # the device is a waiting rank's
    assert lone_unwaiting_rank(cause(1, [0, 3]), 4) is None  # rank 2 is not seen at all
    assert lone_unwaiting_rank(cause(1, [0, 2, 3]), None) is None


def test_sigkill_from_outside_names_none_but_the_launchers_own_stop_and_other_signals_are_not_it():
    assert host_killed(Failure(1, FailureKind.FATAL, "exit code -9", None, ("", -1), -9))
    assert not host_killed(Failure(1, FailureKind.FATAL, "exit code -11", None, ("", -1), -11))
    assert not host_killed(Failure(1, FailureKind.KILLED, "exit code -9", None, ("", -1), -9))
    c = root_cause([Failure(1, FailureKind.FATAL, "exit code -9", None, ("", -1), -9)])
    assert c is not None and c.verdict == CauseVerdict.CRASH and c.ranks == (1,) and c.culprits == ()


def test_a_summary_cut_to_its_exitcode_field_is_read_but_a_bare_exitcode_line_is_not():
    cut = list(parse_torch_lines(enumerate(["  exitcode  : -9 (pid: 4121)", "  error_file: <N/A>",
                                            "  traceback : Signal 9 (SIGKILL) received by PID 4121"], 1), "f"))
    assert [getattr(r, "exitcode", None) for r in cut] == [-9]
    assert list(parse_torch_lines(enumerate(["exitcode: -9", "Signal 9 (SIGKILL)"], 1), "f")) == []


def test_a_unique_id_wait_whose_error_text_was_cut_is_a_wait_but_a_lost_store_is_not():
    from ncclscope.rules.hang import unique_id_wait

    head = ("[9] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key "
            "'0:1', but store->get('0:1') got error:")
    assert unique_id_wait(head) is not None and unique_id_wait(head + " wait") is not None
    assert unique_id_wait(head + " wait timeout after 600000ms") is not None
    assert unique_id_wait(head + " Connection reset by peer") is None


def test_vllm_engine_dead_is_an_echo_of_the_engine_not_a_cause():
    from ncclscope.rules.exits import failure_kind

    dead = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above)"
    assert failure_kind(dead) is FailureKind.PEER
    assert failure_kind("RuntimeError: EngineCore failed to start") is FailureKind.EXCEPTION


def test_a_command_quoted_in_advice_states_no_world_and_the_pid_logger_head_is_peeled():
    from ncclscope.sources.framework_lines import framework_line
    from ncclscope.sources.lines import split_tool_prefixes

    advice = ("Entering DeepGEMM JIT Pre-Compile session. It is recommended to run `sglang.compile_deep_gemm` with same "
              "args as `sglang.launch_server`. For example: `python3 -m sglang.compile_deep_gemm --model m --tp 8`")
    assert [type(r).__name__ for r in framework_line("f", 1, advice, advice, None)] == []
    cmd = "python3 -m sglang.launch_server --model m --tp 8"
    assert [getattr(r, "world_size", None) for r in framework_line("f", 1, cmd, cmd, None)][:1] == [8]
    line = "2025-03-01 10:00:00 ERROR 4411 [ DP2 TP2 EP2 scheduler.py:2655] torch.distributed.DistBackendError: x"
    assert split_tool_prefixes(line)[2] == "torch.distributed.DistBackendError: x"
    assert split_tool_prefixes("ERROR 4411 is not a head [x]")[2] == "ERROR 4411 is not a head [x]"


def test_a_print_that_a_rank_goes_into_a_collective_is_read_as_its_wait():
    from ncclscope.sources.tool_lines import progress_wait

    def who(line: str) -> int | None:
        w = progress_wait(line, "f", 1, line, None)
        return w.rank if w is not None else None

    assert who("Rank 2: launching ncclAllReduce, iteration 0") == 2
    assert who("[rank 1] communicator ready, starting alltoall warm-up") == 1
    assert who("[rank 1] starting epoch 3") is None  # no collective named
    assert who("Rank 0: finished allreduce in 2.1 ms") is None


def test_accelerate_launch_gives_the_world_and_its_default_note_the_nodes():
    def facts(lines: list[str]) -> list[tuple[str, int]]:
        out = []
        for r in parse_torch_lines(enumerate(lines, 1), "f"):
            if type(r).__name__ == "LaunchedTasks":
                out.append(("tasks", r.count))
            elif type(r).__name__ == "NodeCount":
                out.append(("nodes", r.nnodes))
        return out

    assert facts(["$ accelerate launch --multi_gpu --num_machines 2 --num_processes 16 t.py"]) == [
        ("nodes", 2), ("tasks", 16)]
    assert facts(["accelerate launch --num_processes=4 t.py", "\t`--num_machines` was set to a value of `1`"]) == [
        ("tasks", 4), ("nodes", 1)]
    assert facts(["accelerate config --num_processes 4"]) == []
