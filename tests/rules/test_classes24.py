"""Round twenty-four's cases (tests/data/classes24/), written from the eighteenth held-out set's misreadings: a task
array's gathered logs tag each line with ``[<job>/<task>] `` (the task's number, the rank of a one-process-a-GPU job);
DeepSpeed's runner raising because a hostfile host is not reachable over passwordless ssh is the launch's config error;
an MPI launch whose program never printed before the user's Ctrl-C (or before the text ends in the runtime's own debug
lines) is the MPI runtime failing to start the program across the nodes (``sources.launch_silence``); a shell prompt
whose path holds ``nccl-tests`` no longer makes a console an nccl-tests table; a log that ends at Lightning's
``Initializing distributed`` lines with no word that the group formed is a possible hang in the rendezvous; the store's
wait for a group's NCCL unique id is read through a terminal's wrap, and where the waiters and their root are the whole
world (their own global ranks the group ranks they print), the root is the hang's culprit (``rules.hang.world_waits``)."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes24")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _silent(lines: list[str]):
    from ncclscope.sources.launch_silence import LaunchSilence

    s = LaunchSilence("c.txt")
    out = [r for n, t in enumerate(lines, 1) if (r := s.feed(n, t)) is not None]
    return out + [r for r in [s.flush()] if r is not None]


def test_a_launch_interrupted_before_its_program_printed_is_silent():
    got = _silent(["u@h:~$ mpirun -np 2 -H a,b ./build/all_reduce_perf -b 8 -e 8", "^C", "u@h:~$ "])
    assert [(r.line, r.launcher, r.interrupted) for r in got] == [(1, "mpirun", True)]


def test_a_launch_that_ended_by_itself_or_printed_is_not():
    assert _silent(["$ mpirun -np 2 ./a.out", "u@h:~$ ls", "^C"]) == []  # a new prompt: it ended with nothing to say
    assert _silent(["$ mpirun -np 2 ./a.out", "Hello from rank 0 of 2", "^C"]) == []
    assert _silent(["$ mpirun --version", "^C"]) == []
    assert _silent(["$ mpirun -np 2 ./a.out", "[h:1] oob:tcp x"]) == []  # one line of chatter is no wait


def test_the_task_arrays_tag_gives_the_task():
    from ncclscope.sources.lines import split_tool_prefixes

    assert split_tool_prefixes("[moe-run/086] Traceback (most recent call last):") == (
        86, True, "Traceback (most recent call last):")
    assert split_tool_prefixes("[rank3]:[moe-run/086] x") == (3, False, "x")  # a launcher's own rank tag wins


def test_a_prompt_path_naming_nccl_tests_is_no_table():
    from ncclscope.ingest.formats import Format, sniff

    assert sniff(b"u@h:~/nccl-tests$ mpirun -np 2 ./build/all_reduce_perf\n^C\n", "c.txt") is Format.LOG
    assert sniff(b"# nccl-tests version 2.17.6 nccl-headers=22907\n# nThread 1 nGpus 1\n", "t.txt") is Format.NCCL_TESTS


def test_waits_of_the_whole_world_name_its_rank_0():
    from ncclscope.rules.hang import UniqueIdWait, world_waits

    def w(me: int, root: int = 0) -> UniqueIdWait:
        return UniqueIdWait(me, root, False, "Socket Timeout")

    assert world_waits([(None, w(1)), (None, w(2)), (None, w(3))], None)  # 0..3: the world as far as the text goes
    assert world_waits([(1, w(1)), (2, w(2))], 3)
    assert not world_waits([(1, w(1)), (2, w(2))], 8)  # ranks 3-7 not among the waiters: a group of the world
    assert not world_waits([(5, w(1)), (6, w(2))], None)  # global ranks 5, 6 waiting as group ranks 1, 2: a subgroup
    assert not world_waits([(None, w(1)), (None, w(2, root=1))], None)  # two roots


def test_jax_coordination_line_states_the_world():
    from ncclscope.sources.records import WorldSize
    from ncclscope.sources.torch_log import parse_torch_lines

    line = ("I0804 14:02:11.208 jax.distributed: Connected to coordination service at 10.70.0.12:8476 "
            "(process_index=0, process_count=512)")
    got = [r.world_size for r in parse_torch_lines([(1, line)], "t.log") if isinstance(r, WorldSize)]
    assert got == [512]
