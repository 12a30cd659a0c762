"""A node whose files stop arriving is one node problem (``rules.nodes``), and the stuck collective is where
the ranks still heard are, not where a frozen writer's last lines left its ranks (``stall.stale``).

The run folders are written with the hook's own record formats (``ncclscope.hook.records``), as one
``ncclscope run`` per node writes them into one shared folder: ``ncclscope-rank<R>.jsonl`` whose start record
names the host. The dead node's last lines are what a writer frozen mid-step leaves: its ``coll`` lines of
the last collectives, their ``done`` lines never written (they come with the heartbeat, which stopped too).
Shape of the incident: apache/mxnet#9709 (one node rebooted during training: every other node stalls in
its next collective), see tests/live/data/SOURCE.md.
"""
from __future__ import annotations

import json
from pathlib import Path

from ncclscope.hook import records as HR
from ncclscope.live.monitor import LiveConfig, LiveMonitor
from ncclscope.rules.nodes import Heard, SilentNode, silent_nodes

T0 = 1_800_000_000.0
WHERE = "train.py:212 in train_step (dist.all_reduce)"


class Rank:
    """One rank's hook file, written line by line in the hook's formats."""

    def __init__(self, d: Path, rank: int, world: int, host: str) -> None:
        self.rank, self.path = rank, d / f"ncclscope-rank{rank}.jsonl"
        self.coll = HR.coll_format(rank, "0", "allreduce", "bfloat16", WHERE, False, True)
        self.done = HR.done_format(rank, "0", "fr")
        self.seq = 0
        self._w(json.dumps(HR.start(rank, world, rank % 4, host, 20000 + rank, "nccl", "2.11.0", "2.27.5", "13.0",
                                    {})) + "\n")

    def _w(self, text: str) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(text)

    def step(self, t: float, n: int = 4, done: bool = True) -> None:
        parts = []
        for _ in range(n):
            self.seq += 1
            parts.append(self.coll % (t, self.seq, 4096, 8192))
            if done:
                parts.append(self.done % (t + 0.004, self.seq, 4.0))
        self._w("".join(parts))

    def enqueue(self, t: float) -> None:
        self.seq += 1
        self._w(self.coll % (t, self.seq, 4096, 8192))

    def heartbeat(self, t: float, step: int, done: int) -> None:
        rec = HR.heartbeat(self.rank, step, {"0": {"enq": self.seq, "start": None, "done": done}}, 0)
        rec["t"] = t
        self._w(json.dumps(rec, separators=(",", ":")) + "\n")


def _job(d: Path, hosts: int = 2, per_host: int = 4, steps: int = 30) -> tuple[list[Rank], float]:
    world = hosts * per_host
    ranks = [Rank(d, r, world, f"gpu-node-{r // per_host:02d}") for r in range(world)]
    t = T0
    for s in range(1, steps + 1):
        t = T0 + s
        for rk in ranks:
            rk.step(t)
            rk.heartbeat(t + 0.5, s, rk.seq)
    return ranks, t


def test_rule_names_the_host_whose_every_rank_fell_silent() -> None:
    heard = [Heard(0, "a", 100.0, "r0:9"), Heard(1, "a", 99.5, "r1:9"),
             Heard(2, "b", 90.0, "r2:7"), Heard(3, "b", 91.0, "ncclscope-rank3.jsonl:8")]
    assert silent_nodes(heard, 100.0, 5.0) == (SilentNode("b", (2, 3), 91.0, "ncclscope-rank3.jsonl:8", 9.0),)
    # one rank of the host still heard: its host is there (a rank of it hung or died: the hang rules tell)
    assert silent_nodes([*heard[:3], Heard(3, "b", 98.0)], 100.0, 5.0) == ()
    # a rank of the host ended (exit record, error of its own): a crash, not a node gone silent
    assert silent_nodes([*heard[:3], Heard(3, "b", 91.0, ended=True)], 100.0, 5.0) == ()
    # every host silent (a finished folder read later, the monitor's own host cut off): nobody waits for it
    assert silent_nodes(heard, 200.0, 5.0) == ()
    # one host only, or ranks whose host is unknown: no node to name
    assert silent_nodes([Heard(0, "a", 100.0), Heard(1, "a", 90.0)], 100.0, 5.0) == ()
    assert silent_nodes([Heard(0, None, 100.0), Heard(1, None, 90.0)], 100.0, 5.0) == ()
    # silent for no longer than silent_s: not yet
    assert silent_nodes(heard, 95.9, 5.0) == ()


