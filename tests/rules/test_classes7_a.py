"""Round seven's cases (tests/data/classes7/c7a_*): whom a hang or a crash names. A rank alone in a collective the
others never issued, or the few ranks shown elsewhere while the rest wait in a group's collective, are the culprits;
the Ray executor's driver missing from its workers' timeouts, a Ray worker's "GPU 0" and torchrun's first observed
failure after an unranked NCCL error name no rank; a Ray worker's failure is the rank that worker stated."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from ncclscope.rules.cause import Failure, explain, root_cause
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.hang import odd_one_out
from ncclscope.rules.ray import driver_rank_absent
from ncclscope.sources.ray_workers import WorkerRanks
from wild_cases import DATA

SET = CaseSet(DATA / "classes7")
MINE = SET.names("c7a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_the_odd_side_is_the_culprit_only_when_the_sides_are_uneven():
    alone = odd_one_out({0}, {1, 2, 3})
    assert alone is not None and alone.culprits == (0,)
    few = odd_one_out(set(range(1, 12)), {0})
    assert few is not None and few.culprits == (0,)
    assert odd_one_out({0}, {1}) is None  # two ranks: either may be the one
    assert odd_one_out({0, 1, 2, 3}, {4, 5, 6, 7}) is None  # half and half: other groups, a cut log
    assert odd_one_out({0, 1}, {2, 3, 4}) is None
    assert odd_one_out({0, 1, 2}, set()) is None


def test_the_ray_driver_missing_from_its_workers_timeouts_is_no_culprit():
    workers = [f"(RayWorkerWrapper pid={40 + r}) [rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught"
               for r in (1, 2, 3)]
    assert driver_rank_absent([0], workers)
    assert not driver_rank_absent([2], workers)  # a worker missing is a worker missing
    plain = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught" for r in (1, 2, 3)]
    assert not driver_rank_absent([0], plain)  # torchrun's rank 0 is a rank like the others


def test_a_ray_worker_line_takes_the_rank_its_worker_stated():
    ranks = WorkerRanks()
    far = "(EngineCore pid=9) (RayWorkerWrapper pid=71, ip=10.2.0.8) "
    assert ranks.rank(far + "INFO x", "INFO x") is None  # nothing stated yet
    said = ("INFO 01-02 10:00:00 [parallel_state.py:1] world_size=4 rank=3 local_rank=1 "
            "distributed_init_method=tcp://10.2.0.7:4000 backend=nccl")
    assert ranks.rank(far + said, said) == 3
    assert ranks.rank(far + "ERROR ValueError: x", "ERROR ValueError: x") == 3
    assert ranks.rank("(RayWorkerWrapper pid=71) ERROR ValueError: x", "ERROR ValueError: x") is None  # another node
    assert ranks.rank("ERROR ValueError: x", "ERROR ValueError: x") is None  # the driver's own line
    train = "INFO config.py:86 -- Setting up process group for: env:// [rank=2, world_size=4]"
    assert ranks.rank("(RayTrainWorker pid=5) " + train, train) == 2
    other = said.replace("rank=3", "rank=1")
    assert ranks.rank(far + other, other) is None  # one worker stating two ranks: none believed


def test_torchrun_first_observed_exit_after_an_unranked_nccl_error_names_no_rank():
    nccl = Failure(None, FailureKind.NCCL, "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled "
                   "system error", None, ("node.txt", 40))
    exits = [Failure(r, FailureKind.EXIT, "exit code 1", None, ("node.txt", 60 + r), 1) for r in (5, 6, 7)]
    summary = Failure(4, FailureKind.EXIT, "exit code 1", None, ("", -1), 1)
    cause = root_cause([nccl, *exits, summary])
    assert cause is not None and cause.first is nccl and cause.culprits == ()
    copy = Failure(None, FailureKind.NCCL, nccl.text, None, ("node.txt", 52))  # another process's traceback of it
    cause = root_cause([nccl, copy, *exits, summary])
    assert cause is not None and cause.first is nccl and cause.culprits == ()
    own = Failure(4, FailureKind.EXIT, "exit code 3", None, ("", -1), 3)  # one exit of its own code: it stands
    cause = root_cause([nccl, *exits, own])
    assert cause is not None and cause.first is own


def test_unranked_exits_after_timeouts_alone_are_their_ends():
    t = [Failure(None, FailureKind.TIMEOUT, "RuntimeError: [gloo] Timed out waiting 1800000ms for recv operation to "
                 "complete", None, ("c.log", 10 * k)) for k in (1, 2)]
    end = Failure(None, FailureKind.EXIT, "exit code 1", None, ("c.log", 40), 1)
    assert root_cause(explain([*t, end])) is None  # no cause left: the stall's echoes (rules.shown: a hang)
    own = Failure(None, FailureKind.EXCEPTION, "ValueError: bad shape", None, ("c.log", 5))
    cause = root_cause(explain([own, *t, end]))
    assert cause is not None and cause.first is own  # an error of its own: the exit stays a crash's
    killed = Failure(None, FailureKind.EXIT, "exit code -11", None, ("c.log", 40), -11)
    cause = root_cause(explain([*t, killed]))
    assert cause is not None and cause.first is not None and cause.first.code == -11
