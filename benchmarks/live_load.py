"""Live load: does ``ncclscope watch`` keep up with N ranks, and how soon does it alert?

N simulated ranks (8 to a host, one writer process per host, or ``--hosts-per-writer`` hosts per
process) append what the hook writes (``ncclscope-rank<R>.jsonl``: start, a ``coll`` and a
``done`` line per collective through the hook's own formats, a heartbeat a second, a stall stack,
exit) and NCCL log lines (``<host>.<pid>.nccl.log``: init lines, a WARN on a crash) at a real rate
(``--step-s`` seconds a step, ``--colls`` collectives a step). One fault is injected at a random
rank and a random time after the warm-up:

- ``hang``: the rank stops calling collectives (its heartbeats go on, a stall stack after 3 s);
  every other rank enqueues the next collective and waits in it;
- ``desync``: the rank calls the next collective with another element count; all wait in it;
- ``crash``: the rank writes a non-zero exit record and an NCCL WARN line, then nothing;
- ``dead_node``: the rank's whole host (8 ranks) stops writing anything; the done lines of its last
  step's collectives are lost with it (the hook writes those of GPU collectives with the heartbeat);
- ``pause`` (fault-free): every rank completes its step, then all pause 5 to 60 s (heartbeats go
  on, nothing pending), then carry on: any alert is a false alarm.

``ncclscope watch DIR`` (inotify, or ``--poll``) runs as its own process. Measured: alert latency
(the fault's time to the first alert's ``ts``, one clock), whether the alert names the faulty
rank(s), alerts before the fault or in a fault-free run (false alarms), the monitor's CPU (share
of one core over the run, from /proc/PID/stat), its peak RSS (VmHWM), and its lag behind the
writers: at each sample, how long ago the writers had written as many bytes as the monitor has
read (/proc/PID/io rchar, after its start-up), p50 and max.

    python benchmarks/live_load.py --ranks 64 --fault hang
    python benchmarks/live_load.py --matrix --ranks 64,512 --modes inotify,poll --out results.json
"""
from __future__ import annotations

import argparse
import bisect
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ncclscope.hook import records as R

PER_HOST = 8
FAULTS = ("hang", "desync", "crash", "dead_node", "pause")
WHERE = "train.py:212 in train_step (dist.all_reduce)"
STALL_WHERE = "train.py:230 in train_step (time.sleep)"


@dataclass(frozen=True)
class Plan:
    """One run: who writes what, and when the fault comes (absolute wall-clock times)."""

    ranks: int
    step_s: float
    colls: int
    t0: float  # writers start
    fault: str
    fault_t: float
    fault_rank: int
    pause_s: float
    end_t: float  # writers stop


@dataclass
class Result:
    ranks: int
    mode: str
    fault: str
    fault_rank: int
    latency_s: float | None = None
    alert_kind: str | None = None
    culprits: list[int] = field(default_factory=list)
    named_right: bool | None = None
    classified_right: bool | None = None  # the alert's kind, and for dead_node the node (host and its ranks) only
    seq_right: bool | None = None  # hang / dead_node / desync: the collective the waiting ranks are in
    node: dict[str, Any] | None = None
    false_alarms: int = 0
    cpu_pct: float = 0.0
    rss_mb: float = 0.0
    lag_p50_s: float | None = None
    lag_max_s: float | None = None
    write_kb_s: float = 0.0
    read_per_written: float = 0.0  # bytes the monitor read / bytes written (1.0: each byte read once)
    pause_s: float = 0.0


# --- the writers (one process per host group) ------------------------------------------------

