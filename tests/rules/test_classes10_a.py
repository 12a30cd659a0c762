"""Round ten's cases (tests/data/classes10/c10a_*): stalls that read healthy or unknown. What a user pastes of their
own look at a stuck job after its last line (an inspection tool's command line, nvidia-smi's table or query CSV, a
py-spy dump) is not the job going on; a log whose processes all end at torch's JIT build starting ("... as PyTorch
extensions root...") with no build step after it waits on a stale build lock."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes10")
MINE = SET.names("c10a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,paste", [
    ("$ nvidia-smi", True), ("$ py-spy dump --pid 4711", True), ("root@node:/# nvidia-smi", True),
    ("(venv) user@h:~/x$ sudo ps aux | grep train", True),
    ("| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15   CUDA Version: 12.4 |", True),
    ("index, memory.used [MiB], utilization.gpu [%]", True), ("Process 4711: python train.py --lr 3e-4", True),
    ("$ torchrun --nproc_per_node 2 train.py", False), ("$ cat train.log", False), ("# a comment of the script", False),
    ("[rank0]: step 10 loss 2.1", False), ("node1:4711:4711 [0] NCCL INFO # of tests 3", False),
])
def test_what_begins_a_users_look_at_the_job(line, paste):
    from ncclscope.sources.pasted import starts_paste

    assert starts_paste(line) is paste


def test_the_job_ends_before_the_paste_and_a_file_that_is_all_paste_is_read_as_it_is():
    from ncclscope.ingest.assemble import log_records

    lines = [(1, "step 10 loss 2.1"), (2, "step 20 loss 2.0"), (3, "$ nvidia-smi"), (4, "| table |"), (6, "+---+")]
    _, end = log_records(lines, [], "f", 8)
    assert (end.line, end.text) == (2, "step 20 loss 2.0")
    _, end = log_records([(1, "$ nvidia-smi"), (2, "| table |")], [], "f", 3)
    assert end.line == 3


@pytest.mark.parametrize("line,jit", [
    ("Using /root/.cache/torch_extensions/py310_cu118 as PyTorch extensions root...", True),
    ("Using envvar TORCH_EXTENSIONS_DIR (/nfs/ext) as PyTorch extensions root...", True),
    ("Loading extension module fused_adam...", False), ("Using network Socket", False),
])
def test_the_jit_builds_first_line(line, jit):
    from ncclscope.detectors.framework import JIT_ROOT_RE

    assert bool(JIT_ROOT_RE.search(line)) is jit


def test_an_nccl_warn_followed_by_its_error_returned_is_a_failure():
    from ncclscope.rules.hang import error_returned

    assert error_returned([("a", 10)], [("a", 11, 3), ("a", 12, 3)])
    assert not error_returned([("a", 10)], [("a", 9, 3)])  # a chain before the warning is another call's
    assert not error_returned([("a", 10)], [("b", 11, 3)])  # another log's
    assert not error_returned([], [("a", 11, 3)])


def test_a_dump_in_a_collective_beside_dumps_blocked_on_the_gpu_stream_is_a_hang_with_no_culprit():
    from ncclscope.model import Verdict
    from ncclscope.rules.stacks import Position, read_stacks
    from ncclscope.sources.stack_dump import GPU_WAIT, collective_of

    r = read_stacks([Position(0, GPU_WAIT, "send (a.py:1)"), Position(3, "all_gather", "m (b.py:2)")])
    assert r is not None and r.verdict is Verdict.HANG and r.culprits == () and r.waiting == (0, 3)
    r = read_stacks([Position(0, None, "loader (a.py:1)"), Position(1, GPU_WAIT, "step (a.py:9)"),
                     Position(3, "all_gather", "m (b.py:2)")])
    assert r is not None and r.culprits == (0, 1)  # a rank outside any: the stream wait is no longer all that holds
    assert collective_of([("synchronize", "torch/cuda/streams.py", 105), ("send", "w.py", 3)]) == GPU_WAIT
    assert collective_of([("all_gather_tensor", "torch/distributed/_functional_collectives.py", 204)]) == "all_gather"
    assert collective_of([("synchronize", "myproj/timer.py", 5)]) is None


@pytest.mark.parametrize("line,want", [
    ("[data] rank=1 seq=2048->2048 sp=OFF", (1, "[data] rank# seq=")),
    ("rank=0: before forward (step=0 micro=0)", (0, "rank# before")),
    ("[hetero] rank=2 gpu=NVIDIA RTX A6000 mem=47.4GB", (2, "[hetero] rank# gpu=")),
    ("[hetero] allocation: rank0 micro=2 rank1 micro=1", None),  # two ranks: no one rank's print
    ("[2026-07-06 11:03:40,216] [INFO] [logging.py:128:log_dist] [Rank 0] DeepSpeed info", None),  # a library's
    ("step 10 loss 2.1", None),
])
def test_a_print_stating_its_rank(line, want):
    from ncclscope.sources.rank_prints import print_shape

    assert print_shape(line, line) == want


def test_prints_ahead_alone_at_the_end_name_the_ranks_behind():
    from ncclscope.rules.hang import ahead_alone

    by = {"a": [0, 1, 2], "b": [0], "c": [0]}
    tail = [(1, 0, "a"), (2, 1, "a"), (3, 2, "a"), (4, 0, "b"), (5, 0, "c")]
    st = ahead_alone(tail, by, [0, 1, 2], 1, True, False, False)
    assert st is not None and st.culprits == (1, 2) and st.ahead == (0,)
    assert ahead_alone(tail, by, [0, 1, 2], 1, False, False, False) is None  # the log goes on after them
    assert ahead_alone(tail, by, [0, 1, 2], 0, True, False, False) is None  # no print every rank makes
    assert ahead_alone(tail, by, [0, 1, 2], 1, True, True, False) is None  # something failed
    loop = [*tail[:3], *[(4 + i, 0, "b") for i in range(3)]]
    assert ahead_alone(loop, by, [0, 1, 2], 1, True, False, False) is None  # rank 0 goes on alone: logs alone


def test_a_launch_command_after_a_paste_is_the_job_again():
    from ncclscope.ingest.assemble import log_records

    lines = [(1, "export NCCL_DEBUG=WARN"), (2, "$ nvidia-smi topo -m"), (3, "GPU0 X NV12"), (4, "$ torchrun x.py"),
             (5, "step 10 loss 2.1"), (6, "step 20 loss 2.0")]
    _, end = log_records(lines, [], "f", 6)
    assert (end.line, end.text) == (6, "step 20 loss 2.0")
