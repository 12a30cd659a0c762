"""Round six's cases (tests/data/classes6/c6b_*): glibc's abort on a corrupted heap (``free(): invalid ...``,
``double free or corruption``) names no rank, whichever launcher printed it and whether the peers echoed it or were
stopped; node counts and world sizes read from what the lines say for sure."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.rules.cause import HEAP_PREFIX, Failure, FailureKind, explain_heap
from ncclscope.sources.torch_log import HEAP_ABORT_RE

SET = CaseSet(DATA / "classes6")
MINE = SET.names("c6b_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_heap_check_messages_and_only_those():
    for line in ("free(): invalid pointer", "free(): invalid next size (fast)", "double free or corruption (out)",
                 "double free or corruption (!prev)", "malloc(): corrupted top size", "munmap_chunk(): invalid pointer",
                 "corrupted size vs. prev_size", "free(): double free detected in tcache 2"):
        assert HEAP_ABORT_RE.match(line), line
    for line in ("free(): the pool was released", "the checkpoint is corrupted size 12", "loss 3.2 free(): x"):
        assert not HEAP_ABORT_RE.match(line), line


def test_unranked_heap_check_goes_to_the_one_aborted_rank():
    heap = Failure(None, FailureKind.EXCEPTION, f"{HEAP_PREFIX}glibc aborted (free(): invalid pointer)", None, ("f", 3))
    abort = Failure(4, FailureKind.ABORT, "exit code -6", None, ("", -1), -6)
    out = explain_heap([heap, abort])
    assert [(f.rank, f.kind) for f in out] == [(4, FailureKind.NCCL)]
    two = explain_heap([heap, abort, Failure(5, FailureKind.ABORT, "exit code -6", None, ("f", 9), -6)])
    assert [f.kind for f in two] == [FailureKind.EXCEPTION, FailureKind.ABORT, FailureKind.ABORT]


def test_heap_check_is_nccls_only_with_a_frame_inside_nccl_after_it():
    from ncclscope.sources.torch_log import HeapWatch

    w = HeapWatch()
    assert w.read("f", 1, "double free or corruption (out)", "double free or corruption (out)", None) is None
    frame = "[h:1] [ 8] /usr/lib/libnccl.so.2(+0x9c2f1)[0x7f3151a9c2f1]"
    got = w.read("f", 9, frame, frame, None)
    assert got is not None and got.rank is None and "double free or corruption (out)" in got.message
    w = HeapWatch()
    w.read("f", 1, "free(): invalid pointer", "free(): invalid pointer", 3)
    libc = "[h:1] [ 7] /lib/x86_64-linux-gnu/libc.so.6(free+0x73)[0x7f6e1e0a5453]"
    assert w.read("f", 2, libc, libc, None) is None  # glibc's own frame: not NCCL's
    assert w.read("f", 200, frame, frame, None) is None  # too far after the check: another report