class RankFile:
    """One simulated rank's hook file and NCCL log, with its sequence counter."""

    def __init__(self, d: Path, rank: int, world: int, host: str) -> None:
        self.rank, self.host = rank, host
        self.fd = os.open(d / f"ncclscope-rank{rank}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.nccl = os.open(d / f"{host}.{10000 + rank}.nccl.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.seq = 0
        self.done_seq = 0
        self.coll = R.coll_format(rank, "0", "allreduce", "bfloat16", WHERE, False, True)
        self.done = R.done_format(rank, "0", "fr")
        self.alive = True
        self.written = 0
        self.write(json.dumps(R.start(rank, world, rank % PER_HOST, host, 10000 + rank, "nccl", "2.11.0",
                                      "2.27.5", "13.0", {"NCCL_DEBUG": "INFO"})) + "\n")
        ts = time.strftime("%Y-%m-%d %H:%M:%S")
        lines = [f"[{ts}.000000] {host}:{10000 + rank}:{10000 + rank} [{rank % PER_HOST}] NCCL INFO {text}\n" for text in (
            f"Bootstrap: Using eth0:10.1.{rank // 256}.{rank % 256}<0>", "NCCL version 2.27.5+cuda13.0",
            "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.1.0.1<0>", "Using network IB",
            f"ncclCommInitRankConfig comm 0x5561d0 rank {rank} nranks {world} cudaDev {rank % PER_HOST} "
            f"nvmlDev {rank % PER_HOST} busId 1{rank % PER_HOST}000 commId 0x4b1f - Init START",
            "Channel 00/32 : 0 1 2 3 4 5 6 7", "Connected all rings, use ring PXN 0 GDR 1",
            f"ncclCommInitRankConfig comm 0x5561d0 rank {rank} nranks {world} cudaDev {rank % PER_HOST} "
            f"nvmlDev {rank % PER_HOST} busId 1{rank % PER_HOST}000 commId 0x4b1f - Init COMPLETE")]
        self.log("".join(lines))

    def write(self, text: str) -> None:
        data = text.encode()
        os.write(self.fd, data)
        self.written += len(data)

    def log(self, text: str) -> None:
        data = text.encode()
        os.write(self.nccl, data)
        self.written += len(data)

    def step(self, n: int, t: float, dur_ms: float, done: bool = True) -> None:
        """``done=False``: the collectives' coll lines only (their done lines, which the hook writes with the
        heartbeat for GPU collectives, never made it out)."""
        parts = []
        for _ in range(n):
            self.seq += 1
            parts.append(self.coll % (t, self.seq, 4096, 8192))
            if done:
                parts.append(self.done % (t + dur_ms / 1000.0, self.seq, dur_ms))
        if done:
            self.done_seq = self.seq
        self.write("".join(parts))

    def enqueue(self, t: float, numel: int = 4096) -> None:
        """The next collective, enqueued and never completed (the others' side of a fault)."""
        self.seq += 1
        self.write(self.coll % (t, self.seq, numel, numel * 2))

    def heartbeat(self, step: int) -> None:
        pgs: dict[str, dict[str, int | None]] = {"0": {"enq": self.seq, "start": None, "done": self.done_seq}}
        self.write(json.dumps(R.heartbeat(self.rank, step, pgs, 0),
                              separators=(",", ":")) + "\n")


def host_writer(d: str, hosts: list[int], plan: Plan, counter: Any) -> None:
    """Write the ranks of ``hosts`` until ``plan.end_t`` (a child process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ranks = [RankFile(Path(d), h * PER_HOST + i, plan.ranks, f"node{h:04d}") for h in hosts for i in range(PER_HOST)
             if h * PER_HOST + i < plan.ranks]
    fault_host = plan.fault_rank // PER_HOST
    step, next_step, next_hb = 0, plan.t0, plan.t0
    # the fault (or the pause) comes after the same step on every writer: a writer that fell behind
    # on a busy machine catches up first, so no rank completes a collective another never joined
    fault_step = int((plan.fault_t - plan.t0) / plan.step_s) + 1
    resume_t = plan.fault_t + plan.pause_s
    stalled = False  # the fault happened: no step completes any more
    stall_stack_at: float | None = None
    while True:
        now = time.time()
        if now >= plan.end_t:
            break
        if plan.fault != "pause" and not stalled and step >= fault_step and now >= plan.fault_t:
            stalled = True
            stall_stack_at = now + 3.0
            for rf in ranks:
                if rf.rank == plan.fault_rank and plan.fault in ("hang", "crash"):
                    if plan.fault == "crash":
                        rf.log(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}.000000] {rf.host}:{10000 + rf.rank}:"
                               f"{10000 + rf.rank} [{rf.rank % PER_HOST}] NCCL WARN Cuda failure 'an illegal "
                               f"memory access was encountered'\n")
                        rf.write(json.dumps(R.exit_(rf.rank, 1, "RuntimeError: CUDA error: an illegal memory "
                                                    "access was encountered")) + "\n")
                        rf.alive = False
                    continue
                if plan.fault == "dead_node" and rf.rank // PER_HOST == fault_host:
                    rf.alive = False
                    continue
                rf.enqueue(now, 7 if plan.fault == "desync" and rf.rank == plan.fault_rank else 4096)
                rf.heartbeat(step)
        held = step >= fault_step and (plan.fault != "pause" or now < resume_t)
        paused = plan.fault == "pause" and held
        if not stalled and not held and now >= next_step:
            step += 1
            for rf in ranks:  # a dead node's last step: its done lines lost with it (they come with the heartbeat)
                rf.step(plan.colls, now, 0.4, done=not (plan.fault == "dead_node" and step == fault_step
                                                        and rf.rank // PER_HOST == fault_host))
            next_step += plan.step_s  # no reset: a writer that fell behind catches up
            if plan.fault == "pause" and step == fault_step:
                next_step = resume_t  # every writer resumes at the same time
        if now >= next_hb:
            for rf in ranks:
                if rf.alive:
                    rf.heartbeat(step)
            next_hb += 1.0
        if stall_stack_at is not None and now >= stall_stack_at:
            stall_stack_at = None
            for rf in ranks:
                if rf.alive and rf.rank == plan.fault_rank and plan.fault == "hang":
                    rf.write(json.dumps(R.stack(rf.rank, "stall", STALL_WHERE, [
                        {"file": "/job/train.py", "line": 230, "func": "train_step", "code": "time.sleep(3600)"}],
                        stalled_s=3.0)) + "\n")
        counter.value = sum(rf.written for rf in ranks)
        # sleep to the next thing to do (hundreds of writer processes share two cores)
        wake = [next_hb, plan.end_t]
        if not stalled:
            wake.append(next_step if not paused else resume_t)
            if plan.fault != "pause":
                wake.append(plan.fault_t)
        if stall_stack_at is not None:
            wake.append(stall_stack_at)
        time.sleep(max(0.005, min(wake) - time.time()))
    for rf in ranks:
        if rf.alive and plan.fault == "pause":
            rf.write(json.dumps(R.exit_(rf.rank, 0)) + "\n")
    counter.value = sum(rf.written for rf in ranks)


# --- the monitor process ----------------------------------------------------------------------

def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rchar(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def proc_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def read_alerts(d: Path) -> list[dict[str, Any]]:
    p = d / "alerts.jsonl"
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def lag_of(history: list[tuple[float, int]], t: float, consumed: int) -> float:
    """How long before ``t`` the writers had written ``consumed`` bytes (0 when caught up)."""
    sizes = [b for _, b in history]
    i = bisect.bisect_left(sizes, consumed)
    if i >= len(history):
        return 0.0
    if i == 0:
        return max(0.0, t - history[0][0])
    (ta, a), (tb, b) = history[i - 1], history[i]
    when = tb if b == a else ta + (tb - ta) * (consumed - a) / (b - a)  # written at a steady rate between samples
    return max(0.0, t - when)


def warmup_for(ranks: int) -> float:
    """The warm-up before a fault can come: 10 s up to 4,096 ranks; 60 s above. The monitor's first pass over a
    folder of 32,768 new files (16,384 ranks) took 28 s on the 2-core VM, and until it has seen a few steps it
    judges with the 30 s threshold it starts with: a fault in the first 15 s was alerted 55 s after it, though
    the monitor then kept up."""
    return 10.0 if ranks <= 4096 else 60.0


def one_run(ranks: int, mode: str, fault: str, args: argparse.Namespace, rng: random.Random) -> Result:
    d = Path(tempfile.mkdtemp(prefix=f"live-load-{ranks}-{fault}-"))
    cmd = [sys.executable, "-m", "ncclscope", "watch", str(d)] + (["--poll"] if mode == "poll" else [])
    mon = subprocess.Popen(cmd, stdout=open(d.parent / f"{d.name}.watch.log", "wb"),  # noqa: SIM115
                           stderr=subprocess.STDOUT)
    try:
        time.sleep(args.monitor_start_s)  # its imports and its first scan
        cpu0, rchar0, wall0 = proc_cpu_s(mon.pid), proc_rchar(mon.pid), time.time()
        t0 = time.time() + 0.5
        warmup_s = warmup_for(ranks) if args.warmup_s is None else args.warmup_s
        fault_t = t0 + rng.uniform(warmup_s, warmup_s + args.spread_s)
        pause_s = rng.uniform(5.0, args.max_pause_s) if fault == "pause" else 0.0
        end_t = fault_t + (pause_s + args.after_pause_s if fault == "pause" else args.wait_s)
        plan = Plan(ranks, args.step_s, args.colls, t0, fault, fault_t, rng.randrange(ranks), pause_s, end_t)
        n_hosts = (ranks + PER_HOST - 1) // PER_HOST
        groups = [list(range(h, min(h + args.hosts_per_writer, n_hosts)))
                  for h in range(0, n_hosts, args.hosts_per_writer)]
        ctx = mp.get_context("fork")
        counters = [ctx.Value("q", 0, lock=False) for _ in groups]
        writers = [ctx.Process(target=host_writer, args=(str(d), g, plan, c), daemon=True) for g, c in zip(groups, counters)]
        for w in writers:
            w.start()
        history: list[tuple[float, int]] = []
        lags: list[float] = []
        res = Result(ranks, mode, fault, plan.fault_rank, pause_s=round(pause_s, 1))
        first: dict[str, Any] | None = None
        while time.time() < end_t + 1.0:
            time.sleep(args.sample_s)
            now = time.time()
            written = sum(int(c.value) for c in counters)
            history.append((now, written))
            if now < end_t:
                lags.append(lag_of(history, now, proc_rchar(mon.pid) - rchar0))
            if fault != "pause" and first is None:
                hits = [a for a in read_alerts(d) if a.get("ts", 0) >= fault_t - 0.5]
                if hits:
                    first = hits[0]
                    end_t = min(end_t, now + 2.0)  # a few more samples, then stop
        res.cpu_pct = round(100.0 * (proc_cpu_s(mon.pid) - cpu0) / (time.time() - wall0), 1)
        res.rss_mb = round(proc_hwm_mb(mon.pid), 1)
        span = history[-1][0] - history[0][0] if len(history) > 1 else 1.0
        final_read = proc_rchar(mon.pid) - rchar0
        res.read_per_written = round(final_read / max(1, history[-1][1]), 2) if history else 0.0
        res.write_kb_s = round((history[-1][1] - history[0][1]) / max(span, 1e-9) / 1024.0, 1) if history else 0.0
        for w in writers:
            w.join(timeout=5)
            if w.is_alive():
                w.kill()
        alerts = read_alerts(d)
        res.false_alarms = len([a for a in alerts if fault == "pause" or a.get("ts", 0) < fault_t - 0.5])
        if first is not None:
            res.latency_s = round(float(first["ts"]) - fault_t, 2)
            res.alert_kind = str(first.get("kind"))
            res.culprits = [int(r) for r in first.get("culprit_ranks") or []]
            want = set(range(plan.fault_rank // PER_HOST * PER_HOST, plan.fault_rank // PER_HOST * PER_HOST + PER_HOST)) \
                if fault == "dead_node" else {plan.fault_rank}
            res.named_right = bool(want & set(res.culprits))
            res.classified_right, res.seq_right = judge_first(first, plan)
            res.node = (first.get("nodes") or [None])[0]
        if lags:
            res.lag_p50_s = round(statistics.median(lags), 2)
            res.lag_max_s = round(max(lags), 2)
        return res
    finally:
        if mon.poll() is None:
            mon.send_signal(signal.SIGINT)
            try:
                mon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                mon.kill()
        if not args.keep:
            subprocess.run(["rm", "-rf", str(d)], check=False)


def judge_first(alert: dict[str, Any], plan: Plan) -> tuple[bool, bool | None]:
    """Whether the first alert after the fault classifies it right, and names the collective the others wait
    in (the same on every writer: ``fault_step`` steps of ``colls`` collectives, then the next one)."""
    host = plan.fault_rank // PER_HOST
    nodes = alert.get("nodes") or []
    kind = {"hang": "hang", "dead_node": "hang", "desync": "desync", "crash": "crash"}[plan.fault]
    ok = alert.get("kind") == kind
    if plan.fault == "dead_node":
        ranks = [r for r in range(host * PER_HOST, host * PER_HOST + PER_HOST) if r < plan.ranks]
        ok = ok and [(n.get("host"), n.get("ranks")) for n in nodes] == [(f"node{host:04d}", ranks)]
    elif plan.fault == "hang":
        ok = ok and not nodes and alert.get("culprit_ranks") == [plan.fault_rank]
    if plan.fault == "crash":
        return ok, None
    fault_step = int((plan.fault_t - plan.t0) / plan.step_s) + 1
    return ok, (alert.get("stuck") or {}).get("seq") == fault_step * plan.colls + 1


def summarize(results: list[Result]) -> list[dict[str, Any]]:
    """One row per (ranks, mode): latency p50 / p90 over the faults, false alarms, CPU, RSS, lag."""
    rows = []
    for key in sorted({(r.ranks, r.mode) for r in results}):
        rs = [r for r in results if (r.ranks, r.mode) == key]
        lat = sorted(r.latency_s for r in rs if r.latency_s is not None)
        faults = [r for r in rs if r.fault != "pause"]

        def q(p: float) -> float | None:
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else None

        rows.append({"ranks": key[0], "mode": key[1], "alerts": f"{len(lat)}/{len(faults)}",
                     "named_right": sum(1 for r in faults if r.named_right),
                     "classified_right": sum(1 for r in faults if r.classified_right),
                     "seq_right": f"{sum(1 for r in faults if r.seq_right)}/{sum(1 for r in faults if r.seq_right is not None)}",
                     "p50_s": q(0.5), "p90_s": q(0.9),
                     "false_alarms": sum(r.false_alarms for r in rs),
                     "fault_free_runs": sum(1 for r in rs if r.fault == "pause"),
                     "cpu_pct_max": max(r.cpu_pct for r in rs), "rss_mb_max": max(r.rss_mb for r in rs),
                     "lag_p50_s": statistics.median([r.lag_p50_s for r in rs if r.lag_p50_s is not None] or [0.0]),
                     "lag_max_s": max([r.lag_max_s for r in rs if r.lag_max_s is not None] or [0.0]),
                     "write_kb_s": max(r.write_kb_s for r in rs)})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="64", help="comma-separated rank counts")
    p.add_argument("--modes", default="inotify", help="inotify, poll or both (comma-separated)")
    p.add_argument("--fault", default="hang", choices=FAULTS)
    p.add_argument("--matrix", action="store_true", help="every fault (and a fault-free pause run) per ranks x mode")
    p.add_argument("--pause-runs", type=int, default=1, help="with --matrix: fault-free runs per ranks x mode")
    p.add_argument("--step-s", type=float, default=1.0, help="seconds a step")
    p.add_argument("--colls", type=int, default=4, help="collectives a step, each a coll and a done line")
    p.add_argument("--hosts-per-writer", type=int, default=1, help="hosts written by one process")
    p.add_argument("--warmup-s", type=float, default=None,
                   help="seconds before the fault can come (default: 10 up to 4,096 ranks, 60 above: warmup_for)")
    p.add_argument("--spread-s", type=float, default=5.0, help="the fault comes warmup to warmup+spread s in")
    p.add_argument("--wait-s", type=float, default=30.0, help="how long to wait for an alert after a fault")
    p.add_argument("--max-pause-s", type=float, default=60.0)
    p.add_argument("--after-pause-s", type=float, default=5.0)
    p.add_argument("--monitor-start-s", type=float, default=3.0)
    p.add_argument("--sample-s", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep the run folders")
    p.add_argument("--out", type=Path, default=None, help="write every run and the summary as JSON")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    results: list[Result] = []
    faults = [*FAULTS[:-1], *(["pause"] * args.pause_runs)] if args.matrix else [args.fault]
    for ranks in [int(x) for x in args.ranks.split(",")]:
        for mode in args.modes.split(","):
            for fault in faults:
                r = one_run(ranks, mode, fault, args, rng)
                results.append(r)
                print(json.dumps(asdict(r)), flush=True)
    rows = summarize(results)
    print(f"{'ranks':>6} {'mode':8} {'alerts':>6} {'named':>5} {'class':>5} {'seq':>5} {'p50 s':>6} {'p90 s':>6} {'false':>5} "
          f"{'CPU %':>6} {'RSS MB':>7} {'lag p50':>7} {'lag max':>7} {'KB/s':>8}")
    for row in rows:
        print(f"{row['ranks']:>6} {row['mode']:8} {row['alerts']:>6} {row['named_right']:>5} "
              f"{row['classified_right']:>5} {row['seq_right']:>5} {row['p50_s']!s:>6} "
              f"{row['p90_s']!s:>6} {row['false_alarms']:>5} {row['cpu_pct_max']:>6} {row['rss_mb_max']:>7} "
              f"{row['lag_p50_s']:>7} {row['lag_max_s']:>7} {row['write_kb_s']:>8}")
    if args.out:
        args.out.write_text(json.dumps({"runs": [asdict(r) for r in results], "summary": rows,
                                        "settings": {k: (str(v) if isinstance(v, Path) else v)
                                                     for k, v in vars(args).items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
