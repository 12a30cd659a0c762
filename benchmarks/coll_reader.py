"""The COLL-line readers alone: compiled and numpy columns against the regex path and ``grep -c`` on the
same bytes.

Run: ``.venv/bin/python benchmarks/coll_reader.py [FILE ...] [--repeat 7]``. Without files, one
rank's log of a generated 64-rank run (about 18 k COLL lines, 4 MB) is used. The four contenders
run interleaved, best of ``--repeat``, so a machine that changes speed mid-run hits all of them
alike; each is printed as nanoseconds per byte and as a ratio to grep (whose time includes starting
its process: about 1 ms).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ncclscope.sources.coll import kernel as coll_kernel  # noqa: E402
from ncclscope.sources.nccl_log import scan_coll_block, scan_coll_block_regex  # noqa: E402
from ncclscope.synth import generate_run  # noqa: E402


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def measure(name: str, data: bytes, repeat: int) -> None:
    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        grep = ["grep", "-c", "NCCL INFO", f.name]
        subprocess.run(grep, capture_output=True, check=False)
        compiled = coll_kernel.arm(note=print)
        coll_kernel.disarm()
        times = {"grep -c": float("inf"), "regex": float("inf"), "numpy": float("inf")}
        if compiled:
            times["compiled"] = float("inf")
        for _ in range(repeat):  # interleaved
            times["grep -c"] = min(times["grep -c"], best(lambda: subprocess.run(grep, capture_output=True), 1))
            times["regex"] = min(times["regex"], best(lambda: scan_coll_block_regex(data, 1, "x"), 1))
            times["numpy"] = min(times["numpy"], best(lambda: scan_coll_block(data, 1, "x"), 1))
            if compiled:
                coll_kernel.arm()
                times["compiled"] = min(times["compiled"], best(lambda: scan_coll_block(data, 1, "x"), 1))
                coll_kernel.disarm()
    rows, _ = scan_coll_block(data, 1, "x")
    nlines = data.count(b"\n")
    print(f"{name}: {len(data) / 1e6:.1f} MB, {nlines:,} lines, {0 if rows is None else len(rows):,} COLL rows")
    for k, v in times.items():
        print(f"  {k:8} {v * 1e3:8.1f} ms  {v / len(data) * 1e9:5.2f} ns/B  {v / times['grep -c']:5.1f}x grep")
    print(f"  numpy reader is {times['regex'] / times['numpy']:.1f}x faster than the regex path")
    if "compiled" in times:
        print(f"  compiled reader is {times['numpy'] / times['compiled']:.1f}x faster than the numpy reader")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.files:
        for p in args.files:
            measure(str(p), p.read_bytes(), args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        generate_run(Path(tmp) / "r64", nranks=64, steps=1700, fault="hang", fault_step=1690, seed=0)
        one = sorted((Path(tmp) / "r64").glob("*.nccl.log"))[0]
        measure("one rank's log of a 64-rank run (grep's time includes its process start)", one.read_bytes(),
                args.repeat)


if __name__ == "__main__":
    main()
