"""What the console shows for live alerts, on alerts and Flight Recorder dumps recorded from a real
gloo hang (tests/data/fault_runs/hang: rank 2 sleeps, DDP's bucket all-reduce #25 never completes)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ncclscope.live.alerts import ConsoleSink
from ncclscope.live.next_step import StuckFacts, kill_notice, next_step, stuck_facts, watchdog
from ncclscope.text_fit import evidence_line, shorten
from rich.console import Console

HANG = Path(__file__).resolve().parents[1] / "data" / "fault_runs" / "hang"


def recorded() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (HANG / "alerts.jsonl").read_text().splitlines()]


def shown(alerts: list[dict[str, Any]], **kw: Any) -> str:
    console = Console(width=80, record=True, color_system=None)
    sink = ConsoleSink(console, **kw)
    for a in alerts:
        sink.emit(a)
    return console.export_text()


def test_hang_detail_box_shows_the_stacks_not_a_copy_of_the_hang_box() -> None:
    hang, detail = recorded()[:2]
    text = shown([detail])
    assert "ranks 0-1: train_job.py:121 in main (loss.backward)" in text  # same stack: one group
    assert "_tensor.py:623 in backward" in text and "graph.py:979 in _engine_run_backward" in text
    assert "rank 2: train_job.py:103 in main (time.sleep)" in text
    assert "Flight Recorder dumps: fr_live_rank0.pkl" in text
    box = [line for line in text.splitlines() if line.startswith("│")]
    assert all(len(line) <= 80 for line in box)
    assert shown([hang]).count("│") < text.count("│")


def test_flight_recorder_names_the_op_the_hook_never_saw_and_the_jobs_timeout() -> None:
    hang = recorded()[0]
    assert hang["stuck"] == {"pg": "0", "seq": 25, "op": None}  # a C++ (DDP) call: no coll record
    facts = stuck_facts([str(p) for p in sorted(HANG.glob("fr_live_rank*.pkl"))], "0", 25)
    assert facts.op == "allreduce"
    assert facts.timeout_s == 60.0  # JOB_PG_TIMEOUT of the recorded run, not gloo's 30 min default
    assert facts.enqueued_t is not None and abs(facts.enqueued_t - hang["ts"]) < 30
    w = watchdog("gloo", facts, None, facts.enqueued_t + 20)
    assert w["ends_in_s"] == 40.0 and "Flight Recorder" in w["source"]


def test_watchdog_defaults_when_no_dump_says_otherwise() -> None:
    assert watchdog("gloo", StuckFacts(), 1000.0, 1010.0)["ends_in_s"] == 1790.0
    assert watchdog("nccl", StuckFacts(), 1000.0, 1010.0)["ends_in_s"] == 590.0
    assert watchdog(None, StuckFacts(), 1000.0, 1010.0)["ends_in_s"] is None


def test_one_next_step_line_after_the_detail() -> None:
    hang, detail = recorded()[:2]
    hang = {**hang, "stacks_requested": True}
    detail = {**detail, "watchdog": {"timeout_s": 120.0, "ends_in_s": 93.6, "source": "flight recorder"}}
    text = shown([hang, detail, detail], can_kill=True)
    line = "ncclscope: the job is still running; PyTorch's watchdog ends it in 94 s; press Ctrl-C, or run with --kill-on-hang"
    assert " ".join(text.split()).count(line) == 1
    assert text.index("ncclscope hang_detail") < text.index("the job is still running")
    # under `ncclscope watch` Ctrl-C stops the watcher, not the job
    assert "stop it with its launcher" in " ".join(shown([hang, detail]).split())
    # --kill-on-hang: no advice, the kill is announced instead
    assert "still running" not in shown([hang, detail], can_kill=True, kill_on_hang=True)
    # PyTorch's own timeout alert: the job is ending already
    assert "still running" not in shown([{**hang, "source": "pytorch_watchdog", "stacks_requested": False}],  # no watchdog key
                                        can_kill=True)


def test_next_step_without_a_dump_comes_with_the_hang() -> None:
    hang = {**recorded()[0], "stacks_requested": False, "watchdog": {"ends_in_s": 1795.0}}
    assert "ends it in 1795 s" in " ".join(shown([hang], can_kill=True).split())
    assert next_step({"watchdog": {}}, True, False) == (
        "the job is still running; PyTorch's watchdog ends it at the process-group timeout; "
        "press Ctrl-C, or run with --kill-on-hang")


def test_kill_notice_says_who_and_why() -> None:
    text = kill_notice({"stuck": {"pg": "0", "seq": 25, "op": "allreduce"}, "culprit_ranks": [2]},
                       {0: 101, 1: 102, 2: 103}, 10.0)
    assert "because rank 2 never joined allreduce #25 of process group 0" in text
    assert "rank 0 (pid 101), rank 1 (pid 102), rank 2 (pid 103)" in text and "SIGKILL 10 s later" in text


def test_long_messages_are_cut_at_a_word() -> None:
    msg = ("rank 0: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
           "Connection closed by peer [127.0.0.1]:19359. This is typically caused by a remote worker crashing")
    cut = shorten(msg, 120)
    assert len(cut) <= 120 and cut.endswith("\u2026") and msg.startswith(cut[:-1])
    assert msg[len(cut) - 1] == " "  # the cut falls between words
    long_token = "x" * 300
    assert len(shorten(long_token, 50)) == 50


def test_evidence_records_are_said_as_key_value() -> None:
    rec = (HANG / "ncclscope-rank0.jsonl").read_text().splitlines()
    stack = next(x for x in rec if '"type":"stack"' in x.replace(" ", ""))
    line = evidence_line(stack)
    assert line.startswith("stack rank=0 ") and "where=train_job.py:121 in main (loss.backward)" in line
    assert "frames=[5 items]" in line and "{" not in line
    cut = evidence_line(stack[:150])  # a record already cut before its end
    assert cut.startswith("stack rank=0 ") and '"' not in cut
    assert evidence_line("pg_status[0] = {'last_enqueued': 25, 'last_started': -1, 'last_completed': 24}") == (
        "pg_status[0]: last_enqueued=25 last_started=-1 last_completed=24")
    assert evidence_line('{"type":"exit","rank":0,"code":1,"exception":"KeyboardInterrupt: "}') == (
        "exit rank=0 code=1 exception=KeyboardInterrupt")
    plain = "time: 2026-12-01_17:00:47; traceback: To enable traceback see: https://pytorch.org/docs/stable/e.html"
    assert evidence_line(plain) == plain
    assert not re.search(r"\w\u2026", evidence_line("word " * 100, 60).replace("word\u2026", ""))


def test_no_next_step_once_the_job_has_exited() -> None:
    """The live monitor's alert panel, replayed over a finished run: no advice for a job still running."""
    import io

    from ncclscope.live.monitor import LiveConfig, LiveMonitor
    from rich.console import Console

    buf = io.StringIO()
    mon = LiveMonitor(HANG, LiveConfig(console=True, write=False), console=Console(file=buf, width=200))
    try:
        mon.run_once()
    finally:
        mon.stop()
    assert "ncclscope hang" in buf.getvalue()  # the command ended: exit.txt
    assert "still running" not in buf.getvalue()


