"""Evidence outside NCCL's lines: the NVIDIA driver's kernel lines (sources.kernel_log), py-spy and faulthandler dumps
(sources.stack_dump) and the program's own prints that a rank waits (sources.tool_lines)."""
from __future__ import annotations

import pytest
from ncclscope.sources.kernel_log import gpu_fault, named_gpu
from ncclscope.sources.records import GpuFault, ProgressWait, StackSnapshot
from ncclscope.sources.stack_dump import collective_of
from ncclscope.sources.tool_lines import progress_wait
from ncclscope.sources.torch_log import parse_torch_lines


def _records(text: str) -> list:
    return list(parse_torch_lines(enumerate(text.splitlines(), 1), "f"))


@pytest.mark.parametrize("line,pci,xid,host", [
    ("[392301.118211] NVRM: Xid (PCI:0000:3b:00): 79, pid=9105, name=python3, GPU has fallen off the bus.",
     "0000:3b:00", 79, None),
    ("[392301.118230] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", "0000:3b:00.0", None, None),
    (("Mar  3 10:00:01 gpu-n7 kernel: NVRM: Xid (PCI:0000:b5:00): 74, pid=4711, name=python, NVLink: fatal error "
      "detected on link 3"), "0000:b5:00", 74, "gpu-n7"),
])
def test_driver_lines_about_a_gpu(line, pci, xid, host):
    g = gpu_fault(line, "f", 1, line, None)
    assert g is not None and (g.pci, g.xid, g.host) == (pci, xid, host)


def test_the_three_line_bus_report_names_its_gpu():
    recs = _records("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                    "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                    "               NVRM: fallen off the bus and is not responding to commands.\n")
    faults = [r for r in recs if isinstance(r, GpuFault)]
    assert [(f.line, f.pci, f.xid) for f in faults] == [(3, "0000:b3:00.0", None)]
    assert named_gpu("NVRM: The NVIDIA GPU 0000:b3:00.0") == "0000:b3:00.0"
    assert gpu_fault("NVRM: loading NVIDIA UNIX Open Kernel Module", "f", 1, "", None) is None


PYSPY = """\
=== rank 3 ===
Process 4711: /usr/bin/python3 train.py
Python v3.10.12 (/usr/bin/python3.10)

Thread 4711 (idle): "MainThread"
    _reduce_scatter_base (torch/distributed/distributed_c10d.py:3350)
    _post_backward_hook (torch/distributed/fsdp/_runtime_utils.py:790)
    backward (torch/_tensor.py:525)
    train_step (train.py:88)
    <module> (train.py:120)
Thread 4790 (idle): "Thread-2"
    wait (threading.py:324)
step 120 done
"""


def test_a_py_spy_dump_gives_where_the_main_thread_is():
    (snap,) = [r for r in _records(PYSPY) if isinstance(r, StackSnapshot)]
    assert (snap.rank, snap.pid, snap.collective) == (3, 4711, "reduce_scatter")
    assert snap.where == "train_step (train.py:88)"
    assert snap.line == 2 and len(snap.frames) == 5


FAULTHANDLER = """\
[rank1]:Thread 0x00007f2b9c7fe640 (most recent call first):
[rank1]:  File "/usr/lib/python3.10/threading.py", line 324 in wait
[rank0]:Current thread 0x00007f2c51b3a740 (most recent call first):
[rank0]:  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2501 in all_reduce
[rank1]:
[rank1]:Current thread 0x00007fa01f2c8740 (most recent call first):
[rank1]:  File "/srv/run/data.py", line 41 in __next__
[rank1]:  File "/srv/run/train.py", line 241 in train_loop
[rank1]:  File "/srv/run/train.py", line 301 in <module>
[rank0]:  File "/srv/run/train.py", line 207 in clip_and_step
[rank0]:  File "/srv/run/train.py", line 301 in <module>
"""


def test_faulthandler_dumps_of_interleaved_ranks_are_kept_apart():
    snaps = {r.rank: r for r in _records(FAULTHANDLER) if isinstance(r, StackSnapshot)}
    assert set(snaps) == {0, 1}
    assert snaps[0].collective == "all_reduce" and snaps[0].where == "clip_and_step (/srv/run/train.py:207)"
    assert snaps[1].collective is None and snaps[1].where == "__next__ (/srv/run/data.py:41)"


def test_a_traceback_is_no_stack_dump():
    recs = _records('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
                    "RuntimeError: NCCL error in: x.cpp:1, unhandled system error, NCCL version 2.21.5\n")
    assert not [r for r in recs if isinstance(r, StackSnapshot)]


@pytest.mark.parametrize("frames,want", [
    ([("all_gather_into_tensor", "torch/distributed/distributed_c10d.py", 1)], "all_gather"),
    ([("wait", "threading.py", 1), ("barrier", "torch/distributed/distributed_c10d.py", 2)], "barrier"),
    ([("all_reduce", "mylib/ops.py", 1)], None),  # a function of that name outside torch.distributed
    ([("__next__", "torch/utils/data/dataloader.py", 1)], None),
])
def test_the_collective_a_stack_is_in(frames, want):
    assert collective_of(frames) == want


@pytest.mark.parametrize("line,rank,who,on", [
    ("[rank2]: waiting for all ranks before the next epoch", 2, 2, None),
    ("rank 3 waiting for rank 1 to send its shard", None, 3, 1),
    ("Rank 0: waiting on rank 2", 0, 0, 2),
])
def test_a_programs_wait_print(line, rank, who, on):
    w = progress_wait(line, "f", 1, line, rank)
    assert isinstance(w, ProgressWait) and (w.rank, w.on) == (who, on)


@pytest.mark.parametrize("line", [
    "waiting for the data to load",  # no rank named
    "[I1020 22:41:07 ProcessGroupNCCL.cpp:2291] [Rank 0] waiting for store",  # a library's line
    "rank 1: Waiting in store based barrier to initialize process group for rank: 1",
])
def test_no_wait_print(line):
    assert progress_wait(line, "f", 1, line, None) is None
