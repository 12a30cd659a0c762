"""Stall judgement on record sequences: hang, all joined, desync, crash, healthy pause, start-up."""
from __future__ import annotations

from ncclscope.live import stall


def _job(world: int, steps: int, dt: float = 0.1, skip: dict[int, int] | None = None,
         t0: float = 1000.0) -> tuple[stall.JobState, float]:
    """``world`` ranks run ``steps`` allreduces dt apart; rank r stops before collective skip[r]."""
    st = stall.JobState()
    skip = skip or {}
    for r in range(world):
        stall.apply(st, r, "start", {"world": world, "t": t0})
    t = t0
    for s in range(1, steps + 1):
        t = t0 + s * dt
        for r in range(world):
            if s >= skip.get(r, 1 << 30):
                continue
            stall.apply(st, r, "coll", {"pg": "0", "seq": s, "op": "allreduce", "numel": 8, "dtype": "float32",
                                        "where": f"train.py:{40 + r} in step (dist.all_reduce)", "t": t})
        if any(s >= v for v in skip.values()):
            continue  # nobody completes a collective someone never joined
        for r in range(world):
            stall.apply(st, r, "done", {"pg": "0", "seq": s, "t": t + dt / 2})
    return st, t


def test_hang_names_the_rank_that_never_joined() -> None:
    st, t = _job(4, 100, skip={2: 100})
    assert stall.judge_hang(st, t + 4.0) is None  # under the 5 s floor
    h = stall.judge_hang(st, t + 6.0)
    assert h is not None
    assert (h.pg, h.seq, h.op, h.culprits, h.waiters) == ("0", 100, "allreduce", (2,), (0, 1, 3))
    assert h.threshold_s == stall.FLOOR_S


def test_every_rank_joined_culprit_unknown() -> None:
    st, t = _job(2, 60)
    for r in range(2):
        stall.apply(st, r, "coll", {"pg": "0", "seq": 61, "op": "allgather", "numel": 4, "dtype": "bf16", "t": t + 0.1})
    assert stall.judge_hang(st, t + 5.0) is None
    h = stall.judge_hang(st, t + 6.0)
    assert h is not None and h.culprits == () and h.waiters == (0, 1) and h.op == "allgather"


def test_missing_rank_counts_as_never_joined() -> None:
    st, t = _job(2, 1, skip={0: 1, 1: 1})
    stall.apply(st, 0, "start", {"world": 3, "t": t})  # world is 3, rank 2 never wrote a record
    for r in range(2):  # the first collective cannot complete without it
        stall.apply(st, r, "coll", {"pg": "0", "seq": 1, "op": "allreduce", "t": t})
    assert stall.judge_hang(st, t + 10) is None  # rank 2 never started: start-up threshold
    h = stall.judge_hang(st, t + 31)
    assert h is not None and 2 in h.culprits and 2 in h.silent


def test_healthy_pause_with_nothing_pending_never_alerts() -> None:
    st, t = _job(4, 200)
    # every rank stops with everything complete: checkpoint, evaluation
    for gap in (10.0, 60.0, 3600.0):
        assert stall.judge_hang(st, t + gap) is None
    for r in range(4):  # heartbeats during the pause change nothing
        stall.apply(st, r, "hb", {"t": t + 30, "step": 7, "pgs": {"0": {"enq": 200, "start": 200, "done": 200}}})
    assert stall.judge_hang(st, t + 100) is None


def test_progress_anywhere_defers_the_hang() -> None:
    st, t = _job(2, 50, skip={1: 50})
    stall.apply(st, 0, "hb", {"t": t + 4, "step": 99, "pgs": {}})  # rank 0 still moves (a new step)
    assert stall.judge_hang(st, t + 8) is None
    assert stall.judge_hang(st, t + 9.5) is not None


def test_startup_uses_a_longer_threshold() -> None:
    st = stall.JobState()
    for r in range(2):
        stall.apply(st, r, "start", {"world": 2, "t": 0.0})
    stall.apply(st, 0, "coll", {"pg": "0", "seq": 1, "op": "broadcast", "t": 1.0})  # rank 1 still loading
    assert not stall.started(st) and stall.threshold(st.gaps, started=False) == stall.STARTUP_S
    assert stall.judge_hang(st, 20.0) is None
    h = stall.judge_hang(st, 40.0)
    assert h is not None and h.culprits == (1,)


