"""PyTorch, mp.spawn, torchrun and wrapper line forms of torch 1.10 to 2.13+, each in the shape of a public
thread (cited per case; our own hosts, pids, ranks and numbers), and the versions, ranks and world sizes
printed along the way."""
from __future__ import annotations

import pytest
from ncclscope.sources import records as R
from ncclscope.sources import torch_log
from ncclscope.sources.torch_log import parse_torch_lines


def parse(text: str) -> list:
    return list(parse_torch_lines(enumerate(text.splitlines(), 1), "stderr.log"))


def of(recs: list, kind: type) -> list:
    return [r for r in recs if isinstance(r, kind)]


# (torch release, thread, line, rank, seq): the watchdog's timeout line as each release prints it
TIMEOUTS = [
    ("1.13", "pytorch/pytorch#118369",
     ("[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, "
     "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802200 milliseconds before timing out."), 2, 96120),
    ("2.3", "Lightning-AI/litData#340",
     ("  | 2026-08-23T22:22:51.874Z | [rank3]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 3] Process group watchdog thread "
     "terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=70311, "
     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800091 milliseconds before timing out."), 3, 70311),
    ("2.4", "sgl-project/sglang#1693",
     ("  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, "
     "Timeout(ms)=600000) ran for 600020 milliseconds before timing out."), 5, 9141),
    ("2.6", "hiyouga/LlamaFactory#7396",
     ("[80746] [rank4]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran "
     "for 600067 milliseconds before timing out."), 4, 1580),
    ("2.7", "huggingface/open-r1#620",
     ("[rank2]:[E424 01:17:25.031978332 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group "
     "watchdog thread terminated with exception: [Rank 2] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 "
     "milliseconds before timing out."), 2, 4),
]


@pytest.mark.parametrize("release,thread,line,rank,seq", TIMEOUTS, ids=[t[0] for t in TIMEOUTS])
def test_watchdog_timeout_by_release(release, thread, line, rank, seq):
    (t,) = of(parse(line), R.WatchdogTimeout)
    assert (t.rank, t.seq) == (rank, seq)


def test_timeout_echoed_by_the_watchdog_exception_counts_once():
    """open-r1#620: the timeout line, then the watchdog's exception quoting it, then ``what():`` again."""
    line = TIMEOUTS[4][2]
    first = ("[rank2]:[E424 01:17:25.0 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 "
             "milliseconds before timing out.")
    recs = parse("\n".join([first, line, "  what():  " + line.split("] ", 1)[1]]))
    assert len(of(recs, R.WatchdogTimeout)) == 1 and not of(recs, R.DistError)


def test_watchdog_exception_with_any_error_is_the_ranks_error():
    """vllm-project/vllm#2682 (torch 2.1): ``NCCL watchdog thread terminated with exception: CUDA error``."""
    recs = parse("(RayWorkerVllm pid=7710) [E ProcessGroupNCCL.cpp:916] [Rank 6] NCCL watchdog thread terminated with "
                 "exception: CUDA error: unknown error\n"
                 "[rank1]:[E1129 19:37:35.5 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process "
                 "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered")
    errs = of(recs, R.DistError)
    assert [(e.rank, e.message) for e in errs] == [(6, "CUDA error: unknown error"),
                                                   (1, "CUDA error: an illegal memory access was encountered")]
    assert errs[0].severity == "E"


def test_async_exception():
    """torch 1.x WorkNCCL error path: ``... raised the following async exception: <error>``."""
    (e,) = of(parse("[E ProcessGroupNCCL.cpp:341] [Rank 1] NCCL work (SeqNum=12) raised the following async exception: "
                    "NCCL error: unhandled system error, NCCL version 2.10.3"), R.DistError)
    assert e.rank == 1 and e.message.startswith("NCCL error: unhandled system error")


def test_nccl_error_quoted_without_exception_type_then_last_error():
    """huggingface/transformers#11658 (a logger printed the error without its type) and
    lucidrains/denoising-diffusion-pytorch#345 (``ncclInvalidUsage`` / ``Last error:`` under it)."""
    recs = parse(
        "2026-05-10 10:56:59 ERROR    __main__   NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:784, "
        "unhandled system error, NCCL version 2.7.8\n"
        "[rank1]: invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.26.2\n"
        "[rank1]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "[rank1]: Last error:\n"
        "[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 4b000\n")
    errs = of(recs, R.DistError)
    assert [(e.rank, e.exc_type) for e in errs] == [(None, "NCCL error"), (1, "NCCL error")]
    assert "unhandled system error" in errs[0].message
    assert errs[1].last_error == "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 4b000"
    assert {v.nccl for v in of(recs, R.TorchVersionLine)} == {"2.7.8", "2.26.2"}


def test_dist_backend_error_with_leading_colon_and_version():
    """NVIDIA/nccl#1092: ``: torch.distributed.DistBackendError: NCCL error in: ..., NCCL version 2.18.1``."""
    recs = parse(": torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
                 "internal error - please report this issue to the NCCL developers, NCCL version 2.18.1")
    assert of(recs, R.DistError) and of(recs, R.TorchVersionLine)[0].nccl == "2.18.1"


@pytest.mark.parametrize("printed,real", [("21.0.3", "2.10.3"), ("21.2.12", "2.12.12"), ("2.7.8", "2.7.8"),
                                          ("2.21.5", "2.21.5")])
def test_torch_1_10_nccl_version_misprint(printed, real):
    """hpcaitech/ColossalAI#1320, deepspeedai/DeepSpeedExamples#443: torch 1.10 / 1.11 printed NCCL 2.10.3 as 21.0.3."""
    assert torch_log.normalize_nccl_version(printed) == real


def test_mp_spawn_child_error_gets_the_process_index_as_rank():
    """facebookresearch/moco-style mp.spawn failure (FixMatch-pytorch#2, ColossalAI#1320): the parent re-raises
    (``ProcessRaisedException``), then ``-- Process N terminated with the following error:`` and the child's
    traceback without any rank tag."""
    recs = parse("""Traceback (most recent call last):
  File "train.py", line 316, in <module>
    mp.spawn(main_worker, nprocs=4, args=(4, args))
  File "/opt/venv/lib/python3.9/site-packages/torch/multiprocessing/spawn.py", line 150, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException:

-- Process 3 terminated with the following error:
Traceback (most recent call last):
  File "/opt/venv/lib/python3.9/site-packages/torch/multiprocessing/spawn.py", line 59, in _wrap
    fn(i, *args)
  File "train.py", line 155, in main_worker
    model = DDP(model, device_ids=[gpu])
RuntimeError: NCCL error in: /opt/conda/work/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:957, unhandled system error, NCCL version 21.0.3
ncclSystemError: System call (socket, malloc, munmap, etc) failed.
""")
    (e,) = of(recs, R.DistError)
    assert (e.rank, e.exc_type) == (3, "RuntimeError") and any("train.py:155" in f for f in e.frames)
    assert of(recs, R.TorchVersionLine)[0].nccl == "2.10.3"


def test_mp_spawn_terminating_and_exited():
    """jpata/particleflow#390 (torch 2.3): mp.spawn's logger kills the others, then ProcessExitedException."""
    recs = parse("W0124 03:42:15.485000 23456247908160 torch/multiprocessing/spawn.py:146] Terminating process 815353 via "
                 "signal SIGTERM\n"
                 "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGKILL\n"
                 "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1\n")
    (s,) = of(recs, R.LauncherSignal)
    assert (s.pid, s.signal) == (815353, "SIGTERM")
    exits = of(recs, R.LauncherExit)
    assert [(x.rank, x.exitcode) for x in exits] == [(3, -9), (1, 1)] and not of(recs, R.DistError)


def test_rank_print_and_vllm_worker_prefix():
    """gpustack/gpustack#2680 (vLLM ``(VllmWorker rank=3 pid=..) ERROR .. [file:line]``) and a user's
    ``print(f"Rank {rank}: {e}")``."""
    recs = parse("(VllmWorker rank=3 pid=4665) ERROR 08-05 14:13:44 [multiproc_executor.py:487] RuntimeError: NCCL error: "
                 "unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
                 "Rank 5: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 5.\n")
    assert [(e.rank, e.exc_type) for e in of(recs, R.DistError)] == [
        (3, "RuntimeError"), (5, "torch.distributed.DistBackendError")]


def test_deepspeed_accelerate_wrappers():
    """deepspeedai/DeepSpeed#716 (launcher world size), lucidrains/denoising-diffusion-pytorch#345 (accelerate
    launch = torchrun's elastic agent, logged through Python logging in torch 2.1)."""
    recs = parse(
        "[2026-01-31 23:07:46,791] [INFO] [launch.py:100:main] dist_world_size=16\n"
        "gpu004: [2026-01-31 23:07:46,791] [INFO] [launch.py:87:main] nnodes=2, num_local_procs=8, node_rank=1\n"
        "[2026-10-07 11:29:17,757] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 191739 "
        "closing signal SIGTERM\n"
        "[2026-10-07 11:29:17,871] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
        "local_rank: 1 (pid: 191740) of binary: /opt/venv/bin/python\n")
    assert [w.world_size for w in of(recs, R.WorldSize)] == [16]
    assert of(recs, R.LauncherSignal)[0].pid == 191739
    assert [(x.local_rank, x.exitcode, x.pid) for x in of(recs, R.LauncherExit)] == [(1, 1, 191740)]


def test_world_size_and_versions_from_where_they_are_printed():
    """Lightning-AI/pytorch-lightning#4420 (store barrier's world_size), torchrun's rendezvous result, collect_env."""
    recs = parse(
        "INFO:root:Waiting in store based barrier to initialize process group for rank: 2, key: store_based_barrier_key:1 "
        "(world_size=8, worker_count=7, timeout=0:30:00)\n"
        "[default0]:Initializing distributed: GLOBAL_RANK: 9, MEMBER: 10/64\n"
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result: "
        "restart_count=0 master_addr=10.2.0.4 master_port=29500 group_rank=0 group_world_size=8 local_ranks=[0, 1] "
        "role_ranks=[0, 1] global_ranks=[0, 1] role_world_sizes=[64, 64] global_world_sizes=[64, 64]\n"
        "PyTorch version: 2.4.1+cu121\n"
        "[pip3] nvidia-nccl-cu12==2.20.5\n"
        "INFO 07-10 08:01:12 utils.py:623] vLLM is using nccl==2.20.5\n")
    assert [(w.rank, w.world_size) for w in of(recs, R.WorldSize)] == [(None, 8), (9, 64), (None, 64)]
    versions = of(recs, R.TorchVersionLine)
    assert {v.torch for v in versions} - {None} == {"2.4.1+cu121"}
    assert {v.nccl for v in versions} - {None} == {"2.20.5"}


# (torch release, thread, line, rank, pg, seq, enqueued, completed): the watchdog's status line by release
FAILURES = [
    ("1.13", "pytorch/pytorch#118369 era", ("[E ProcessGroupNCCL.cpp:474] [Rank 3] Timeout at NCCL work: 96120, last "
     "enqueued NCCL work: 96121, last completed NCCL work: 96119."), 3, None, 96120, 96121, 96119),
    ("2.3", "hiyouga/LlamaFactory#6269", ("[rank4]:[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 4] "
     "Exception (either an error or timeout) detected by watchdog at work: 7753, last enqueued NCCL work: 7755, last "
     "completed NCCL work: 7752."), 4, "1", 7753, 7755, 7752),
    ("2.5", "XPixelGroup/BasicSR#737", ("[rank2]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID "
     "0(default_pg) Rank 2] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL "
     "work: 811, last completed NCCL work: 807."), 2, "0", 808, 811, 807),
    ("2.9", "samples/gpu_hang", ("[rank0]:[E1129 20:44:45.098010273 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID "
     "0(default_pg) Rank 0]  failure detected by watchdog at work sequence id: 125 PG status: last enqueued work: 130, "
     "last completed work: 124"), 0, "0", 125, 130, 124),
]


@pytest.mark.parametrize("release,thread,line,rank,pg,seq,enq,done", FAILURES, ids=[f[0] for f in FAILURES])
def test_watchdog_status_by_release(release, thread, line, rank, pg, seq, enq, done):
    for prefix in ("", "3: ", "2026-12-06T18:44:12.715Z "):
        (f,) = of(parse(prefix + line), R.WatchdogFailure)
        assert (f.rank, f.pg, f.seq, f.last_enqueued, f.last_completed) == (rank, pg, seq, enq, done)
