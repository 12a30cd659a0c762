"""Peak memory of ``ncclscope analyze`` against the size of its input: empty lines, short lines and an NCCL
run's own lines (1, 5, 10, 20 MB), each beside a real NCCL log. Prints the table of docs/performance.md.

    python tests/security/memory_table.py [--sizes 1,5,10,20] [--kinds empty,short,normal] [--python-path DIR]

Two figures a row, both of the whole process tree (``analyze`` and its parse workers): the largest single
process (the kernel's own peak, ``wait4``'s ``ru_maxrss``) and the largest sum of every process's resident
memory at one moment (sampled from /proc every 10 ms, so a spike shorter than that may be missed).
``--python-path`` puts another copy of the package first on the path (a checkout before a change, named
``ncclscope``), to measure both the same way. ``peak_rss_kb`` is what tests/security/test_security_memory.py
holds to its bound.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NCCL_LOG = ROOT / "samples" / "gpu_hang" / "vm.820.nccl.log"
MB = 1_000_000


def write_input(folder: Path, kind: str, mb: int) -> int:
    """``folder`` holding a real NCCL log and ``mb`` MB of ``kind`` lines; returns the bytes written."""
    folder.mkdir(parents=True)
    shutil.copy(NCCL_LOG, folder / NCCL_LOG.name)
    if kind == "normal":  # an 8-rank run's NCCL logs, its steps chosen to come to about mb MB
        from ncclscope.synth import generate_run

        generate_run(folder / "run", nranks=8, steps=max(5, mb * 60), fault="hang", fault_step=max(2, mb * 60 - 3))
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    line = {"empty": b"\n", "short": b"x\n"}[kind]
    with open(folder / f"{kind}.log", "wb") as f:
        f.write(line * (mb * MB // len(line)))
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def peak_rss_kb(argv: list[str], env: dict[str, str] | None = None, timeout: float = 1800) -> tuple[int, int, int]:
    """(exit status, largest single process's peak RSS, largest sampled sum over the process tree), in KB, of
    ``argv`` run to its end with its output thrown away."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    tree_peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            tree_peak[0] = max(tree_peak[0], _tree_rss_kb(proc.pid))
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.01)
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss, tree_peak[0]


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and every process under it, now (KB)."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            total += next((int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS:")), 0)
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,5,10,20")
    ap.add_argument("--kinds", default="empty,short,normal")
    ap.add_argument("--python-path", default=None)
    args = ap.parse_args()
    env = dict(os.environ)
    if args.python_path:
        env["PYTHONPATH"] = args.python_path
    print("| lines | input MB | peak of one process MB | peak of the tree MB | exit |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ncclscope-memory-") as tmp:
        for kind in args.kinds.split(","):
            for mb in (int(x) for x in args.sizes.split(",")):
                folder = Path(tmp) / f"{kind}{mb}"
                size = write_input(folder, kind, mb)
                rc, one, tree = peak_rss_kb([sys.executable, "-m", "ncclscope", "analyze", "--no-cache", "--json",
                                             str(folder)], env)
                print(f"| {kind} | {size / MB:.1f} | {one / 1024:.0f} | {tree / 1024:.0f} | {rc} |", flush=True)
                shutil.rmtree(folder)


if __name__ == "__main__":
    main()
