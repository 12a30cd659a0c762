"""Round eleven's cases (tests/data/classes11/c11b_*): setup faults read as crashes or hangs. Processes that quote,
after PyTorch's NCCL error, one and the same unreachable address as NCCL's last error before any communicator came up
(no NCCL_DEBUG output) show the network setting between the hosts (NCCL_SOCKET_IFNAME), not a peer that failed; the
same quote after the communicator came up and trained stays a crash. c10d's client failing at a loopback address while
the ranks span machines is MASTER_ADDR set to localhost. In one console, NCCL's lines and its 'set by environment' lines
from some hosts while another host's process fails in NCCL without a line of NCCL's: the settings never reached it.
A multi-node Slurm batch job whose output holds the first node's rank claims only never started the program elsewhere
(no srun); one srun line that gives every node's launcher the same node rank (--machine_rank 0) never forms
the group. Queue pairs over RoCE that time out on their way to RTR with a GID index the job set are that GID not
routing, unless the WARN shows routable GIDs on both ends."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes11")
MINE = SET.names("c11b_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _dist_error(last_error: str | None, rank: int | None, line: int):
    from ncclscope.model import EventKind, Evidence, LogEvent

    return LogEvent(kind=EventKind.DIST_ERROR, rank=rank, text="torch.distributed.DistBackendError: NCCL error",
                    data={"last_error": last_error}, evidence=Evidence("f.log", line, "x"))


@pytest.mark.parametrize("last_error,unreachable", [
    ("socketStartConnect: Connect to 10.1.2.3<4000> failed : No route to host", True),
    (("socketPollConnect: connect to 10.1.2.3<4000> returned Network is unreachable, exceeded error retry count "
      "after 35 attempts"), True),
    ("socketStartConnect: Connect to 10.1.2.3<4000> failed : Connection refused", False),
    (None, False),
])
def test_the_last_error_quoted_after_an_nccl_error_counts_as_the_processes_warning(last_error, unreachable):
    from ncclscope.detectors.config import _unreachable_text

    assert (_unreachable_text(_dist_error(last_error, 1, 5)) is not None) is unreachable


def test_untagged_tracebacks_are_each_their_own_process_and_tagged_ones_their_rank():
    from ncclscope.detectors.config import _reporter

    assert _reporter(_dist_error("x", None, 5)) != _reporter(_dist_error("x", None, 9))
    assert _reporter(_dist_error("x", 3, 5)) == _reporter(_dist_error("x", 3, 9)) == "3"


@pytest.mark.parametrize("text,target", [
    (("[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 111 - "
      "Connection refused)."), "localhost:29500"),
    (("torch.distributed.DistNetworkError: The client socket has timed out after 900000ms while trying to connect "
      "to (127.0.0.1, 29500)."), "127.0.0.1:29500"),
    ("The client socket has failed to connect to any network address of (localhost, 29501).", "localhost:29501"),
    ("The client socket has failed to connect to [node-a]:29500 (errno: 111 - Connection refused).", None),
])
def test_a_store_client_failing_at_a_loopback_address(text, target):
    from ncclscope.rules.init_address import loopback_targets

    assert loopback_targets([text]) == ((target,) if target else ())


@pytest.mark.parametrize("text,nodes,spans", [
    ("rank 10/16 local_rank 2 -> init_process_group", 1, True),
    ("worker up: RANK=5 LOCAL_RANK=1 WORLD_SIZE=8", 1, True),
    ("  rank      : 3 (local_rank: 1)", 1, True),
    ("worker up: RANK=2 LOCAL_RANK=2 WORLD_SIZE=4", 1, False),
    ("world_rank 3 local_rank 1", 1, False),
    ("step 10 loss 2.0", 2, True),
])
def test_a_job_spans_machines_where_a_rank_is_past_its_local_rank_or_nodes_are_stated(text, nodes, spans):
    from ncclscope.rules.init_address import spans_machines

    assert spans_machines([text], nodes) is spans


def test_a_loopback_store_needs_a_job_across_machines():
    from ncclscope.rules.init_address import loopback_rendezvous

    refused = ["The client socket has failed to connect to [localhost]:29500 (errno: 111 - Connection refused)."]
    assert loopback_rendezvous(refused, ["RANK=4 LOCAL_RANK=0"], 1) == ("localhost:29500",)
    assert loopback_rendezvous(refused, ["RANK=0 LOCAL_RANK=0"], 1) == ()
    assert loopback_rendezvous(["failed to connect to [10.0.0.1]:29500"], [], 2) == ()


@pytest.mark.parametrize("line,host", [
    ("trainer-1: Test NCCL failure common.cu:958 'unhandled system error'", "trainer-1"),
    (("hpc-n2: Test NCCL failure common.cu:1005 'internal error - please report this issue to the NCCL developers "
      "(run with NCCL_DEBUG=INFO for details)'"), "hpc-n2"),
    (" .. hpc-n2 pid 20877: Test failure common.cu:891", None),
    ("[rank1]: RuntimeError: NCCL error: unhandled system error", None),
])
def test_nccl_tests_failure_line_names_its_host(line, host):
    from ncclscope.rules.environment import TEST_FAILURE_HOST_RE

    m = TEST_FAILURE_HOST_RE.match(line)
    assert (m.group("host") if m else None) == host


def test_a_host_that_failed_in_nccl_without_nccl_lines_while_others_print_them():
    from ncclscope.rules.environment import quiet_hosts

    assert quiet_hosts({"a"}, {"a", "b"}, ["b", "a"]) == ("b",)
    assert quiet_hosts({"a", "b"}, {"a", "b"}, ["b"]) == ()  # both print: the environment reached both
    assert quiet_hosts(set(), {"a", "b"}, ["b"]) == ()  # no NCCL line anywhere: NCCL_DEBUG was set nowhere
    assert quiet_hosts({"a"}, {"a"}, ["c"]) == ()  # a host the job does not place ranks on


@pytest.mark.parametrize("claims,world,nodes,started", [
    ([0, 1, 2, 3], 8, 2, True),
    ([1, 0], 6, 3, True),
    ([0, 1, 2, 3, 4, 5, 6, 7], 8, 2, False),  # every node ran
    ([0, 1, 2], 8, 2, False),  # the first node not whole: something else
    ([0, 1, 4, 5], 8, 2, False),  # a process of another node spoke
    ([0, 1, 2, 3], 8, 1, False),  # one node: nothing else to start
    ([0, 1, 2, 3], None, 2, False),
])
def test_only_the_first_nodes_ranks_claimed(claims, world, nodes, started):
    from ncclscope.rules.launch import first_node_only

    assert (first_node_only(claims, world, nodes) is not None) is started


@pytest.mark.parametrize("line,flag", [
    (("+ srun --kill-on-bad-exit=1 bash -c 'accelerate launch --multi_gpu --num_machines 2 --num_processes 4 "
      "--machine_rank 0 --main_process_ip=gn01 check.py'"), "--machine_rank 0"),
    ("srun --nodes=2 --ntasks-per-node=1 torchrun --nnodes=2 --nproc_per_node=8 --node_rank=0 train.py",
     "--node_rank=0"),
    ("srun -N1 -n1 -w gpu-n18 bash -c 'accelerate launch --num_machines 2 --machine_rank 1 x.py'", None),
    ("srun bash -c 'accelerate launch --num_machines 2 --machine_rank $SLURM_NODEID x.py'", None),
    ("srun torchrun --nnodes=1 --node_rank=0 train.py", None),
    ("torchrun --nnodes=2 --node_rank=0 train.py", None),
])
def test_one_srun_line_with_a_node_rank_written_out(line, flag):
    from ncclscope.rules.launch import fixed_node_rank

    found = fixed_node_rank([line])
    assert (found[0] if found else None) == flag


@pytest.mark.parametrize("text,routable", [
    (("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_2:1, curr state INIT, next state RTR, "
      "local GID index 3, local GID ::ffff:10.60.0.12, remote GID ::ffff:10.60.0.11"), True),
    (("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_2:1, curr state INIT, next state RTR, "
      "local GID index 0, local GID fe80::a288:c2ff:fe1b:3c10, remote GID fe80::a288:c2ff:fe1b:4a22"), False),
    ("Call to ibv_modify_qp failed with error Connection timed out", False),  # no GID shown: the setting may be it
])
def test_a_modify_qp_warn_that_shows_routable_gids_is_not_the_gid_index(text, routable):
    from ncclscope.detectors.config import _gids_routable

    assert _gids_routable(text) is routable
