"""Detector accuracy at scale: generated NCCL-format runs of 64 to 4,096 ranks (8 GPUs a host) with
injected hangs, crashes, desyncs and stragglers at random ranks and steps, plus fault-free runs.
Prints, per size and fault class, how often the verdict and the culprit were right, and the time
to a verdict.

    python benchmarks/synth_matrix.py --sizes 64,512,4096 --seeds 3
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ncclscope.analysis import analyze_paths
from ncclscope.synth import generate_run

FAULTS = [None, "hang", "crash", "desync", "straggler"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,512,4096")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args(argv)
    rows: dict[tuple[int, str], list[tuple[bool, bool, float]]] = defaultdict(list)
    for n in [int(s) for s in args.sizes.split(",")]:
        for fault in FAULTS:
            for seed in range(args.seeds):
                rng = random.Random(seed * 1000 + n)
                rank = rng.randrange(n) if fault else None
                step = rng.randint(2, args.steps - 2) if fault else None
                with tempfile.TemporaryDirectory(prefix="ncclscope-synth-") as tmp:
                    truth = generate_run(Path(tmp) / "run", nranks=n, steps=args.steps, buckets=2, fault=fault,
                                         fault_rank=rank, fault_step=step, seed=seed)
                    t0 = time.perf_counter()
                    a = analyze_paths([truth.path], cache=False)
                    dt = time.perf_counter() - t0
                verdict_ok = a.decision.verdict.value == truth.verdict
                culprit_ok = verdict_ok and tuple(a.decision.culprit_ranks) == tuple(truth.culprit_ranks)
                rows[(n, str(fault or "healthy"))].append((verdict_ok, culprit_ok, dt))
                print(f"n={n:5d} {fault or 'healthy'!s:10s} seed={seed} rank={rank} -> {a.decision.verdict.value} "
                      f"{list(a.decision.culprit_ranks)[:4]} (expected {truth.verdict} {list(truth.culprit_ranks)}) "
                      f"{dt:.1f}s", flush=True)
    print()
    print("| ranks | fault | runs | verdict right | culprit right | false alarms | seconds to verdict (max) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (n, fault), res in sorted(rows.items()):
        v = sum(r[0] for r in res)
        c = sum(r[1] for r in res)
        fa = sum(1 for r in res if not r[0]) if fault == "healthy" else "-"
        print(f"| {n} | {fault} | {len(res)} | {v}/{len(res)} | {c}/{len(res)} | {fa} | {max(r[2] for r in res):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
