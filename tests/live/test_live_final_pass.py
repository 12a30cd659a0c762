"""A crash that lands in the last second of a job is still alerted when the monitor stops."""
from __future__ import annotations

import json
import shutil

from ncclscope.live.monitor import LiveConfig, LiveMonitor


def test_crash_seen_only_at_stop_is_alerted(corpus, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    mon = LiveMonitor(run_dir, LiveConfig(console=False))
    mon.start()
    try:
        shutil.copy(corpus / "crash_rank1_exit" / "stderr.log", run_dir / "stderr.log")
    finally:
        mon.stop()  # at once: no time for the crash grace period to pass
    alerts = [json.loads(line) for line in (run_dir / "alerts.jsonl").read_text().splitlines()]
    crashes = [a for a in alerts if a["kind"] == "crash"]
    assert crashes and crashes[0]["culprit_ranks"] == [1]
