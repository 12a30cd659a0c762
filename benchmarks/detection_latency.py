"""How fast does ncclscope's live monitor report a hang, next to PyTorch's own timeout?

Each run: ``ncclscope run -- torchrun --nproc_per_node W tests/jobs/train_job.py`` (gloo on CPU,
the real hook and monitor), one random rank sleeps at a random step. Measured from the job's own
records (``DIR/ncclscope-rank<R>.jsonl``, one clock):

- hang start: the sleeping rank's last completed collective (its next statement is the sleep);
- alert: ``ts`` of the first ``hang`` alert in ``DIR/alerts.jsonl``;
- located: ``ts`` of the alert that first carries the sleeping rank's code line (``where``);
- PyTorch: the first waiting rank's exit after its collective timed out (process-group timeout
  ``--pg-timeout``; PyTorch's default is 600 s for NCCL, 1800 s for gloo).

Usage: ``.venv/bin/python benchmarks/detection_latency.py [--runs 10] [--pg-timeout 20] [--out x.json]``
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "train_job.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def records(run_dir: Path, rank: int) -> list[dict[str, Any]]:
    out = []
    p = run_dir / f"ncclscope-rank{rank}.jsonl"
    if not p.exists():
        return out
    for line in p.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def one_run(i: int, world: int, rank: int, step: int, pg_timeout: float, base: Path) -> dict[str, Any]:
    run_dir = base / f"run{i:02d}"
    env = {**os.environ, "JOB_BACKEND": "gloo", "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": "", "JOB_STEPS": "60", "JOB_HANG_RANK": str(rank), "JOB_HANG_STEP": str(step),
           "JOB_HANG_S": str(pg_timeout + 30), "JOB_PG_TIMEOUT": str(pg_timeout)}
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet", "--",
           sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(JOB)]
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       timeout=pg_timeout + 180)
    wall = time.time() - t0
    hang_t = max((r["t"] for r in records(run_dir, rank) if r.get("type") == "done"), default=None)
    alerts = []
    ap = run_dir / "alerts.jsonl"
    if ap.exists():
        alerts = [json.loads(x) for x in ap.read_text().splitlines() if x.strip()]
    hang = next((a for a in alerts if a["kind"] == "hang"), None)
    located = next((a for a in alerts if a["kind"] in ("hang", "hang_detail")
                    and str(a.get("where", {}).get(str(rank), "")).startswith("train_job.py:")), None)
    waiter_exits = [r["t"] for w in range(world) if w != rank for r in records(run_dir, w)
                    if r.get("type") == "exit" and r.get("code") not in (0, None)]
    res: dict[str, Any] = {
        "run": i, "world": world, "rank": rank, "step": step, "exit": p.returncode, "wall_s": round(wall, 1),
        "culprit_ok": bool(hang and hang["culprit_ranks"] == [rank]),
        "alert_s": round(hang["ts"] - hang_t, 2) if hang and hang_t else None,
        "located_s": round(located["ts"] - hang_t, 2) if located and hang_t else None,
        "pytorch_s": round(min(waiter_exits) - hang_t, 2) if waiter_exits and hang_t else None,
        "threshold_s": hang.get("threshold_s") if hang else None,
    }
    return res


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return round(v[lo] + (v[hi] - v[lo]) * (k - lo), 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pg-timeout", type=float, default=20.0, help="process-group timeout of the job, seconds")
    ap.add_argument("--worlds", default="3,4", help="world sizes to alternate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    worlds = [int(w) for w in args.worlds.split(",") if w.strip()]
    results = []
    with tempfile.TemporaryDirectory(prefix="ncclscope-bench-") as tmp:
        for i in range(args.runs):
            world = worlds[i % len(worlds)]
            rank, step = rng.randrange(world), rng.randrange(4, 16)
            try:
                r = one_run(i, world, rank, step, args.pg_timeout, Path(tmp))
            except subprocess.TimeoutExpired:
                r = {"run": i, "world": world, "rank": rank, "step": step, "error": "timed out"}
            results.append(r)
            print(json.dumps(r), flush=True)
    alert = [r["alert_s"] for r in results if r.get("alert_s") is not None]
    located = [r["located_s"] for r in results if r.get("located_s") is not None]
    torch_t = [r["pytorch_s"] for r in results if r.get("pytorch_s") is not None]
    summary = {
        "runs": len(results), "culprit_named": sum(1 for r in results if r.get("culprit_ok")),
        "alert_median_s": pct(alert, 0.5), "alert_p90_s": pct(alert, 0.9), "alert_max_s": max(alert, default=None),
        "located_median_s": pct(located, 0.5), "located_p90_s": pct(located, 0.9),
        "pytorch_median_s": pct(torch_t, 0.5), "pytorch_p90_s": pct(torch_t, 0.9), "pg_timeout_s": args.pg_timeout,
        "mean_alert_s": round(statistics.mean(alert), 2) if alert else None,
    }
    print(json.dumps(summary), flush=True)
    print(f"\nhang -> ncclscope alert: median {summary['alert_median_s']} s, p90 {summary['alert_p90_s']} s; "
          f"code line of the sleeping rank: median {summary['located_median_s']} s, p90 {summary['located_p90_s']} s; "
          f"culprit named in {summary['culprit_named']}/{summary['runs']}")
    print(f"hang -> PyTorch timeout (process-group timeout {args.pg_timeout:g} s): median "
          f"{summary['pytorch_median_s']} s, p90 {summary['pytorch_p90_s']} s (PyTorch's default timeout: 600 s NCCL, "
          f"1800 s gloo)")
    if args.out:
        args.out.write_text(json.dumps({"runs": results, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
