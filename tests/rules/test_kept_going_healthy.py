"""A run that kept printing its progress, whose ranks printed their own end or whose launcher reported success, with
nothing failing, is healthy even with no collective or communicator in the text, and past WARNs it outlived; a proxy's
failed Close is a rank's teardown. None of it hides a failure, a stall, a stop from outside or a non-zero exit."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict
from ncclscope.rules.healthy import went_on

PROGRESS = """\
Train Epoch: 1 [0/64000 (0%)]\tLoss: 0.693140
Train Epoch: 1 [6400/64000 (10%)]\tLoss: 0.412871
Train Epoch: 2 [0/64000 (0%)]\tLoss: 0.120554
"""

SPURIOUS_WARNS = """\
a1b2c3d4e5f60718293a4b5c6d7e8f90000000:52:230 [0] include/socket.h:423 NCCL WARN Net : Connection closed by remote \
peer 10.1.0.9<40112>
a1b2c3d4e5f60718293a4b5c6d7e8f90000000:52:230 [0] NCCL INFO bootstrap.cc:229 -> 2

a1b2c3d4e5f60718293a4b5c6d7e8f90000000:52:230 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'
a1b2c3d4e5f60718293a4b5c6d7e8f90000000:52:230 [0] NCCL INFO bootstrap.cc:231 -> 1
"""

TIMEOUT = """\
[rank0]:[E302 03:30:11.123456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds \
before timing out.
"""

OOM = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/train.py", line 80, in <module>
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
"""

CTRL_C = """\
^CW0302 04:00:12.118000 139881 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGINT death \
signal, shutting down workers
[rank1]: Traceback (most recent call last):
[rank1]: KeyboardInterrupt
"""

FAILED_EXIT = ("E0302 04:00:12.118000 139881 torch/distributed/elastic/multiprocessing/api.py:869] failed "
               "(exitcode: 1) local_rank: 1 (pid: 40212) of binary: /usr/bin/python\n")

HF_DICTS = "".join(f"{{'loss': 1.{5 - i}03, 'grad_norm': 0.14, 'learning_rate': 0.0003, 'epoch': 0.0{i}}}\n"
                   for i in range(1, 4))

ENDS = "".join(f"[1,{r}]<stdout>:Process {r} - Training time: 10.0{r} seconds\n" for r in range(4))

TORCHRUN_OK = ("INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. "
               "Waiting 300 seconds for other agents to finish.\n")

TEARDOWN = """\
[testing] Running with BF16, with top-k (async=False, previous=False) ... passed
[testing] Running with FP8, with top-k (async=True, previous=True) ... passed
9f8e7d6c5b4a:3101:3350 [0] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable
9f8e7d6c5b4a:3101:3350 [0] proxy.cc:1497 NCCL WARN [Service thread] Could not receive type from localRank 0, res=3, closed=0
9f8e7d6c5b4a:3101:3350 [0] proxy.cc:1521 NCCL WARN [Proxy Service 0] Failed to execute operation {op} from rank 0, \
retcode 3
"""


def _analyze(tmp_path: Path, text: str):
    p = tmp_path / "console.log"
    p.write_text(text)
    return analyze_paths([p], cache=False)


@pytest.mark.parametrize("text", [PROGRESS, SPURIOUS_WARNS + PROGRESS, ENDS, PROGRESS + TORCHRUN_OK,
                                  TEARDOWN.format(op="Close"), HF_DICTS],
                         ids=["progress", "warns-then-progress", "every-rank-ended", "torchrun-success", "teardown",
                              "hf-trainer-dicts"])
def test_a_run_that_went_on_is_healthy(tmp_path: Path, text: str) -> None:
    assert _analyze(tmp_path, text).decision.verdict == Verdict.HEALTHY


@pytest.mark.parametrize("text, verdict", [
    (PROGRESS + TIMEOUT, Verdict.HANG), (PROGRESS + OOM, Verdict.CRASH), (PROGRESS + CTRL_C, Verdict.HANG),
    (TEARDOWN.format(op="Connect"), Verdict.CRASH)], ids=["timeout", "oom", "ctrl-c", "proxy-connect-failed"])
def test_progress_never_hides_a_failure(tmp_path: Path, text: str, verdict: Verdict) -> None:
    assert _analyze(tmp_path, text).decision.verdict == verdict


@pytest.mark.parametrize("text", [SPURIOUS_WARNS, PROGRESS + FAILED_EXIT, ENDS.splitlines()[0] + "\n" + "".join(f"[1,{r}]<stdout>:saving checkpoint\n" for r in (1, 2, 3)),
                                  PROGRESS.splitlines()[0] + "\n" + SPURIOUS_WARNS],
                         ids=["warns-alone", "non-zero-exit", "one-rank-of-four-ended", "warns-after-progress"])
def test_not_enough_to_call_healthy(tmp_path: Path, text: str) -> None:
    assert _analyze(tmp_path, text).decision.verdict != Verdict.HEALTHY


def test_rule() -> None:
    assert went_on([("f", 9, 3)], False, False, None, (), (), False) is not None
    assert went_on([("f", 9, 1)], False, False, None, (), (), False) is None  # one line: maybe the last before a hang
    assert went_on([("f", 9, 3)], True, False, None, (), (), False) is None
    assert went_on([("f", 9, 3)], False, True, None, (), (), False) is None
    assert went_on([("f", 9, 3)], False, False, 1, (), (), False) is None
    assert went_on([], False, False, None, {0, 1}, {0, 1}, False) is not None
    assert went_on([], False, False, None, {0, 1}, {0}, False) is None
    w = went_on([("f", 9, 3)], False, False, 0, (), (), False)
    assert w is not None and w.outlived(("f", 5)) and not w.outlived(("f", 12)) and not w.outlived(("g", 1))
