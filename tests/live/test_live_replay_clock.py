"""A finished run folder replayed by the live monitor is judged as the job was at its end, whenever it is read.

The shape is a job stopped from outside (the scheduler's SIGTERM through the launcher) after a hang: no rank wrote
an exit record, the wrapper wrote ``exit.txt``, and the ranks' last heartbeats are a few seconds apart (the signal
reached them one after another). Read by the wall clock, a replay a few seconds after the end took the ranks heard
last for the live ones and the others for frozen ("stale"), and the answer changed with the moment of reading: a
loaded machine reads late. The clock is injected; the records' times are this file's own.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ncclscope.live import stall
from ncclscope.live.monitor import LiveConfig, LiveMonitor

T0 = 1_900_000_000.0  # the job's start (the records' clock)
HANG_STEP = 17  # rank 1 stops before this collective; ranks 0 and 2 wait in it
STALL_S = 12.0  # how long after the hang the job was stopped
LAST_HEARD = {0: -1.0, 1: -3.0, 2: 0.0}  # seconds before the newest record: the stop reached rank 1 first


def _records(rank: int) -> list[dict[str, Any]]:
    """Rank ``rank``'s hook records: sixteen allreduces 0.25 s apart, then the hang, heartbeats every 0.2 s."""
    out: list[dict[str, Any]] = [{"type": "start", "t": T0, "rank": rank, "world": 3, "host": "node-a",
                                  "pid": 51000 + rank, "backend": "nccl"}]
    t = T0
    for seq in range(1, HANG_STEP):
        t = T0 + seq * 0.25
        out.append({"type": "coll", "t": t, "rank": rank, "pg": "0", "seq": seq, "op": "allreduce", "numel": 4096,
                    "dtype": "float32", "where": "trainer.py:88 in fit (dist.all_reduce)"})
        out.append({"type": "done", "t": t + 0.02, "rank": rank, "pg": "0", "seq": seq, "dur_ms": 20.0})
        out.append({"type": "hb", "t": t + 0.03, "rank": rank, "step": seq, "pgs": {"0": {"enq": seq, "done": seq}}})
    hang_t = t + 0.25
    enq = HANG_STEP - 1
    if rank != 1:
        enq = HANG_STEP
        out.append({"type": "coll", "t": hang_t, "rank": rank, "pg": "0", "seq": HANG_STEP, "op": "allreduce",
                    "numel": 4096, "dtype": "float32", "where": "trainer.py:88 in fit (dist.all_reduce)"})
    where = "trainer.py:70 in fit (time.sleep)" if rank == 1 else "trainer.py:88 in fit (dist.all_reduce)"
    end = hang_t + STALL_S
    hb = hang_t + 0.2
    while hb < end + LAST_HEARD[rank]:
        out.append({"type": "hb", "t": hb, "rank": rank, "step": HANG_STEP - 1,
                    "pgs": {"0": {"enq": enq, "done": HANG_STEP - 1}}})
        if abs(hb - (hang_t + 6.0)) < 0.1:  # the monitor's dump request was answered
            out.append({"type": "stack", "t": hb, "rank": rank, "reason": "request", "where": where,
                        "frames": [where]})
        hb += 0.2
    out.append({"type": "hb", "t": end + LAST_HEARD[rank], "rank": rank, "step": HANG_STEP - 1,
                "pgs": {"0": {"enq": enq, "done": HANG_STEP - 1}}})
    return out


@pytest.fixture
def stopped_job(tmp_path: Path) -> tuple[Path, float]:
    """The finished folder and the time of its newest record."""
    run = tmp_path / "run"
    run.mkdir()
    newest = 0.0
    for rank in LAST_HEARD:
        recs = _records(rank)
        newest = max(newest, *(r["t"] for r in recs))
        (run / f"ncclscope-rank{rank}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (run / "exit.txt").write_text("exit=143\n")
    return run, newest


def _replay(run: Path, now: float) -> dict[str, Any]:
    """What ``tests/judgements.py`` takes of a replay: verdict, culprits, stuck collective, rank states; and the
    snapshot's pending collectives, judged at the same time."""
    mon = LiveMonitor(run, LiveConfig(console=False, write=False), clock=lambda: now)
    try:
        mon.run_once()
        snap = mon.snapshot()
    finally:
        mon.stop()
    v = snap["verdict"]
    return {"verdict": v["verdict"], "culprits": v["culprit_ranks"], "stuck": v["stuck"],
            "states": {r["rank"]: r["state"] for r in snap["ranks"]}, "pending": snap["pending"]}


@pytest.mark.parametrize("late_s", [4.5, 3600.0], ids=["seconds-later", "an-hour-later"])
def test_a_finished_folder_is_judged_alike_just_after_its_end_and_later(stopped_job, late_s):
    """Just after the end and later (4.5 s: ranks 0 and 1 silent for longer than the 5 s threshold by then, rank 2
    not; an hour: all silent) the replay gives the same verdict, culprit and rank states: the job as it ended."""
    run, newest = stopped_job
    assert stall.FLOOR_S == 5.0  # the threshold these times are chosen around (no stall time set, steady rhythm)
    first = _replay(run, newest + 0.1)
    assert (first["verdict"], first["culprits"]) == ("hang", [1]), first
    assert first["states"] == {0: "stuck_in_collective", 1: "stuck_outside_nccl", 2: "stuck_in_collective"}, first
    assert _replay(run, newest + late_s) == first


def test_a_running_job_is_still_judged_by_the_clock(stopped_job):
    """Without the launcher's end (no exit.txt, no exit record) the job may still run: silence is measured to now,
    so a rank that stopped writing while the others go on is the one named, and a stall is aged to now."""
    run, newest = stopped_job
    (run / "exit.txt").unlink()
    # 4.5 s after the newest record rank 0 (heard 5.5 s ago) and rank 1 (7.5 s ago) went silent, rank 2 did not
    late = _replay(run, newest + 4.5)
    assert late["pending"] and late["pending"][0]["never_joined"] == [], late  # only rank 2 heard: no one named
    assert _replay(run, newest + 0.1)["pending"][0]["never_joined"] == [1]
