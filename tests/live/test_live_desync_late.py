"""The live desync alert names the culprit however late the records reach the folder: a mismatch is
judged once every member's call is read, and an alert made before that (a member silent for
DESYNC_MAX_WAIT_S) is followed by ``desync_detail`` once the rest arrive. The records are written
late on purpose and the monitor's clock is given, so nothing here depends on timing."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ncclscope.live import monitor as live_monitor
from ncclscope.live.monitor import LiveConfig, LiveMonitor
from ncclscope.verdict import of_alerts

T0 = 1_800_000_000.0
WORLD = 3


def _w(d: Path, rank: int, *recs: dict[str, Any]) -> None:
    with open(d / f"ncclscope-rank{rank}.jsonl", "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in recs)


def _job(d: Path) -> float:
    """Three ranks, twenty matching all-reduces, all of them read."""
    for r in range(WORLD):
        _w(d, r, {"type": "start", "rank": r, "world": WORLD, "t": T0})
    t = T0
    for s in range(1, 21):
        t = T0 + s * 0.05
        for r in range(WORLD):
            _w(d, r, {"type": "coll", "rank": r, "pg": "0", "seq": s, "op": "allreduce", "numel": 4,
                      "dtype": "float32", "where": "train.py:40 in step", "t": t},
               {"type": "done", "rank": r, "pg": "0", "seq": s, "t": t + 0.01})
    return t


def _call(d: Path, rank: int, numel: int, t: float) -> None:
    _w(d, rank, {"type": "coll", "rank": rank, "pg": "0", "seq": 21, "op": "allreduce", "numel": numel,
                 "dtype": "float32", "where": "train.py:40 in step", "t": t})


def test_a_late_record_is_waited_for_and_the_culprit_named(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    t = _job(tmp_path)
    assert mon.poll_once(now=t + 0.5) == []
    _call(tmp_path, 0, 4, t + 0.1)
    _call(tmp_path, 1, 7, t + 0.1)  # rank 1 is the odd one; rank 2's record has not reached the folder
    assert mon.poll_once(now=t + 1.0) == []
    assert mon.poll_once(now=t + 5.0) == []  # past the short grace: a 1-1 tie names no one, so it waits
    _call(tmp_path, 2, 4, t + 0.1)  # the late record arrives
    (a,) = mon.poll_once(now=t + 6.0)
    assert a["kind"] == "desync" and a["culprit_ranks"] == [1] and a["stuck"]["seq"] == 21, a
    assert "numel=7" in a["message"] and "missing_ranks" not in a
    assert of_alerts(mon.alerts)["culprit_ranks"] == [1]
    assert mon.poll_once(now=t + 40) == []
    mon.stop()


def test_a_record_later_than_the_longest_wait_is_followed_by_the_culprit(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    t = _job(tmp_path)
    mon.poll_once(now=t + 0.5)
    _call(tmp_path, 0, 4, t + 0.1)
    _call(tmp_path, 1, 7, t + 0.1)
    assert mon.poll_once(now=t + 1.0) == []
    (a,) = mon.poll_once(now=t + 1.0 + live_monitor.DESYNC_MAX_WAIT_S)
    assert a["kind"] == "desync" and a["missing_ranks"] == [2] and "no record yet from rank 2" in a["message"]
    assert mon.poll_once(now=t + 2.0 + live_monitor.DESYNC_MAX_WAIT_S) == []  # still waiting for rank 2
    _call(tmp_path, 2, 4, t + 0.1)
    (b,) = mon.poll_once(now=t + 3.0 + live_monitor.DESYNC_MAX_WAIT_S)
    assert b["kind"] == "desync_detail" and b["verdict"] == "desync" and b["culprit_ranks"] == [1], b
    assert b["stuck"] == a["stuck"] and "every rank's record is in" in b["message"]
    mon.stop()


GLOO_WHAT = ("RuntimeError: [enforce fail at /src/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= "
             "op.nbytes. 28 vs 16. Received data size doesn't match expected size. Is there a distributed collective "
             "mismatch in your code?")


def test_a_backend_report_before_the_records_waits_for_them(tmp_path: Path) -> None:
    """gloo's abort reaches the folder before the other ranks' records of the call (a loaded machine flushes them
    later): the alert waits for every rank's end, then names the odd rank and its call, not the collective the
    records read so far would place the report at."""
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    t = _job(tmp_path)
    assert mon.poll_once(now=t + 0.5) == []
    _call(tmp_path, 0, 4, t + 0.1)
    _w(tmp_path, 0, {"type": "exit", "rank": 0, "code": 1, "exception": GLOO_WHAT, "t": t + 0.2})
    assert mon.poll_once(now=t + 1.0) == []
    assert mon.poll_once(now=t + 5.0) == []  # past the crash grace: ranks 1 and 2 have not ended, so it waits
    _call(tmp_path, 1, 7, t + 0.1)
    _call(tmp_path, 2, 4, t + 0.1)
    for r in (1, 2):
        _w(tmp_path, r, {"type": "exit", "rank": r, "code": 1, "exception": "RuntimeError: Connection closed by peer",
                         "t": t + 0.3})
    (a,) = mon.poll_once(now=t + 6.0)
    assert a["kind"] == "desync" and a["culprit_ranks"] == [1] and a["stuck"]["seq"] == 21, a
    assert "numel=7" in a["message"], a["message"]
    mon.stop()


def test_a_backend_report_is_alerted_when_the_ranks_do_not_end(tmp_path: Path) -> None:
    """The ranks neither end nor write: after DESYNC_MAX_WAIT_S the report is alerted on what was read."""
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    t = _job(tmp_path)
    mon.poll_once(now=t + 0.5)
    _call(tmp_path, 0, 4, t + 0.1)
    _w(tmp_path, 0, {"type": "exit", "rank": 0, "code": 1, "exception": GLOO_WHAT, "t": t + 0.2})
    assert mon.poll_once(now=t + 5.0) == []
    assert mon.poll_once(now=t + 20.0) == []  # silent past the hang threshold: no hang while the report waits
    (a,) = mon.poll_once(now=t + 6.0 + live_monitor.DESYNC_MAX_WAIT_S)
    assert a["kind"] == "desync", a
    mon.stop()
