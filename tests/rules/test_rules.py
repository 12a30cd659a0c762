"""The rules module: one definition of each judgement, and the same answer live and offline on a
folder of hook records in the shapes that used to split them."""
from __future__ import annotations

import json
from pathlib import Path

from ncclscope import rules
from ncclscope.rules import Failure, FailureKind, Side
from ncclscope.rules.cause import mismatch_is_echo, vanished
from ncclscope.rules.exits import ExitClass, exit_class, from_outside

from judgements import assert_same_judgement, judgements

T0 = 1_796_000_000.0


def test_exit_classes_one_definition() -> None:
    assert [exit_class(c) for c in (0, 1, 3, -15, 143, -9, 137, 124, -2, 130, -6, 134, -11)] == [
        ExitClass.CLEAN, ExitClass.OWN, ExitClass.OWN, ExitClass.KILLED, ExitClass.KILLED, ExitClass.KILLED,
        ExitClass.KILLED, ExitClass.KILLED, ExitClass.INTERRUPT, ExitClass.INTERRUPT, ExitClass.ABORT,
        ExitClass.ABORT, ExitClass.FATAL]
    assert from_outside(-15) and from_outside(130) and not from_outside(-6) and not from_outside(1)


def test_failure_kinds_of_messages() -> None:
    k = rules.failure_kind
    assert k("KeyboardInterrupt: ") is FailureKind.INTERRUPT
    assert k("torch.distributed.elastic.multiprocessing.api.SignalException: Process 17 got signal: 15") \
        is FailureKind.INTERRUPT
    assert k("RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.7]:41") \
        is FailureKind.PEER
    assert k("RuntimeError: [gloo/transport/tcp/pair.cc:534] Read error [10.0.0.7]:41: Connection reset by peer") \
        is FailureKind.PEER
    assert k("torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error, "
             "NCCL version 2.21.5 ncclRemoteError") is FailureKind.PEER
    assert k("MemoryError: out of memory at step 7") is FailureKind.OOM
    assert k("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") is FailureKind.OOM
    assert k("RuntimeError: CUDA error: an illegal memory access was encountered") is FailureKind.CUDA
    assert k("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.") is FailureKind.TIMEOUT
    assert k("RuntimeError: simulated failure on rank 1 at step 5") is FailureKind.EXCEPTION
    assert k("", 3) is FailureKind.EXIT and k("", -15) is FailureKind.KILLED and k("", -11) is FailureKind.FATAL


def _f(rank: int | None, kind: FailureKind, t: float | None = None, line: int = 0, text: str = "x") -> Failure:
    return Failure(rank, kind, text, t, ("stderr.log", line))


def test_root_cause_is_the_earliest_cause_not_the_first_line() -> None:
    fs = [_f(0, FailureKind.PEER, T0 + 1, 1), _f(2, FailureKind.TIMEOUT, T0 + 2, 2), _f(1, FailureKind.OOM, T0 + 0.5, 9),
          _f(0, FailureKind.KILLED, None, 30)]
    c = rules.root_cause(fs)
    assert c is not None and c.verdict == "crash" and c.ranks == (1,) and c.first is not None
    assert c.first.kind is FailureKind.OOM and len(c.echoes) == 3


def test_interrupt_or_kill_after_a_stall_leaves_the_hang() -> None:
    fs = [_f(r, FailureKind.INTERRUPT, T0 + 10) for r in range(3)] + [_f(0, FailureKind.PEER, None, 5)]
    c = rules.root_cause(fs, stall_t=T0 + 4, stalled=True)
    assert c is not None and c.verdict == "hang"
    assert rules.root_cause(fs) is not None and rules.root_cause(fs).verdict == "stopped"  # type: ignore[union-attr]
    # a cause before the stall is the story; one after it is not
    assert rules.root_cause(fs + [_f(1, FailureKind.EXCEPTION, T0 + 1)], T0 + 4, True).verdict == "crash"  # type: ignore[union-attr]
    assert rules.root_cause(fs + [_f(1, FailureKind.EXCEPTION, T0 + 9)], T0 + 4, True).verdict == "hang"  # type: ignore[union-attr]