def test_no_next_step_once_the_timeout_has_passed() -> None:
    assert next_step({"watchdog": {"ends_in_s": 0.0}}, True, False) is None


def test_a_hang_of_1024_ranks_stays_one_screen() -> None:
    where = {str(r): "train.py:30 in step (dist.all_reduce)" for r in range(1024)}
    where["37"] = "train.py:77 in main (time.sleep)"
    for r in range(900, 920):  # twenty ranks each somewhere else
        where[str(r)] = f"loader.py:{r} in next"
    alert = {"kind": "hang", "message": "rank 37 never joined allreduce #60 of process group 0",
             "culprit_ranks": [37], "where": where, "stuck": {"pg": "0", "seq": 60, "op": "allreduce"}}
    lines = shown([alert]).splitlines()
    assert len(lines) < 20
    text = "\n".join(lines)
    assert text.index("rank 37: train.py:77 in main (time.sleep)") < text.index("ranks 0-36, 38-899, 920-1023: train.py:30")
    assert "14 more place(s), ranks 906-919: in alerts.jsonl" in text


def test_a_claim_from_partial_evidence_says_how_sure_it_is() -> None:
    hang = recorded()[0]
    likely = {**hang, "certainty": {"level": "likely", "why": "NCCL call counts at the end of the logs"}}
    assert "certainty: likely (NCCL call counts at the end of the logs)" in shown([likely])
    assert "certainty" not in shown([{**hang, "certainty": {"level": "confirmed", "why": "own records"}}])
