"""What ncclscope's in-process hook costs a training step.

Runs the DDP MLP job (tests/jobs/train_job.py: forward, backward with DDP bucket all-reduces, SGD,
one Python all_reduce of the loss per step) under ``ncclscope run`` with and without the hook
(``--no-hook``), alternating, and optionally with no wrapper at all. Both wrapped variants get the
same environment (NCCL_DEBUG, Flight Recorder, ...), so the ratio is the hook alone.

    python benchmarks/hook_overhead.py --backend gloo --steps 60 --repeats 3
    python benchmarks/hook_overhead.py --backend nccl --nproc 2 --steps 300   # 2 GPUs, corpus-sized MLP

Prints the median step time of rank 0 (steps after --warmup) for each run, the median over the
repeats per variant, and the ratio hook / no-hook.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "train_job.py"


def run_once(variant: str, args: argparse.Namespace, work: Path, n: int) -> float:
    out = work / f"{variant}-{n}"
    out.mkdir(parents=True)
    env = dict(os.environ)
    env.update({"JOB_BACKEND": args.backend, "JOB_STEPS": str(args.steps), "JOB_DIM": str(args.dim),
                "JOB_LAYERS": str(args.layers), "JOB_BATCH": str(args.batch), "JOB_OUT": str(out),
                "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"), "MASTER_ADDR": "127.0.0.1"})
    if args.backend == "gloo":
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    launch = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={args.nproc}",
              "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0", str(JOB)]
    if variant == "bare":
        cmd = launch
    else:
        cmd = [sys.executable, "-m", "ncclscope", "run", "--quiet", "--run-dir", str(out / "run")]
        cmd += (["--no-hook"] if variant == "nohook" else []) + ["--"] + launch
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{variant} run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    times = json.loads((out / "result_rank0.json").read_text())["step_times"][args.warmup:]
    return statistics.median(times) * 1000.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--dim", type=int, default=None, help="MLP width (gloo 256, nccl 2048)")
    p.add_argument("--layers", type=int, default=None, help="MLP depth (gloo 4, nccl 8)")
    p.add_argument("--batch", type=int, default=None, help="batch (gloo 32, nccl 64)")
    p.add_argument("--bare", action="store_true", help="also time runs without the wrapper")
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args(argv)
    gpu = args.backend == "nccl"
    args.dim = args.dim or (2048 if gpu else 256)
    args.layers = args.layers or (8 if gpu else 4)
    args.batch = args.batch or (64 if gpu else 32)
    if args.steps <= args.warmup + 5:
        p.error("--steps must exceed --warmup by more than 5")
    variants = ["nohook", "hook"] + (["bare"] if args.bare else [])
    medians: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="ncclscope-bench-") as tmp:
        for n in range(args.repeats):
            for v in (variants if n % 2 == 0 else list(reversed(variants))):
                m = run_once(v, args, Path(tmp), n)
                medians[v].append(m)
                print(f"repeat {n} {v:7s} median step {m:.3f} ms", flush=True)
    print(f"backend {args.backend}, {args.nproc} ranks, MLP {args.layers} x {args.dim}, batch {args.batch}, "
          f"{args.steps} steps (first {args.warmup} dropped), {args.repeats} repeats")
    for v in variants:
        print(f"{v:7s} median of medians {statistics.median(medians[v]):.3f} ms  ({', '.join(f'{x:.3f}' for x in medians[v])})")
    ratio = statistics.median(medians["hook"]) / statistics.median(medians["nohook"])
    print(f"ratio hook / no-hook: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