def test_mismatch_with_a_side_that_failed_right_after_is_an_echo() -> None:
    oom = [_f(0, FailureKind.OOM, T0 + 0.3)]
    assert mismatch_is_echo([[0], [1, 2]], T0, oom)
    assert not mismatch_is_echo([[0], [1, 2]], T0, [_f(0, FailureKind.OOM, T0 + 300)])  # long after: its consequence
    assert not mismatch_is_echo([[0], [1, 2]], T0, [_f(0, FailureKind.PEER, T0 + 0.3)])  # an echo explains nothing
    assert not mismatch_is_echo([[0, 3], [1, 2]], T0, oom)  # the side is not only failed ranks


def test_vanished_rank_by_record_times() -> None:
    fs = [_f(0, FailureKind.PEER, T0 + 5), _f(2, FailureKind.PEER, T0 + 5)]
    v = vanished({0: T0 + 6, 1: T0 + 2, 2: T0 + 6}, ended=[0, 2], failures=fs, end_t=T0 + 6)
    assert [f.rank for f in v] == [1] and v[0].is_cause
    assert vanished({0: T0 + 6, 1: T0 + 2}, [0], [], T0 + 6) == []  # nothing failed: a silent rank is no crash


def test_desync_odd_ranks_one_rule() -> None:
    a, b = Side((0, 1, 2), ("allreduce", "4", "float32")), Side((3,), ("allreduce", "7", "float32"))
    assert rules.odd_ranks([a, b], {}) == ((3,), "majority")
    x, y = Side((0,), ("allreduce", "4", "f"), "t.py:50"), Side((1,), ("broadcast", "4", "f"), "t.py:61")
    assert rules.odd_ranks([x, y], {("where", "t.py:50"): frozenset({0, 1})}) == ((1,), "novel call")
    assert rules.odd_ranks([x, y], {}) == ((), None)  # both calls new: undecided
    # without call sites on every side, the signature decides
    x2 = Side((0,), ("allreduce", "4", "f"), None)
    assert rules.odd_ranks([x2, y], {("sig", ("allreduce", "4", "f")): frozenset({0, 1})}) == ((1,), "novel call")


def test_bounded_world_and_stuck_collective() -> None:
    assert rules.bounded_world(1 << 20, [0, 1, 2, 3]) == [0, 1, 2, 3]
    assert rules.bounded_world(6, [0, 1, 2, 3]) == list(range(6))
    st = rules.stuck_collective({0: 10, 1: 9, 2: 10, 3: None}, {0: 9, 1: 9, 2: 9})
    assert st is not None and (st.seq, st.never, st.waiting) == (10, (1,), (0, 2))
    st = rules.stuck_collective({0: 1, 1: 1, 2: None}, {})
    assert st is not None and st.never == (2,)
    assert rules.stuck_collective({0: 5, 1: 5}, {0: 5, 1: 5}) is None