def test_dead_node_is_one_node_alert_at_the_collective_the_others_wait_in(tmp_path: Path) -> None:
    ranks, t = _job(tmp_path)
    # node 01 dies mid-step: its writers got the coll lines of two more collectives out, no done, no heartbeat
    for rk in ranks[4:]:
        rk.step(t + 1, n=2, done=False)
    for rk in ranks[:4]:  # node 00 completes the step and waits in the next collective, heartbeats going on
        rk.step(t + 1)
        rk.enqueue(t + 1.01)
    waiting_in = ranks[0].seq
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    for k in range(1, 6):
        for rk in ranks[:4]:
            rk.heartbeat(t + 1 + k, 30, waiting_in - 1)
        assert mon.poll_once(now=t + 1 + k) == [], k  # no progress for less than the 5 s threshold
    for rk in ranks[:4]:
        rk.heartbeat(t + 7, 30, waiting_in - 1)
    (a,) = mon.poll_once(now=t + 7.2)
    assert a["kind"] == "hang" and a["culprit_ranks"] == [4, 5, 6, 7] and a["waiting_ranks"] == [0, 1, 2, 3]
    assert a["stuck"]["seq"] == waiting_in, a["stuck"]  # not the dead node's last written collective
    (node,) = a["nodes"]
    assert node["host"] == "gpu-node-01" and node["ranks"] == [4, 5, 6, 7]
    last = len(ranks[7].path.read_text().splitlines())  # its last line: the second unfinished coll
    assert node["last_line"] == f"ncclscope-rank7.jsonl:{last}" and abs(node["last_t"] - (t + 1)) < 0.01
    assert a["message"].startswith("node gpu-node-01 (ranks 4-7) went silent"), a["message"]
    assert f"ranks 0-3 wait in allreduce #{waiting_in}" in a["message"]
    assert a["certainty"]["level"] == "likely"


def test_one_frozen_rank_is_a_hang_of_that_rank_not_a_node(tmp_path: Path) -> None:
    ranks, t = _job(tmp_path)
    ranks[5].step(t + 1, n=2, done=False)  # frozen (kill -STOP) with its last done lines unwritten
    for rk in ranks[:5] + ranks[6:]:
        rk.step(t + 1)
        rk.enqueue(t + 1.01)
    waiting_in = ranks[0].seq
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    for k in range(1, 8):
        for rk in ranks[:5] + ranks[6:]:
            rk.heartbeat(t + 1 + k, 30, waiting_in - 1)
    (a,) = mon.poll_once(now=t + 8.2)
    assert a["culprit_ranks"] == [5] and a["stuck"]["seq"] == waiting_in and "nodes" not in a
    assert "rank 5 also stopped writing heartbeats" in a["message"]


def test_a_hung_rank_with_heartbeats_keeps_its_own_records_confirmed(tmp_path: Path) -> None:
    ranks, t = _job(tmp_path)
    for rk in ranks[1:]:
        rk.step(t + 1)
        rk.enqueue(t + 1.01)
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    for k in range(1, 8):
        ranks[0].heartbeat(t + 1 + k, 30, ranks[0].seq)  # hung in Python: its heartbeat thread goes on
        for rk in ranks[1:]:
            rk.heartbeat(t + 1 + k, 30, rk.seq - 1)
    (a,) = mon.poll_once(now=t + 8.2)
    assert a["culprit_ranks"] == [0] and a["stuck"]["seq"] == ranks[0].seq + 1 and "nodes" not in a
    assert a["certainty"]["level"] == "confirmed"


def test_fault_free_pauses_of_a_whole_job_and_a_slow_node_raise_nothing(tmp_path: Path) -> None:
    ranks, t = _job(tmp_path)
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    assert mon.poll_once(now=t + 0.6) == []
    # every rank pauses 60 s (checkpoint): nothing pending, heartbeats on; node 01's arrive 4 s late
    for k in range(1, 61):
        for rk in ranks[:4]:
            rk.heartbeat(t + k, 30, rk.seq)
        if k % 4 == 0:
            for j in range(k - 3, k + 1):
                for rk in ranks[4:]:
                    rk.heartbeat(t + j, 30, rk.seq)
        assert mon.poll_once(now=t + k + 0.3) == [], k
    for s in range(31, 40):  # and carries on
        for rk in ranks:
            rk.step(t + 60 + s)
        assert mon.poll_once(now=t + 60 + s + 0.1) == []


def test_state_view_shows_each_ranks_host_and_the_silent_node(tmp_path: Path) -> None:
    from ncclscope.commands.watch import render_state
    from rich.console import Console

    ranks, t = _job(tmp_path)
    for rk in ranks[:4]:
        rk.step(t + 1)
        rk.enqueue(t + 1.01)
        rk.heartbeat(t + 7, 30, rk.seq - 1)
    mon = LiveMonitor(tmp_path, LiveConfig(console=False, write=False))
    mon.poll_once(now=t + 7.2)
    snap = mon.snapshot(now=t + 7.2)
    assert snap["silent_nodes"] == [{"host": "gpu-node-01", "ranks": [4, 5, 6, 7],
                                     "last_line": f"ncclscope-rank7.jsonl:{len(ranks[7].path.read_text().splitlines())}",
                                     "silent_s": 6.7}]
    assert [(p["seq"], p["never_joined"], p["waiting"]) for p in snap["pending"]] == [(ranks[0].seq, [4, 5, 6, 7],
                                                                                      [0, 1, 2, 3])]
    console = Console(width=160, record=True, color_system=None)
    render_state(snap, console)
    text = console.export_text()
    assert "gpu-node-00" in text and "silent node: gpu-node-01 (ranks 4-7): nothing for 6.7 s" in text
    assert mon.snapshot(now=t + 300)["silent_nodes"] == []  # nobody heard any more: no node to single out
