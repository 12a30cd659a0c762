"""A job stopped from outside before its ranks finished (the user's Ctrl-C, a scheduler's time limit or cancel), with
nothing of its own failing first, is a likely hang; the same stop after a failure of its own stays that failure, after
a stall the stall's hang, and a preemption is not a hang."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict
from ncclscope.rules.cause import Failure
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.stopped import stopped_unfinished
from ncclscope.sources.records import JobCancelled
from ncclscope.sources.torch_log import parse_torch_lines

INIT = """\
gpu-a07:40211:40211 [0] NCCL INFO Bootstrap : Using ib0:10.3.1.7<0>
NCCL version 2.21.5+cuda12.4
gpu-a07:40211:40280 [0] NCCL INFO comm 0x5581 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xab12cd34 - Init START
gpu-a07:40212:40281 [1] NCCL INFO comm 0x5582 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 1c000 commId 0xab12cd34 - Init START
gpu-a08:51002:51070 [0] NCCL INFO comm 0x5583 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xab12cd34 - Init START
gpu-a08:51003:51071 [1] NCCL INFO comm 0x5584 rank 3 nranks 4 cudaDev 1 nvmlDev 1 busId 1c000 commId 0xab12cd34 - Init START
gpu-a07:40211:40280 [0] NCCL INFO comm 0x5581 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xab12cd34 - Init COMPLETE
gpu-a07:40212:40281 [1] NCCL INFO comm 0x5582 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 1c000 commId 0xab12cd34 - Init COMPLETE
gpu-a08:51002:51070 [0] NCCL INFO comm 0x5583 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xab12cd34 - Init COMPLETE
gpu-a08:51003:51071 [1] NCCL INFO comm 0x5584 rank 3 nranks 4 cudaDev 1 nvmlDev 1 busId 1c000 commId 0xab12cd34 - Init COMPLETE
0: epoch 0 step 0 loss 6.9071
"""

TIME_LIMIT = """\
srun: Job step aborted: Waiting up to 32 seconds for job step to finish.
slurmstepd: error: *** JOB 881234 ON gpu-a07 CANCELLED AT 2025-03-02T04:00:12 DUE TO TIME LIMIT ***
slurmstepd: error: *** STEP 881234.0 ON gpu-a07 CANCELLED AT 2025-03-02T04:00:12 DUE TO TIME LIMIT ***
"""

CTRL_C = """\
^CW0302 04:00:12.118000 139881 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGINT death \
signal, shutting down workers
W0302 04:00:12.119000 139881 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 40211 closing signal SIGINT
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/train.py", line 88, in <module>
[rank1]:     dist.all_reduce(loss)
[rank1]: KeyboardInterrupt
"""

OOM_FIRST = """\
[rank2]: Traceback (most recent call last):
[rank2]:   File "/srv/train.py", line 80, in <module>
[rank2]:     loss.backward()
[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB
"""

TIMEOUT_FIRST = """\
[rank0]:[E302 03:30:11.123456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds \
before timing out.
"""

SRUN_CTRL_C = """\
srun: interrupt (one more within 1 sec to abort)
srun: StepId=881234.0 tasks 0-3: running
srun: sending Ctrl-C to StepId=881234.0
srun: forcing job termination
"""

DEEPSPEED_CTRL_C = """\
^C[2024-03-02 04:00:12,118] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 40211
[2024-03-02 04:00:12,420] [INFO] [launch.py:324:sigkill_handler] Main process received SIGINT, exiting
"""

MPIRUN_CTRL_C = """\
^Cmpirun: Forwarding signal 2 to job
mpirun noticed that process rank 0 with PID 40211 on node gpu-a07 exited on signal 2 (Interrupt).
"""

TORCHRUN_SIGTERM = """\
W0302 04:00:12.118000 139881 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM death signal, \
shutting down workers
torch.distributed.elastic.multiprocessing.api.SignalException: Process 139881 got signal: 15
"""

PREEMPTED = "slurmstepd: error: *** JOB 881234 ON gpu-a07 CANCELLED AT 2025-03-02T04:00:12 DUE TO PREEMPTION ***\n"

FINISHED = """\
0: epoch 0 step 100 loss 2.1033
0: training finished
"""


def _analyze(tmp_path: Path, text: str):
    p = tmp_path / "job.log"
    p.write_text(text)
    return analyze_paths([p], cache=False)


@pytest.mark.parametrize("ending", [TIME_LIMIT, CTRL_C, "2: " + TIME_LIMIT.splitlines()[1] + "\n", SRUN_CTRL_C,
                                    DEEPSPEED_CTRL_C, MPIRUN_CTRL_C, TORCHRUN_SIGTERM],
                         ids=["slurm-time-limit", "torchrun-ctrl-c", "labelled-cancel-line", "srun-ctrl-c",
                              "deepspeed-ctrl-c", "mpirun-ctrl-c", "torchrun-sigterm"])
def test_stopped_after_init_is_a_likely_hang(tmp_path: Path, ending: str) -> None:
    a = _analyze(tmp_path, INIT + ending)
    assert a.decision.verdict == Verdict.HANG
    assert a.decision.culprit_ranks == ()
    assert a.decision.certainty == "likely"
    f = next(f for f in a.findings if f.data.get("class") == "stopped")
    assert f.data["waiting"] == [0, 1, 2, 3]


def test_time_limit_is_named(tmp_path: Path) -> None:
    a = _analyze(tmp_path, INIT + TIME_LIMIT)
    assert "time limit" in a.decision.headline


@pytest.mark.parametrize("first, verdict", [(OOM_FIRST, Verdict.CRASH), (TIMEOUT_FIRST, Verdict.HANG)],
                         ids=["oom-then-cancel", "timeout-then-cancel"])
def test_a_failure_or_stall_before_the_stop_keeps_its_story(tmp_path: Path, first: str, verdict: Verdict) -> None:
    a = _analyze(tmp_path, INIT + first + TIME_LIMIT)
    assert a.decision.verdict == verdict
    assert not any(f.data.get("class") == "stopped" for f in a.findings)


def test_preemption_is_not_a_hang(tmp_path: Path) -> None:
    a = _analyze(tmp_path, INIT + PREEMPTED)
    assert a.decision.verdict != Verdict.HANG


def test_a_run_not_stopped_stays_as_it_was(tmp_path: Path) -> None:
    a = _analyze(tmp_path, INIT + FINISHED)
    assert a.decision.verdict != Verdict.HANG


def test_slurm_cancel_record_glued_behind_a_progress_bar() -> None:
    line = ("Preparing test set...:  46%|####6     | 31/67 [29:02<35:12, 58.67s/it]slurmstepd: error: *** STEP 6053.0 "
            "ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***")
    recs = [r for r in parse_torch_lines([(1, line)], "f") if isinstance(r, JobCancelled)]
    assert [(r.scope, r.reason) for r in recs] == [("STEP", None)]
    recs = [r for r in parse_torch_lines([(1, TIME_LIMIT.splitlines()[1])], "f") if isinstance(r, JobCancelled)]
    assert [(r.scope, r.reason) for r in recs] == [("JOB", "TIME LIMIT")]


def test_rule_names_the_unfinished_ranks() -> None:
    stop = Failure(None, FailureKind.INTERRUPT, "KeyboardInterrupt", None, ("f", 9))
    st = stopped_unfinished([stop], False, {0, 1, 2, 3}, {0})
    assert st is not None and st.waiting == (1, 2, 3) and st.finished == (0,)
    assert stopped_unfinished([stop], True, {0, 1}, ()) is None  # a stall: the other hang rules' story
    own = Failure(1, FailureKind.EXCEPTION, "ValueError: bad batch", None, ("f", 5))
    assert stopped_unfinished([own, stop], False, {0, 1}, ()) is None
    assert stopped_unfinished([], False, {0, 1}, ()) is None


def test_a_rank_that_printed_its_end_is_not_among_the_waiting(tmp_path: Path) -> None:
    a = _analyze(tmp_path, INIT + "[rank0]: Training completed. Saving the model\n" + CTRL_C)
    assert a.decision.verdict == Verdict.HANG
    f = next(f for f in a.findings if f.data.get("class") == "stopped")
    assert f.data["waiting"] == [1, 2, 3] and f.data["finished"] == [0]


@pytest.mark.parametrize("line, rank", [
    ("[rank3]: training finished", 3), ("Training completed for rank 6. Do not forget to share your model", 6),
    ("[1,2]<stdout>:Process 2 - Training time: 10.04 seconds", 2), ("[rank0]: Done!", 0),
    ("srun: debug:  task 2 done", None), ("Loading checkpoint shards: done", None), ("process 4711 exiting", None),
    ("[rank1]: epoch 3 done, loss 0.12", None)])
def test_rank_finished_record(line: str, rank: int | None) -> None:
    from ncclscope.sources.records import RankFinished
    got = [r.rank for r in parse_torch_lines([(1, line)], "f") if isinstance(r, RankFinished)]
    assert got == ([rank] if rank is not None else [])


SRUN_TASK_FAILED = """\
srun: error: gpu-a08: task 3: Exited with exit code 1
srun: launch/slurm: _step_signal: Terminating StepId=881234.0
slurmstepd: error: *** STEP 881234.0 ON gpu-a07 CANCELLED AT 2025-03-02T04:00:12 ***
srun: Job step aborted: Waiting up to 32 seconds for job step to finish.
"""


def test_a_task_that_failed_before_the_cancel_is_the_story(tmp_path: Path) -> None:
    a = _analyze(tmp_path, INIT + SRUN_TASK_FAILED)
    assert a.decision.verdict == Verdict.CRASH
    assert _analyze(tmp_path, INIT + SRUN_TASK_FAILED.replace("Exited with exit code 1", "Terminated")
                    ).decision.verdict == Verdict.HANG  # srun ending a task after the cancel is the stop's echo


def test_slurms_oom_killer_before_the_abort_is_a_crash(tmp_path: Path) -> None:
    text = INIT + ("slurmstepd: error: Detected 1 oom_kill event in StepId=881234.0. Some of your processes may have "
                   "been killed by the cgroup out-of-memory handler.\nsrun: error: gpu-a08: task 3: Out Of Memory\n"
                   "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")
    assert _analyze(tmp_path, text).decision.verdict == Verdict.CRASH
