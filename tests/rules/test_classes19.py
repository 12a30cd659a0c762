"""Round nineteen's cases (tests/data/classes19/), written from the earlier held-out sets' remaining misreadings: a
progress bar still at 0 at the output's end after a launcher's or torch's word that every process joined the group
(no NCCL line in the input) is a possible hang in the first collective; the tracebacks a user's Ctrl-C makes every
process print, standing in two different collectives (the backward pass counted as one), are a desync; an SGLang
scheduler's traceback under its ``[time TPn]`` head is rank n's (where no pipeline stage after the first runs it);
Horovod's trace lines leave each rank's last operation open or finished, and the ranks inside one are waits."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes19")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_a_bar_at_zero_after_the_group_formed_without_nccl_lines():
    from ncclscope.rules.hang import SETUP_GROUP, frozen_at_start

    bar = "Epoch 0:   0%|          | 0/1250 [00:00<?, ?it/s] "
    st = frozen_at_start([bar], SETUP_GROUP, False, False, False)
    assert st is not None and "joined the process group" in st.why
    assert frozen_at_start([bar], None, False, False, False) is None  # nothing says the group formed


@pytest.mark.parametrize("sites,ranks,desync", [
    (["barrier", "the backward pass (its gradients' all-reduce)", "the backward pass (its gradients' all-reduce)"],
     [None, None, None], True),
    (["all_reduce", "barrier", "barrier"], [None, None, None], True),
    (["all_reduce", "all_reduce"], [None, None], False),  # the same collective: no desync
    (["the backward pass (its gradients' all-reduce)"] * 2, [None, None], False),  # only the backward pass
    (["barrier", None], [None, None], False),  # one outside any collective: the stopped job's story
    (["barrier"], [None], False),  # one traceback says nothing of the others
])
def test_interrupted_processes_in_different_collectives(sites, ranks, desync):
    from ncclscope.rules.stacks import interrupted

    r = interrupted(sites, ranks)
    assert (r is not None) is desync
    if r is not None:
        assert r.culprits == ()  # the tracebacks name no rank


def test_interrupted_with_named_ranks_names_the_odd_one():
    from ncclscope.rules.stacks import interrupted

    r = interrupted(["all_reduce", "barrier", "barrier"], [2, 0, 1])
    assert r is not None and r.culprits == (2,)


@pytest.mark.parametrize("frames,site", [
    ([("run_backward", "/v/torch/autograd/graph.py", 823), ("backward", "/v/torch/_tensor.py", 626),
      ("main", "/srv/train.py", 9)], "the backward pass (its gradients' all-reduce)"),
    ([("_next_data", "/v/torch/utils/data/dataloader.py", 1), ("main", "/srv/train.py", 9)], None),
    ([("forward", "/srv/model.py", 40), ("backward", "/v/torch/_tensor.py", 626)], None),  # the program's own frame first
])
def test_where_an_interrupted_thread_stood(frames, site):
    from ncclscope.rules.stacks import site_of

    assert site_of(frames, None) == site


@pytest.mark.parametrize("line,rank", [
    ("[2025-06-02 08:16:20 TP2] Scheduler hit an exception: Traceback (most recent call last):", 2),
    ("[2025-06-02 08:16:20 DP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):", 3),
    ("[2025-06-02 08:16:20 PP1 TP0] Scheduler hit an exception: Traceback (most recent call last):", None),
    ("[2025-06-02 08:16:20 TP2] Prefill batch. #new-seq: 12", None),
])
def test_an_sglang_scheduler_traceback_names_its_rank(line, rank):
    from ncclscope.sources.torch_log import _sglang_traceback

    assert _sglang_traceback(line) == rank


def test_horovod_trace_gives_the_open_operations():
    from ncclscope.sources.horovod_trace import HorovodTraceReader

    r = HorovodTraceReader("t.log")
    lines = ["[09:41:27.100000: T common/operations.cc:1159] [0]: Enqueued a",
             "[09:41:27.100100: T common/operations.cc:1159] [1]: Enqueued a",
             "[09:41:27.100200: T common/operations.cc:633] [1]: Finished performing a",
             "[09:41:27.100300: T common/operations.cc:620] [0]: Performing a",
             "09:41:27 an unrelated line"]
    taken = [r.read(i + 1, t, t) for i, t in enumerate(lines)]
    assert taken == [False] * 5  # trace lines are noted and read on
    waits = list(r.flush())
    assert [(w.rank, w.line) for w in waits] == [(0, 4)]  # rank 1 finished its operation
