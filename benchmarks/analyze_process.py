"""Whole ``ncclscope analyze --no-cache --json DIR`` processes against ``grep -c "NCCL INFO" -r DIR``.

For each rank count a hang run is generated (``ncclscope.synth``, the steps of ``ncclscope bench``),
the compiled COLL reader is built ahead (it is built once, on the first input of 48 MB or more), and
the two commands run in turn, five pairs after one unmeasured pair: wall and CPU seconds of each
reaped process, the medians of the pair-by-pair ratios, the median peak RSS of ``analyze`` (its largest
process, ``wait4``'s), and the machine's 1-minute load average before and after the pairs (this is a shared
machine: a figure is only read with its load). The same figure is the last columns of ``ncclscope bench``.

Run: ``.venv/bin/python benchmarks/analyze_process.py [--ranks 64,512,4096,16384] [--pairs 5] [--keep DIR]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ncclscope.commands.bench import DEFAULT_STEPS, analyze_vs_grep, coll_reader  # noqa: E402
from ncclscope.sources.coll import kernel as coll_kernel  # noqa: E402
from ncclscope.synth import generate_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="64,512,4096")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="generate into (or reuse) DIR/r<ranks> and keep them")
    args = ap.parse_args()
    coll_kernel.arm(build=True)
    print(f"COLL reader: {coll_reader()}")
    print("| ranks | MB | lines | analyze wall s | analyze CPU s | grep -c wall s | grep CPU s | wall x grep | CPU x grep "
          "| analyze peak MB | load before / after |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="ncclscope-process-") as tmp:
        base = args.keep or Path(tmp)
        for n in (int(x) for x in args.ranks.split(",")):
            dest = base / f"r{n}"
            steps = DEFAULT_STEPS.get(n) or max(20, 9_800_000 // (n * 11))
            if not dest.exists():
                generate_run(dest, nranks=n, steps=steps, fault="hang", fault_step=steps - 10, seed=0)
            files = [p for p in dest.rglob("*") if p.is_file()]
            mb = sum(p.stat().st_size for p in files) / 1e6
            lines = sum(p.read_bytes().count(b"\n") for p in files)
            load0 = os.getloadavg()[0]
            r = analyze_vs_grep(dest, args.pairs)
            print(f"| {n:,} | {mb:,.0f} | {lines:,} | {r.a_wall_s:.2f} | {r.a_cpu_s:.2f} | {r.b_wall_s:.3f} | "
                  f"{r.b_cpu_s:.3f} | {r.wall_ratio:.1f}x | {r.cpu_ratio:.1f}x | {r.a_peak_mb:,.0f} | "
                  f"{load0:.1f} / {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