def test_young_job_uses_its_largest_gap() -> None:
    st, t = _job(3, 4, dt=0.2, skip={1: 4})  # a hang at the 4th collective: only 3 gaps a rank known
    assert stall.started(st) and len(st.gaps) < stall.MIN_GAPS
    assert stall.threshold(st.gaps) == stall.FLOOR_S
    h = stall.judge_hang(st, t + 5.5)
    assert h is not None and h.culprits == (1,)


def test_threshold_follows_the_rhythm_and_explicit_value_wins() -> None:
    st, t = _job(2, 200, dt=3.0)  # a slow job: 3 s between collectives
    assert stall.threshold(st.gaps) == 3 * 3.0
    assert stall.threshold(st.gaps, 2.5) == 2.5
    stall.apply(st, 0, "coll", {"pg": "0", "seq": 201, "op": "allreduce", "t": t + 1})
    assert stall.judge_hang(st, t + 1 + 8) is None
    assert stall.judge_hang(st, t + 1 + 10) is not None
    assert stall.judge_hang(st, t + 1 + 3, stall_seconds=2.0) is not None


def test_a_rare_long_gap_does_not_raise_the_threshold_much() -> None:
    st, _ = _job(2, 300, dt=0.05)
    st.gaps.append(30.0)  # one checkpoint pause among hundreds of gaps
    assert stall.threshold(st.gaps) == stall.FLOOR_S


def test_desync_majority_and_tie() -> None:
    st, _ = _job(3, 5)
    for r, numel in ((0, 8), (1, 8), (2, 16)):
        pg_seq = stall.apply(st, r, "coll", {"pg": "0", "seq": 6, "op": "allreduce", "numel": numel,
                                             "dtype": "float32", "t": 2000.0})
        assert pg_seq == ("0", 6)
    d = stall.check_desync(st, "0", 6)
    assert d is not None and d.culprits == (2,)
    st2, _ = _job(2, 5)
    stall.apply(st2, 0, "coll", {"pg": "0", "seq": 6, "op": "allreduce", "numel": 8, "dtype": "float32"})
    assert stall.check_desync(st2, "0", 6) is None  # one rank only so far
    stall.apply(st2, 1, "coll", {"pg": "0", "seq": 6, "op": "broadcast", "numel": 8, "dtype": "float32"})
    d2 = stall.check_desync(st2, "0", 6)
    assert d2 is not None and d2.culprits == (1,)  # a 1-1 tie: rank 1's broadcast was never called before
    stall.apply(st2, 0, "coll", {"pg": "0", "seq": 7, "op": "allreduce", "numel": 9, "dtype": "float32"})
    stall.apply(st2, 1, "coll", {"pg": "0", "seq": 7, "op": "allreduce", "numel": 10, "dtype": "float32"})
    d3 = stall.check_desync(st2, "0", 7)
    assert d3 is not None and d3.culprits == ()  # both calls are new: undecided


def test_matching_collectives_are_not_a_desync() -> None:
    st, _ = _job(3, 20)
    assert all(stall.check_desync(st, "0", s) is None for s in range(1, 21))


def test_crash_from_exit_record() -> None:
    st, t = _job(2, 10)
    stall.apply(st, 0, "exit", {"code": 0, "t": t})
    assert stall.crash_of_exit(st, 0) is None
    stall.apply(st, 1, "exit", {"code": 3, "exception": "RuntimeError: boom", "t": t})
    c = stall.crash_of_exit(st, 1)
    assert c is not None and c.code == 3 and "boom" in c.message
    assert st.exited()
    assert stall.judge_hang(st, t + 100) is None  # nobody alive to hang


def test_cleared_when_the_stuck_collective_completes() -> None:
    st, t = _job(2, 30, skip={1: 30})
    h = stall.judge_hang(st, t + 10)
    assert h is not None and not stall.cleared(st, h.pg, h.seq)
    stall.apply(st, 1, "coll", {"pg": "0", "seq": 30, "op": "allreduce", "t": t + 11})
    for r in range(2):
        stall.apply(st, r, "done", {"pg": "0", "seq": 30, "t": t + 11})
    assert stall.cleared(st, "0", 30)


def test_subgroup_hang_and_bad_fields() -> None:
    st, t = _job(4, 30)
    for r in (0, 1):
        stall.apply(st, r, "coll", {"pg": "3", "seq": 1, "op": "allreduce", "t": t})
        stall.apply(st, r, "done", {"pg": "3", "seq": 1, "t": t})
    stall.apply(st, 0, "coll", {"pg": "3", "seq": 2, "op": "allreduce", "t": t + 0.1})
    for bad in ({"seq": "x"}, {"seq": None}, {"pgs": "nope"}, {"t": "soon"}, {"pgs": {"0": 5}}):
        for rt in ("coll", "done", "hb", "stack", "exit", "start"):
            stall.apply(st, 3, rt, dict(bad))
    st.ranks[3].exit_code = None
    h = stall.judge_hang(st, t + 10)
    assert h is not None and (h.pg, h.seq, h.culprits, h.waiters) == ("3", 2, (1,), (0,))


