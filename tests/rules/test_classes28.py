"""Round twenty-eight's cases (tests/data/classes28/), written from the twenty-second held-out set's misreadings: NCCL
rejecting the process group's own call (``invalid usage`` / ``invalid argument`` raised from ProcessGroupNCCL or
NCCLUtils, ``Invalid rank requested``) is a config error, where the same words from torch's symmetric-memory code stay a
crash; ATen's ``device >= 0 && device < num_gpus`` assert is a device index outside the process's view; torch 1.x's
``host not found`` at the rendezvous, aws-ofi-nccl's endpoint without memory (RC -12) and vLLM's Ray executor with no
GPU on the driver's node are config errors (knowledge base); NCCL's ``NET/Socket : socket progress error`` is the data
path between nodes failing; Composer's launcher lines give each rank's end and the one that crashed; valgrind's
``Process terminating with default action of signal N`` opens a crash report, in nccl-tests' output too."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes28")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("text,entry,verdict", [
    ("RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:514, invalid usage, NCCL version 2.6.3",
     "c10d-nccl-invalid-usage", "config_error"),
    ("NCCL error in: /w/torch/lib/c10d/../c10d/NCCLUtils.hpp:78, invalid argument, NCCL version 2.4.8",
     "c10d-nccl-invalid-usage", "config_error"),
    ("NCCL error in: /w/torch/csrc/distributed/c10d/symm_mem/nccl_devcomm_manager.hpp:73, invalid usage",
     "c10d-nccl-invalid-usage-elsewhere", None),
    ("Invalid rank requested : 2/2", "init-invalid-rank", "config_error"),
    ("ValueError: host not found: Name or service not known", "rendezvous-host-not-found", "config_error"),
    ("NET/OFI Couldn't enable endpoint. RC: -12, ERROR: Cannot allocate memory", "plugin-ofi-endpoint-enomem",
     "config_error"),
    ("NET/Socket : socket progress error", "net-socket-progress-error", "crash"),
])
def test_knowledge_base_entries_of_the_round(text, entry, verdict):
    from ncclscope.nccl.failures import classify

    got = classify(text)
    assert got is not None and got.id == entry
    assert (got.verdict.value if got.verdict is not None else None) == verdict


def test_composer_launcher_lines_give_each_ranks_end():
    from ncclscope.sources.records import LauncherExit
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = ["ERROR:composer.cli.launcher:Rank 2 crashed with exit code -7.",
             "Global rank 0 (PID 2291) exited with code -15",
             "ERROR:composer.cli.launcher:Global rank 2 (PID 2293) exited with code -7"]
    got = [(r.rank, r.pid, r.exitcode, r.root_cause) for r in parse_torch_lines(enumerate(lines, 1), "f")
           if isinstance(r, LauncherExit)]
    assert got == [(0, 2291, -15, False), (2, 2293, -7, True)]


def test_valgrind_report_names_the_nccl_frames():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import NativeWatch

    w = NativeWatch("f")
    lines = ["==11== Process terminating with default action of signal 11 (SIGSEGV)",
             "==11==  Access not within mapped region at address 0x1C",
             "==11==    at 0x5F1B31A: ncclTopoSearchRecNet(ncclTopoSystem*, int) (search.cc:428)",
             "==11==    by 0x5F1C8A3: ncclTopoCompute(ncclTopoSystem*, ncclTopoGraph*) (search.cc:823)",
             "a line of something else"]
    taken = [w.read(n, t) for n, t in enumerate(lines, 1)]
    assert taken == [True, True, True, True, False]
    errors = [r for r in w.flush() if isinstance(r, DistError)]
    assert len(errors) == 1
    assert "Segmentation fault inside NCCL at ncclTopoSearchRecNet (search.cc:428)" in errors[0].message


def test_an_absurd_sequence_number_costs_its_line_only():
    from ncclscope.sources.records import DistError, WatchdogTimeout
    from ncclscope.sources.torch_log import parse_torch_lines

    huge = ("[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={'9' * 5000}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 milliseconds")
    recs = list(parse_torch_lines([(1, huge), (2, "[rank1]: RuntimeError: CUDA error: out of memory")], "f"))
    assert not any(isinstance(r, WatchdogTimeout) and r.seq is not None and r.seq > 10 ** 18 for r in recs)
    assert any(isinstance(r, DistError) and r.rank == 1 for r in recs)  # the file's other lines still read


def test_valgrind_reports_of_two_processes_and_a_stripped_library():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import NativeWatch

    w = NativeWatch("f")
    lines = ["==21== Process terminating with default action of signal 7 (SIGBUS)",
             "==21==    at 0x4A1B2C4: ncclShmOpen (in /usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3)",
             "==22== Process terminating with default action of signal 11 (SIGSEGV)",
             "==21==  a line of the first process, after the second's report began",
             "==22==    at 0x4A1B9F0: ??? (in /usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3)"]
    for n, t in enumerate(lines, 1):
        w.read(n, t)
    msgs = [r.message for r in w.flush() if isinstance(r, DistError)]
    assert len(msgs) == 2, msgs
    assert msgs[0].startswith("Bus error inside NCCL at ncclShmOpen (libnccl.so.2.18.3)"), msgs
    assert msgs[1].startswith("Segmentation fault"), msgs
