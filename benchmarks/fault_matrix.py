"""Fault-injection matrix: real torch.distributed jobs (gloo, CPU) under `ncclscope run`, with hangs,
desyncs, crashes and stragglers at random ranks and steps, and fault-free runs. Prints precision and
recall of the verdict and the culprit per fault class, and false alarms on fault-free runs.

    python benchmarks/fault_matrix.py --n 40 --seed 1 [--jobs 1] [--out matrix.json]

Each scenario runs tests/jobs/train_job.py under `python -m ncclscope run --kill-on-hang` (torchrun,
or torch.multiprocessing.spawn for the ``spawn`` kinds); the ``*_sigint`` / ``*_sigterm`` kinds run
without --kill-on-hang and stop the job's whole process group with that signal once the hang
alert is out (the user's Ctrl-C, the scheduler's SIGTERM). The verdict is read from the run
folder's report.json, live alerts from alerts.jsonl; ``--record DIR`` keeps each run folder.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "train_job.py"


@dataclass
class Scenario:
    kind: str  # healthy | pause | hang | desync | crash | straggler
    world: int
    env: dict[str, str]
    culprit: int | None
    expect: str  # expected verdict
    label: str = ""
    launch: str = "torchrun"  # torchrun | spawn
    stop: str | None = None  # SIGINT | SIGTERM to the job's process group after the hang alert


@dataclass
class Outcome:
    scenario: Scenario
    verdict: str | None
    culprits: list[int]
    alerts: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exit_code: int | None = None
    error: str | None = None

    @property
    def verdict_ok(self) -> bool:
        return self.verdict == self.scenario.expect

    @property
    def culprit_ok(self) -> bool:
        s = self.scenario
        if s.culprit is None:
            return not self.culprits
        if s.kind == "desync" and s.world == 2:
            # two ranks that disagree: no majority can say which one is wrong
            return self.culprits in ([], [s.culprit])
        return self.culprits == [s.culprit]


ALL_KINDS = ["hang", "desync", "crash", "straggler", "healthy", "pause", "exception", "spawn_exception", "memory",
             "hook_exception", "hang_sigint", "hang_sigterm"]
STOPS = {"hang_sigint": "SIGINT", "hang_sigterm": "SIGTERM"}


def _fault_env(kind: str, rank: int, step: int, rng: random.Random) -> tuple[dict[str, str], str, str]:
    """The new kinds: (env, expected verdict, label detail)."""
    if kind in ("exception", "spawn_exception"):
        return {"JOB_CRASH_RANK": str(rank), "JOB_CRASH_STEP": str(step), "JOB_CRASH_MODE": "raise"}, "crash", ""
    if kind in ("memory", "hook_exception"):
        mode = "memory" if kind == "memory" else "hook"  # a DDP communication hook raises: inside torch
        return {"JOB_CRASH_RANK": str(rank), "JOB_CRASH_STEP": str(step), "JOB_CRASH_MODE": mode}, "crash", ""
    return {"JOB_HANG_RANK": str(rank), "JOB_HANG_STEP": str(step)}, "hang", STOPS[kind]


def scenarios(n: int, seed: int, worlds: list[int], kinds: list[str] | None = None) -> list[Scenario]:
    rng = random.Random(seed)
    kinds = kinds or ALL_KINDS
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        world = rng.choice(worlds)
        rank = rng.randrange(world)
        step = rng.randint(4, 10)
        env = {"JOB_BACKEND": "gloo", "JOB_STEPS": "16", "JOB_PG_TIMEOUT": "60", "JOB_STEP_S": "0.05"}
        culprit: int | None = rank
        if kind == "hang":
            env |= {"JOB_HANG_RANK": str(rank), "JOB_HANG_STEP": str(step)}
            expect = "hang"
        elif kind == "desync":
            dk = rng.choice(["op", "size", "dtype"])
            env |= {"JOB_DESYNC_RANK": str(rank), "JOB_DESYNC_STEP": str(step), "JOB_DESYNC_KIND": dk}
            expect = "desync"
            kind_label = dk
        elif kind == "crash":
            env |= {"JOB_CRASH_RANK": str(rank), "JOB_CRASH_STEP": str(step),
                    "JOB_CRASH_CODE": str(rng.randint(2, 9)), "JOB_CRASH_MODE": rng.choice(["exit", "raise"])}
            expect = "crash"
        elif kind == "straggler":
            s = rng.choice([0.05, 0.1, 0.15, 0.2, 0.3])
            env |= {"JOB_STRAGGLER_RANK": str(rank), "JOB_STRAGGLER_S": str(s), "JOB_STRAGGLER_FROM": "3",
                    "JOB_STEPS": "24"}
            expect = "degraded"
            kind_label = f"{int(s * 1000)}ms"
        elif kind == "pause":
            env |= {"JOB_PAUSE_S": "10", "JOB_PAUSE_STEP": str(step)}
            culprit, expect = None, "healthy"
        elif kind in ("exception", "spawn_exception", "memory", "hook_exception", "hang_sigint", "hang_sigterm"):
            extra, expect, kind_label = _fault_env(kind, rank, step, rng)
            env |= extra
        else:
            culprit, expect = None, "healthy"
        label = f"{kind}{'(' + kind_label + ')' if kind in ('desync', 'straggler') else ''} n={world}" + (
            f" rank={culprit} step={step}" if culprit is not None else "")
        out.append(Scenario(kind, world, env, culprit, expect, label,
                            launch="spawn" if kind.startswith("spawn") else "torchrun", stop=STOPS.get(kind)))
    return out


def command(sc: Scenario, run_dir: Path) -> tuple[list[str], dict[str, str]]:
    env = os.environ | sc.env | {"PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet"]
    if sc.stop is None:
        cmd.append("--kill-on-hang")
    cmd.append("--")
    if sc.launch == "spawn":
        env |= {"JOB_LAUNCH": "spawn", "JOB_WORLD": str(sc.world)}
        return cmd + [sys.executable, str(JOB)], env
    return cmd + [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={sc.world}",
                  str(JOB)], env


def _stop_after_alert(p: subprocess.Popen[str], run_dir: Path, sig: str, deadline: float) -> None:
    """The user's Ctrl-C or the scheduler's SIGTERM, to the whole process group, once the hang alert is out."""
    while time.time() < deadline and p.poll() is None:
        try:
            if any(json.loads(x).get("kind") == "hang" for x in (run_dir / "alerts.jsonl").read_text().splitlines()):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    time.sleep(0.5)
    if p.poll() is None:
        os.killpg(p.pid, getattr(signal, sig))


def run_one(sc: Scenario, workdir: Path, timeout: float = 240.0, record: Path | None = None) -> Outcome:
    run_dir = workdir / f"run-{abs(hash(sc.label)) % 10**8}-{int(time.time() * 1000) % 10**6}"
    cmd, env = command(sc, run_dir)
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        if sc.stop is not None:
            _stop_after_alert(p, run_dir, sc.stop, t0 + timeout / 2)
        p.communicate(timeout=max(1.0, timeout - (time.time() - t0)))
        code: int | None = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return Outcome(sc, None, [], seconds=time.time() - t0, error="timeout")
    seconds = time.time() - t0
    if record is not None:
        shutil.copytree(run_dir, record / sc.kind, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ncclscope-cache", "ncclscope-control", "ncclscope-site*"))
        index = record / "scenarios.json"  # beside the run folders, not in them: analyze reads those whole
        known = json.loads(index.read_text()) if index.exists() else {}
        index.write_text(json.dumps(known | {sc.kind: asdict(sc)}, indent=1, sort_keys=True) + "\n")
    try:
        report = json.loads((run_dir / "report.json").read_text())
    except (OSError, ValueError) as e:
        return Outcome(sc, None, [], seconds=seconds, exit_code=code, error=f"no report: {e}")
    alerts = []
    try:
        for line in (run_dir / "alerts.jsonl").read_text().splitlines():
            a = json.loads(line)
            if a.get("kind") not in ("cleared", "hang_detail"):
                alerts.append(a.get("kind"))
    except (OSError, ValueError):
        pass
    return Outcome(sc, report.get("verdict"), sorted(report.get("culprit_ranks") or []), alerts, seconds, code)


def table(outcomes: list[Outcome]) -> str:
    by: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by[o.scenario.expect].append(o)
    verdicts = sorted({o.scenario.expect for o in outcomes})
    lines = ["| fault class | runs | verdict recall | verdict precision | culprit right | live alerts | false alarms |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for v in verdicts:
        runs = by[v]
        predicted = [o for o in outcomes if o.verdict == v]
        tp = sum(1 for o in runs if o.verdict_ok)
        prec = tp / len(predicted) if predicted else float("nan")
        culprit = sum(1 for o in runs if o.verdict_ok and o.culprit_ok)
        live = sum(1 for o in runs if o.alerts)
        fa = sum(1 for o in runs if v == "healthy" and (o.alerts or o.verdict != "healthy"))
        lines.append(f"| {v} | {len(runs)} | {tp}/{len(runs)} | {prec:.2f} | {culprit}/{len(runs)} | {live}/{len(runs)} | "
                     f"{fa if v == 'healthy' else '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--worlds", default="2,3,4,8")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--kinds", default=",".join(ALL_KINDS), help="fault classes to draw from")
    ap.add_argument("--record", type=Path, help="keep each run folder here, one per kind (the last of each)")
    args = ap.parse_args(argv)
    worlds = [int(w) for w in args.worlds.split(",")]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="ncclscope-matrix-") as tmp:
        for i, sc in enumerate(scenarios(args.n, args.seed, worlds, args.kinds.split(",")), 1):
            o = run_one(sc, Path(tmp), record=args.record)
            outcomes.append(o)
            mark = "ok" if o.verdict_ok and o.culprit_ok else "WRONG"
            print(f"[{i}/{args.n}] {sc.label:40s} -> {o.verdict} {o.culprits} alerts={o.alerts} "
                  f"{o.seconds:.0f}s {mark}{' ' + o.error if o.error else ''}", flush=True)
    print()
    print(table(outcomes))
    if args.out:
        args.out.write_text(json.dumps([asdict(o.scenario) | {"verdict": o.verdict, "culprits": o.culprits,
                                                               "alerts": o.alerts, "seconds": o.seconds}
                                        for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
