"""PyTorch's watchdog lines without the hook: the hang alert is judged within the process group of the first
timeout (a rank's counters of another group are other numbers) and says how sure it is.

Own lines in PyTorch 2.6's formats (``[PG ID 2 PG GUID 9 Rank 4] Exception (either an error or timeout)
detected by watchdog at work: N, last enqueued NCCL work: E, last completed NCCL work: C``): the shape of
modelscope/DiffSynth-Studio#458 (timeouts in two process groups of one job), see tests/live/data/SOURCE.md.
"""
from __future__ import annotations

from pathlib import Path

from ncclscope.live.monitor import LiveConfig, LiveMonitor


def _timeout(r: int, seq: int) -> str:
    return (f"[rank{r}]:[E318 07:39:53.79263{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=56320, NumelOut=56320, "
            f"Timeout(ms)=600000) ran for 60008{r} milliseconds before timing out.\n")


def _status(r: int, pg: str, guid: str, at: int, enq: int, done: int) -> str:
    return (f"[rank{r}]:[E318 07:39:53.79277{r} ProcessGroupNCCL.cpp:1785] [PG ID {pg} PG GUID {guid} Rank {r}] "
            f"Exception (either an error or timeout) detected by watchdog at work: {at}, last enqueued NCCL work: "
            f"{enq}, last completed NCCL work: {done}.\n")


def test_counters_of_another_group_name_no_culprit(tmp_path: Path) -> None:
    lines = [_timeout(0, 2044), _status(0, "0", "0(default_pg)", 2044, 2044, 2043),
             _timeout(1, 2044), _status(1, "0", "0(default_pg)", 2044, 2044, 2043),
             _status(4, "2", "9", 610, 616, 609)]  # rank 4's tensor-parallel group: its own numbers
    (tmp_path / "stderr.log").write_text("".join(lines))
    (a,) = LiveMonitor(tmp_path, LiveConfig(console=False, write=False)).run_once()
    assert a["kind"] == "hang" and a["stuck"]["seq"] == 2044 and a["stuck"]["pg"] == "0"
    assert a["culprit_ranks"] == [] and a["waiting_ranks"] == [0, 1], a  # rank 4 waits in another group
    assert a["certainty"]["level"] == "confirmed"


def test_a_rank_behind_by_its_own_counters_is_confirmed(tmp_path: Path) -> None:
    lines = [_timeout(0, 2044), _status(0, "0", "0(default_pg)", 2044, 2044, 2043),
             _status(3, "0", "0(default_pg)", 2043, 2043, 2043)]
    (tmp_path / "stderr.log").write_text("".join(lines))
    (a,) = LiveMonitor(tmp_path, LiveConfig(console=False, write=False)).run_once()
    assert a["culprit_ranks"] == [3] and a["certainty"]["level"] == "confirmed", a


def _old_timeout(r: int) -> str:  # torch before 1.11: no sequence number (heldout21's accel167 and accel223 shapes)
    return (f"[E ProcessGroupNCCL.cpp:587] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(OpType=ALLGATHER, Timeout(ms)=1800000) ran for 180090{r} milliseconds before timing out.\n")


def test_timeouts_without_a_sequence_number_are_a_hang_live_as_offline(tmp_path: Path) -> None:
    from ncclscope.analysis import analyze_paths

    (tmp_path / "stdout.log").write_text(_old_timeout(0) + _old_timeout(1))
    (a,) = LiveMonitor(tmp_path, LiveConfig(console=False, write=False)).run_once()
    assert a["kind"] == "hang" and a["stuck"] is None and a["waiting_ranks"] == [0, 1], a
    assert analyze_paths([tmp_path / "stdout.log"], cache=False).decision.verdict.value == "hang"


def test_a_launchers_report_after_the_childs_error_is_no_second_cause(tmp_path: Path) -> None:
    """mp.spawn prints its own Exception before the child's traceback; live and offline both take the child's error."""
    from ncclscope.analysis import analyze_paths

    text = ("Traceback (most recent call last):\n"
            '  File "/env/lib/python3.9/site-packages/torch/multiprocessing/spawn.py", line 160, in join\n'
            "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
            "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
            "-- Process 1 terminated with the following error:\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/train.py", line 12, in run\n'
            "    dist.all_reduce(t)\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (tmp_path / "console.log").write_text(text)
    alerts = LiveMonitor(tmp_path, LiveConfig(console=False, write=False)).run_once()
    offline = analyze_paths([tmp_path / "console.log"], cache=False).decision
    assert [a["kind"] for a in alerts] == ["crash"] and alerts[0]["culprit_ranks"] == [1], alerts
    assert offline.verdict.value == "crash" and list(offline.culprit_ranks) == [1]
