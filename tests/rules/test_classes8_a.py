"""Round eight's cases (tests/data/classes8/c8a_*): stalls that read healthy or unknown. Stack dumps of a frozen job
kept one file per process, the rank stated only by the file's name, show who the others wait for; the dumped
process's command line gives the world size."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from ncclscope.sources.records import StackSnapshot, WorldSize
from ncclscope.sources.stack_dump import StackReader
from wild_cases import DATA

SET = CaseSet(DATA / "classes8")
MINE = SET.names("c8a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _read(file: str, lines: list[str]) -> list:
    reader = StackReader(file)
    out: list = []
    for n, line in enumerate(lines, 1):
        out += reader.read(n, line, line, None)[1]
    return out + list(reader.flush())


DUMP = ["Process 4711: python train.py --world-size 16 --lr 0.1", "Python v3.11.4 (/usr/bin/python3)", "",
        'Thread 4711 (active): "MainThread"', "    all_reduce (torch/distributed/distributed_c10d.py:2050)",
        "    step (train.py:40)", "    <module> (train.py:90)"]


def test_a_dump_alone_in_a_file_takes_the_rank_its_name_states():
    snaps = [r for r in _read("logs/pyspy_rank3_node1.txt", DUMP) if isinstance(r, StackSnapshot)]
    assert [s.rank for s in snaps] == [3]
    assert [s.rank for s in _read("logs/stack-rank-12.log", DUMP) if isinstance(s, StackSnapshot)] == [12]
    assert [s.rank for s in _read("logs/dump_node3.txt", DUMP) if isinstance(s, StackSnapshot)] == [None]  # no rank word
    assert [s.rank for s in _read("logs/framework.txt", DUMP) if isinstance(s, StackSnapshot)] == [None]


def test_a_file_of_several_dumps_names_only_its_first_by_its_name():
    second = [line.replace("4711", "4712") for line in DUMP]
    snaps = [r for r in _read("logs/rank0_stacks.txt", DUMP + second) if isinstance(r, StackSnapshot)]
    assert [s.rank for s in snaps] == [0, None]


def test_a_header_naming_the_rank_wins_over_the_file_name():
    snaps = [r for r in _read("rank0.txt", ["=== rank 6 ===", *DUMP]) if isinstance(r, StackSnapshot)]
    assert [s.rank for s in snaps] == [6]


def test_the_dumped_command_line_gives_the_world_size():
    worlds = [r.world_size for r in _read("a.txt", DUMP) if isinstance(r, WorldSize)]
    assert worlds == [16]
    fairseq = [DUMP[0].replace("--world-size 16", "--distributed-world-size 32"), *DUMP[1:]]
    assert [r.world_size for r in _read("a.txt", fairseq) if isinstance(r, WorldSize)] == [32]
    plain = [DUMP[0].replace(" --world-size 16", ""), *DUMP[1:]]
    assert not [r for r in _read("a.txt", plain) if isinstance(r, WorldSize)]


def test_a_log_ending_at_the_barrier_warning_never_saw_the_barrier_return():
    from ncclscope.rules.hang import barrier_unreturned
    st = barrier_unreturned({"a.log": (9, (1, 0, 3, 2))}, {"a.log": 9}, failed=False, end_known=False)
    assert st is not None and st.waiting == (0, 1, 2, 3)
    assert barrier_unreturned({"a.log": (9, (0, 1))}, {"a.log": 14}, False, False) is None  # lines after it
    assert barrier_unreturned({"a.log": (9, (0, 1))}, {"a.log": 9}, True, False) is None  # something failed
    assert barrier_unreturned({"a.log": (9, (0, 1))}, {"a.log": 9}, False, True) is None  # the job's end is known
    assert barrier_unreturned({"a.log": (9, (0,))}, {"a.log": 9}, False, False) is None  # one rank alone
    two = {"a.log": (9, (0,)), "b.log": (4, (1,))}
    assert barrier_unreturned(two, {"a.log": 9, "b.log": 30}, False, False) is None  # one log goes on


def test_the_barrier_warning_of_each_torch_release_names_its_rank():
    from ncclscope.sources.framework_lines import framework_line
    from ncclscope.sources.records import BarrierEntered
    tail = " using GPU 2 to perform barrier as devices used by this process are currently unknown. This can"
    for body in ("[W ProcessGroupNCCL.cpp:1569] Rank 3" + tail, "[W304 ProcessGroupNCCL.cpp:4115] [PG 0 Rank 3] " + tail,
                 "[W1021 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 Rank 3] " + tail):
        recs = [r for r in framework_line("f", 1, body, body, None) if isinstance(r, BarrierEntered)]
        assert [(r.rank, r.gpu) for r in recs] == [(3, 2)]
    assert not list(framework_line("f", 1, "rank 3 done with barrier", "rank 3 done with barrier", None))


def test_the_tests_table_header_is_read_in_each_releases_columns():
    from ncclscope.sources.nccl_tests import parse_nccl_tests_lines
    from ncclscope.sources.records import TestsTableHeader
    lines = ["#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
             "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
             "#      bytes             N    type      time   algbw   busbw  delta     time   algbw   busbw  delta",
             "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
             "# Avg bus bandwidth    : 8.51"]
    heads = [r.line for r in parse_nccl_tests_lines(enumerate(lines, 1), "t.out") if isinstance(r, TestsTableHeader)]
    assert heads == [1, 2, 3]