def _hook_folder(d: Path, world: int, steps: int, tail: dict[int, list[dict]]) -> None:
    """``world`` ranks' hook records: start, ``steps`` all-reduces with heartbeats, then ``tail``."""
    for r in range(world):
        recs: list[dict] = [{"type": "start", "rank": r, "world": world, "host": "node7", "pid": 4100 + r, "t": T0}]
        for s in range(1, steps + 1):
            t = T0 + s * 0.1
            recs.append({"type": "coll", "rank": r, "pg": "0", "seq": s, "op": "allreduce", "numel": 4,
                         "dtype": "float32", "where": "train.py:50 in step (dist.all_reduce)", "t": t})
            recs.append({"type": "done", "rank": r, "pg": "0", "seq": s, "t": t + 0.05, "dur_ms": 1.0})
        recs.append({"type": "hb", "rank": r, "t": T0 + steps * 0.1 + 0.06, "step": steps,
                     "pgs": {"0": {"enq": steps, "start": None, "done": steps}}})
        recs += tail.get(r, [])
        (d / f"ncclscope-rank{r}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in recs))


def test_oom_rank_whose_last_call_mismatches_is_the_crash_culprit_live_and_offline(tmp_path: Path) -> None:
    """Rank 0 runs out of memory and calls a barrier on its way down while ranks 1-2 all-reduce #21;
    they then see the connection close. Not a desync: a crash of rank 0, in both engines."""
    t = T0 + 2.1

    def coll(r: int, op: str) -> dict:
        return {"type": "coll", "rank": r, "pg": "0", "seq": 21, "op": op, "numel": 1 if op == "barrier" else 4,
                "dtype": "float32", "where": f"train.py:{70 if op == 'barrier' else 50} in step", "t": t}

    tail = {0: [coll(0, "barrier"), {"type": "exit", "rank": 0, "code": 1, "t": t + 0.3,
                                     "exception": "MemoryError: out of memory in forward at step 21"}]}
    for r in (1, 2):
        tail[r] = [coll(r, "allreduce"), {"type": "exit", "rank": r, "code": 1, "t": t + 0.5,
                                          "exception": "RuntimeError: [pair.cc:553] Connection closed by peer "
                                                       "[10.0.0.7]:41"}]
    _hook_folder(tmp_path, 3, 20, tail)
    analyzed, live = judgements(tmp_path)
    assert analyzed["verdict"] == "crash" and analyzed["culprit_ranks"] == [0], analyzed["headline"]
    assert_same_judgement(analyzed, live)


def test_hang_then_ctrl_c_stays_a_hang_live_and_offline(tmp_path: Path) -> None:
    """Rank 1 stops before #21 while ranks 0 and 2 wait in it; 20 s later the user presses Ctrl-C: every
    rank ends with KeyboardInterrupt (gloo's peers may say the connection closed). A hang of rank 1."""
    t = T0 + 2.1
    tail: dict[int, list[dict]] = {}
    for r in range(3):
        recs: list[dict] = []
        if r != 1:
            recs.append({"type": "coll", "rank": r, "pg": "0", "seq": 21, "op": "allreduce", "numel": 4,
                         "dtype": "float32", "where": "train.py:50 in step (dist.all_reduce)", "t": t})
        recs += [{"type": "hb", "rank": r, "t": t + k, "step": 20, "pgs": {"0": {"enq": 21 if r != 1 else 20,
                  "start": None, "done": 20}}} for k in range(1, 20)]
        recs.append({"type": "stack", "rank": r, "reason": "stall", "t": t + 3.0,
                     "where": "train.py:77 in main (time.sleep)" if r == 1 else "train.py:50 in step"})
        recs.append({"type": "exit", "rank": r, "code": 1, "t": t + 20.0 + r * 0.01,
                     "exception": "KeyboardInterrupt: " if r != 2 else "RuntimeError: Connection closed by peer"})
        tail[r] = recs
    _hook_folder(tmp_path, 3, 20, tail)
    analyzed, live = judgements(tmp_path)
    assert analyzed["verdict"] == "hang" and analyzed["culprit_ranks"] == [1], analyzed["headline"]
    assert analyzed["stuck"]["seq"] == 21
    assert_same_judgement(analyzed, live)


def test_an_abort_is_an_echo_only_after_a_timeout() -> None:
    """SIGABRT after the rank's watchdog timeout: PyTorch tearing it down. Without one (gloo's
    ``terminate called after throwing gloo::EnforceNotMet``): the rank's own failure."""
    from ncclscope.rules.cause import explain_aborts

    abort0 = Failure(0, FailureKind.ABORT, "exit code -6", None, ("stderr.log", 40), -6)
    assert explain_aborts([abort0])[0].kind is FailureKind.FATAL
    c = rules.root_cause(explain_aborts([abort0, _f(1, FailureKind.PEER, None, 30)]))
    assert c is not None and c.verdict == "crash" and c.ranks == (0,)
    timeout0 = _f(0, FailureKind.TIMEOUT, None, 10)
    assert explain_aborts([timeout0, abort0])[1].kind is FailureKind.ABORT
    unknown_rank = Failure(None, FailureKind.ABORT, "exit code -6", None, ("stderr.log", 51), -6)
    assert explain_aborts([timeout0, unknown_rank])[1].kind is FailureKind.ABORT


def test_an_exit_after_an_echo_is_that_echo() -> None:
    """torchrun's "first observed failure" can be a rank that exited 1 because its collective timed out
    or its peer went away (a size desync under gloo): not a cause; an exit code alone still is."""
    from ncclscope.rules.cause import explain_exits

    exit2 = Failure(2, FailureKind.EXIT, "exit code 1", None, ("", -1), 1)
    fs = explain_exits([_f(2, FailureKind.TIMEOUT, T0 + 60, 33), exit2])
    assert fs[1].kind is FailureKind.TIMEOUT and not fs[1].is_cause
    assert mismatch_is_echo([[2], [0, 1, 3]], T0, fs) is False
    assert explain_exits([exit2])[0].kind is FailureKind.EXIT  # nothing else known: its own
    own = explain_exits([_f(2, FailureKind.OOM, T0, 3), _f(2, FailureKind.PEER, T0 + 1, 4), exit2])
    assert own[2].kind is FailureKind.EXIT


GLOO_WHAT = ("[enforce fail at /src/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 8 vs 4. "
             "Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?")


def test_backend_mismatch_texts_are_a_mismatch_not_an_exception() -> None:
    k = rules.failure_kind
    assert k(f"gloo::EnforceNotMet: {GLOO_WHAT}") is FailureKind.MISMATCH
    assert k("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
             "CollectiveFingerPrint(OpType=ALLREDUCE)") is FailureKind.MISMATCH
    assert k("torch.distributed.DistBackendError: Mismatched collective detected on rank 3") is FailureKind.MISMATCH
    assert FailureKind.MISMATCH not in rules.cause.CAUSES


def test_a_mismatch_abort_is_a_desync_and_the_sigabrt_its_echo() -> None:
    """gloo's terminate line has no rank; the one rank the launcher saw abort is the one that saw it."""
    fs = [Failure(None, FailureKind.MISMATCH, f"gloo::EnforceNotMet: {GLOO_WHAT}", None, ("stderr.log", 6)),
          Failure(2, FailureKind.PEER, "RuntimeError: Connection closed by peer", None, ("stderr.log", 20)),
          Failure(0, FailureKind.ABORT, "exit code -6", None, ("", -1), -6),
          Failure(1, FailureKind.KILLED, "exit code -15", None, ("stderr.log", 51), -15)]
    ex = rules.cause.explain(fs)
    assert [(f.rank, f.kind) for f in ex if f.kind is FailureKind.MISMATCH] == [(0, FailureKind.MISMATCH)] * 2
    assert not any(f.is_cause for f in ex)  # before: rank 0's SIGABRT with no timeout was a FATAL cause
    c = rules.root_cause(ex)
    assert c is not None and c.verdict == "desync" and c.first is not None and c.first.rank == 0 and c.ranks == ()
    # two ranks aborted: the line's rank is not guessed
    two = rules.cause.explain(fs + [Failure(1, FailureKind.ABORT, "exit code -6", None, ("", -1), -6)])
    assert any(f.kind is FailureKind.MISMATCH and f.rank is None for f in two)
    # a cause of its own well before the mismatch stays the cause
    early = [Failure(1, FailureKind.OOM, "OutOfMemoryError", T0, ("a", 1)),
             Failure(0, FailureKind.MISMATCH, GLOO_WHAT, T0 + 5, ("b", 1))]
    assert rules.root_cause(early).verdict == "crash"  # type: ignore[union-attr]


def test_mismatch_collective_and_last_call_culprits() -> None:
    from ncclscope.rules.desync import last_call_culprits, mismatch_collective

    # the aborting rank's records end at 20 (its buffer lost); the others completed 24, which it joined
    enq = {"0": {0: 20, 1: 24, 2: 24}}
    done = {"0": {0: 20, 1: 24, 2: 24}}
    assert mismatch_collective(enq, done, 0) == ("0", 25)
    assert mismatch_collective(enq, done) == ("0", 21)  # no reporter known: the hang rule's first not completed
    assert mismatch_collective({"0": {0: 26, 1: 24, 2: 26}}, {"0": {0: 24, 1: 24, 2: 24}}) == ("0", 25)
    assert mismatch_collective({}, {}) is None
    f32, f64 = ("allreduce", "1", "float32"), ("allreduce", "1", "float64")
    last = {0: (f32, "train.py:143"), 1: (f64, "train.py:141"), 2: (f32, "train.py:143")}
    assert last_call_culprits(last, {}) == ((1,), "majority")
    assert last_call_culprits({0: (f32, "t:1"), 1: (f32, "t:1")}, {}) == ((), None)