def test_fmt_where_forms() -> None:
    assert stall.fmt_where({"file": "/a/b/train.py", "line": 88, "func": "main", "code": "time.sleep(5)"}) == \
        "train.py:88 in main (time.sleep(5))"
    assert stall.fmt_where("x.py:1 in f") == "x.py:1 in f"
    assert stall.fmt_where(None) is None


def test_a_claimed_world_of_2_20_is_bounded_by_what_is_seen() -> None:
    """One record claiming a million ranks beside four seen: no loop, list or culprit sized by it."""
    import time

    st, t = _job(4, 200, skip={2: 200})
    stall.apply(st, 0, "start", {"world": 1 << 20, "t": 1000.0})
    assert st.world == 1 << 20
    assert st.all_ranks() == [0, 1, 2, 3]
    t0 = time.thread_time()  # CPU time: the wall clock of a loaded machine counts other processes' turns
    for i in range(200):  # what 50 s of a live monitor's passes cost
        h = stall.judge_hang(st, t + 6.0 + i * 0.01)
        stall.pending(st)
        stall.started(st)
    assert time.thread_time() - t0 < 2.0  # a pass over 2^20 ranks each time would take minutes
    assert h is not None and h.culprits == (2,)


def test_a_plausible_world_counts_its_unseen_ranks() -> None:
    """World 6 with ranks 0-3 seen: 4 and 5 never started; with rank 2 seen behind, it is the culprit."""
    st, t = _job(4, 50, skip={0: 1, 1: 1, 2: 1, 3: 1})  # four ranks up, not one collective done
    for r in range(4):
        stall.apply(st, r, "coll", {"pg": "0", "seq": 1, "op": "allreduce", "numel": 8, "dtype": "float32", "t": t})
    stall.apply(st, 0, "start", {"world": 6, "t": 1000.0})
    assert st.all_ranks() == list(range(6))
    h = stall.judge_hang(st, t + 31.0)
    assert h is not None and h.culprits == (4, 5)
    st2, t2 = _job(4, 50, skip={2: 50})
    stall.apply(st2, 0, "start", {"world": 6, "t": 1000.0})
    h2 = stall.judge_hang(st2, t2 + 31.0)
    assert h2 is not None and h2.culprits == (2,)  # what is seen behind beats what is not seen


def test_final_pass_judges_the_job_as_it_was_at_the_first_exit() -> None:
    """A stall, then Ctrl-C: the ranks' last heartbeats on the way out report the failed collective as
    done; judged at the first exit, the stall is still seen, and its culprit."""
    st, t = _job(3, 60, skip={1: 60})
    for r in (0, 2):
        stall.apply(st, r, "hb", {"t": t + 9.0, "step": 0, "pgs": {"0": {"enq": 60, "done": 60}}})
        stall.apply(st, r, "exit", {"code": 1, "exception": "KeyboardInterrupt: ", "t": t + 9.0})
    stall.apply(st, 1, "exit", {"code": 1, "exception": "KeyboardInterrupt: ", "t": t + 8.5})
    assert stall.judge_hang(st, t + 8.5) is None  # every rank has exited: nothing live to judge
    h = stall.judge_hang(st, t + 8.5, include_exited=True)
    assert h is not None and h.culprits == (1,) and h.seq == 60


def test_gloo_counts_left_behind_do_not_move_the_stuck_point_back() -> None:
    """DDP on gloo: the heartbeats' completed counts come from gloo's Flight Recorder, which can stay a
    collective behind; ranks 0 and 1 wait in #17, rank 2 never issued it (as analyze reads it too)."""
    for backend, want in (("gloo", [("0", 17, (2,), (0, 1))]), ("nccl", [("0", 16, (), (2,))])):
        st = stall.JobState()
        for r in range(3):
            stall.apply(st, r, "start", {"world": 3, "t": 100.0, "backend": backend})
        for r, enq, done in ((0, 17, 16), (1, 17, 16), (2, 16, 15)):
            stall.apply(st, r, "hb", {"t": 101.0, "pgs": {"0": {"enq": enq, "start": None, "done": done}}})
        assert stall.pending(st) == want, backend
