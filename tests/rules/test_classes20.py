"""Round twenty's cases (tests/data/classes20/), written from the fifteenth held-out set's misreadings: a log written as
JSON records (a server's structured logging, Docker's json-file driver) is read as the console its messages hold, a
record a terminal wrapped in two glued back; a Markdown quote (``> ``) before each line is peeled; an SGLang engine's
TP rank inside a Ray worker is no rank of the job; Lightning's per-process device lines as the output's end, after the
group formed, are a possible hang in the model wrap's first broadcast; Horovod's stall inspector says who submitted
what (ranks apart: a desync; ranks that submitted nothing: the culprits of a hang); two collectives of fr_trace's
report each missing the ranks the other has are a desync; a bare CUDA error line of any torch release is a failure;
a thread parked in ProcessGroupNCCL's end of a coalesced batch waits for it; NCCL's "corrupted comm object" is a second
NCCL library in the process."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes20")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_json_records_give_their_messages_lines():
    from ncclscope.sources.json_log import looks_like_json_log, message_lines

    lines = ['{"level":"INFO","fields":{"message":"Starting shard"}}\n',
             '{"level":"ERROR","fields":{"message":"Shard output:\\n[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog',
             ' caught collective operation timeout\\nterminate called"},"target":"x"}\n',
             '{"log":"step 3 loss 1.2\\n","stream":"stdout"}\n',
             'Error: ShardCannotStart\n']
    assert looks_like_json_log(lines[:1])
    got = [(n, t.rstrip("\n")) for n, t in message_lines(enumerate(lines, 1))]
    assert got == [(1, "Starting shard"), (2, "Shard output:"),
                   (3, "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout"),
                   (3, "terminate called"), (4, "step 3 loss 1.2"), (4, ""), (5, "Error: ShardCannotStart")]


def test_a_cut_record_never_closed_is_not_carried_without_bound():
    from ncclscope.sources.json_log import MAX_HELD, message_lines

    lines = ['{"msg":"start of a record cut by the terminal\n'] + ["x" * 1000 + "\n"] * 200
    got = list(message_lines(enumerate(lines, 1)))
    assert max(len(t) for _, t in got) <= MAX_HELD + 1002  # given out once it grows past the bound
    assert sum(len(t) for _, t in got) >= 200 * 1000  # nothing lost


def test_the_hook_records_are_no_json_log():
    from ncclscope.sources.json_log import looks_like_json_log

    assert not looks_like_json_log(['{"type": "coll", "rank": 0, "seq": 1, "op": "allreduce"}'])
    assert not looks_like_json_log(['{"type": "error", "t": 1.5, "rank": 0, "where": "hook", "message": "x"}'])
    assert not looks_like_json_log(["plain text"])


@pytest.mark.parametrize("line,body", [
    ("> [rank3]: RuntimeError: CUDA error", "RuntimeError: CUDA error"),
    (">", ""),
    ("[36m(WorkerDict pid=61288) hello", "hello"),
])
def test_a_quote_and_a_lost_escape_are_peeled(line, body):
    from ncclscope.sources.lines import strip_tool_prefixes

    assert strip_tool_prefixes(line)[1] == body


@pytest.mark.parametrize("ops,world,verdict,culprits", [
    ([("a", [0], True), ("a2", [1], True)], [0, 1], "desync", ()),
    ([("a", [0, 1], True), ("b", [2], True)], [], "desync", ()),
    ([("t", [3], False), ("u", [3], False)], [0, 1, 2, 3], "hang", (3,)),
    ([("t", [0, 1, 3], True)], [0, 1, 2, 3], "hang", (2,)),
    ([("t", [0, 1, 3], True)], [], None, ()),  # the world unknown: who is missing is not said
    ([("t", [0], False), ("u", [1], False)], [0, 1], "desync", ()),
])
def test_horovod_stall_inspector(ops, world, verdict, culprits):
    from ncclscope.rules.stacks import horovod_stalled

    r = horovod_stalled(ops, world)
    assert (r.verdict.value if r else None) == verdict
    if r is not None:
        assert r.culprits == culprits


@pytest.mark.parametrize("reports,world,verdict", [
    ([("allreduce of 0", [2, 3]), ("allgather of 3", [0, 1])], 4, "desync"),
    ([("allreduce of 0", [5]), ("broadcast of 2", [5])], 8, None),  # one rank missing twice
    ([("allreduce of 0", [2, 3]), ("allgather of 3", [0])], 4, None),  # rank 1 missing from neither
    ([("allreduce of 0", [2, 3]), ("allgather of 3", [0, 1])], None, None),  # no world size
])
def test_fr_trace_report_split_between_two_collectives(reports, world, verdict):
    from ncclscope.rules.fr_report import apart

    r = apart(reports, world)
    assert (r.verdict if r else None) == verdict


@pytest.mark.parametrize("func,station", [
    ("c10d::ProcessGroupNCCL::endCoalescing(c10d::OpType)", "collective"),
    ("c10d::ProcessGroupNCCL::groupEnd()", "collective"),
    ("ncclGroupEndInternal(ncclSimInfo*)", None),
])
def test_the_end_of_a_coalesced_batch_is_a_wait(func, station):
    from ncclscope.sources.native_stack import station_of

    assert station_of(func) == station


@pytest.mark.parametrize("msg,cuda", [
    ("cuda runtime error (39) : uncorrectable ECC error encountered at x.cpp:265", True),
    ("CUDA error: an illegal memory access was encountered", True),
    ("CUDA out of memory. Tried to allocate 2.00 GiB", False),  # a bare OOM line: often a logger's repeat
    ("expected a CUDA tensor", False),
])
def test_a_cuda_error_message(msg, cuda):
    from ncclscope.sources.torch_log import CUDA_MSG_RE

    assert (CUDA_MSG_RE.match(msg) is not None) is cuda
