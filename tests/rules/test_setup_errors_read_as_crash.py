"""Setup errors that end a job the way a crash does: a bus error in a job running NCCL (a container's /dev/shm
too small), a framework that cannot load libnccl.so at all, and NCCL's bootstrap root seeing one rank check in
twice. Each is the job's configuration, not a crash of a rank's code; the same signals after another failure,
or with no NCCL in the job, stay what the time line says."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict
from ncclscope.nccl.failures import by_id, classify

INIT = """\
c0ffee12ab34:2417:2417 [0] NCCL INFO Bootstrap : Using eth0:10.12.0.5<0>
NCCL version 2.18.3+cuda12.2
c0ffee12ab34:2417:2427 [0] NCCL INFO comm 0x55d0c81a3f60 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1a000 \
commId 0x6f1c2b8e04a9d317 - Init START
c0ffee12ab34:2417:2427 [0] NCCL INFO Channel 00/0 : 1[1a000] -> 0[1a000] [receive] via NET/IB/0
c0ffee12ab34:2417:2433 [0] NCCL INFO New proxy recv connection 1 from local rank 0, transport 2
"""

OMPI_SIGBUS = """\
[c0ffee12ab34:02417] *** Process received signal ***
[c0ffee12ab34:02417] Signal: Bus error (7)
[c0ffee12ab34:02417] Signal code: Non-existant physical address (2)
[c0ffee12ab34:02417] [ 2] /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x6c1f3)[0x7f3a8d66c1f3]
[c0ffee12ab34:02417] *** End of error message ***
mpirun noticed that process rank 0 with PID 2417 on node 10.12.0.5 exited on signal 7 (Bus error).
"""

UCX_SIGBUS = "[c0ffee12ab34:2417:0:2433] Caught signal 7 (Bus error: nonexistent physical address)\n"

TORCHRUN_SIGBUS = """\
[2024-05-02 10:11:12,345] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -7) \
local_rank: 0 (pid: 2417) of binary: /usr/bin/python
"""

XLA_NO_NCCL = """\
2024-03-11 14:04:02.881517: W external/xla/xla/service/gpu/runtime/support.cc:58] Intercepted XLA runtime error:
INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:134: NCCL operation ncclGetUniqueId(&id) failed: Unable to \
load NCCL library. Multi-GPU collectives will not work.. Last NCCL warning(error) log entry (may be unrelated) \
'Unable to load NCCL library. Multi-GPU collectives will not work.'.
Traceback (most recent call last):
  File "/home/u/run.py", line 12, in <module>
    out = step(params, batch)
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: custom \
call 'xla.gpu.all_gather' failed: external/xla/xla/service/gpu/nccl_utils.cc:134: NCCL operation \
ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work..
"""

RANK_TWICE = """\
node1:4101:4101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
NCCL version 2.18.3+cuda12.2
node1:4102:4102 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:4101:4131 [0] NCCL INFO comm 0x55d0c81a3f60 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1a000 \
commId 0x6f1c2b8e04a9d317 - Init START
node1:4102:4132 [1] NCCL INFO comm 0x55d0c81a4f60 rank 0 nranks 2 cudaDev 1 nvmlDev 1 busId 1b000 \
commId 0x6f1c2b8e04a9d317 - Init START

node1:4101:4135 [0] bootstrap.cc:102 NCCL WARN Bootstrap Root : rank 0 of 2 ranks has already checked in
Traceback (most recent call last):
  File "train.py", line 10, in <module>
    dist.barrier()
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, \
unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
Bootstrap Root : rank 0 of 2 ranks has already checked in
"""


def decide(tmp_path: Path, text: str):
    (tmp_path / "out.txt").write_text(text)
    a = analyze_paths([tmp_path], cache=False)
    return a.decision, a.findings


@pytest.mark.parametrize("tail", [OMPI_SIGBUS, UCX_SIGBUS], ids=["openmpi", "ucx"])
def test_bus_error_first_in_an_nccl_job_is_the_containers_shm(tmp_path, tail):
    d, findings = decide(tmp_path, INIT + tail)
    assert d.verdict == Verdict.CONFIG_ERROR, d.headline
    assert "SIGBUS" in d.headline and "/dev/shm" in d.headline
    (f,) = [f for f in findings if f.kind == "config" and f.data.get("signal") == "SIGBUS"]
    assert "--shm-size" in f.hint and d.certainty == "likely" and d.culprit_ranks == ()


def test_torchrun_exit_code_minus_7_is_the_same_setup_error(tmp_path):
    d, _ = decide(tmp_path, INIT + TORCHRUN_SIGBUS)
    assert d.verdict == Verdict.CONFIG_ERROR and "/dev/shm" in d.headline, d.headline


def test_segfault_stays_a_crash(tmp_path):
    d, _ = decide(tmp_path, INIT + OMPI_SIGBUS.replace("Bus error (7)", "Segmentation fault (11)")
                  .replace("signal 7 (Bus error)", "signal 11 (Segmentation fault)"))
    assert d.verdict == Verdict.CRASH, d.headline


def test_bus_error_after_an_nccl_error_is_not_the_first_failure(tmp_path):
    warn = "c0ffee12ab34:2417:2427 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer " \
           "10.12.0.6<51234> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.12.0.5 " \
           "remoteGids::ffff:10.12.0.6 hca mlx5_0\n"
    d, _ = decide(tmp_path, INIT + warn + OMPI_SIGBUS)
    assert d.verdict != Verdict.CONFIG_ERROR or "SIGBUS" not in d.headline, d.headline


def test_framework_that_cannot_load_libnccl_is_an_install_problem(tmp_path):
    d, findings = decide(tmp_path, XLA_NO_NCCL)
    assert d.verdict == Verdict.CONFIG_ERROR, d.headline
    assert any(f.data.get("entry") == "init-library-not-loaded" for f in findings)
    assert classify("RuntimeError: Unable to load NCCL library") is by_id("init-library-not-loaded")


def test_rank_checked_in_twice_is_a_config_error_not_a_mix_of_jobs(tmp_path):
    d, findings = decide(tmp_path, RANK_TWICE)
    assert d.verdict == Verdict.CONFIG_ERROR, d.headline
    assert not [f for f in findings if f.verdict == Verdict.UNKNOWN]
    assert by_id("bootstrap-rank-twice").verdict == "config_error"


def test_one_rank_claimed_twice_without_nccls_word_is_still_a_mix(tmp_path):
    d, _ = decide(tmp_path, RANK_TWICE.split("\n\n")[0] + "\n")
    assert d.verdict == Verdict.UNKNOWN and "mixes" in d.headline, d.headline
