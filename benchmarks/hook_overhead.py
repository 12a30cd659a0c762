"""What ncclscope's in-process hook costs: per collective, per tensor-parallel-style step, per DDP step.

Three jobs, each timed bare and traced in separate processes, alternating (bare, traced, traced,
bare, ...), every process with the same environment (what ``ncclscope run`` sets: NCCL_DEBUG,
Flight Recorder, TORCH_NCCL_ENABLE_TIMING, ...); only the traced one has the hook on PYTHONPATH:

- ``micro``: world size 1, a loop of one-element ``dist.all_reduce`` (the CPU path of a collective,
  which is all the hook adds to): per-call time of each block of ``--calls``, median over blocks;
- ``tp``: world size 1, a tensor-parallel-style step: ``--layers`` layers, each two matmuls and
  ``--colls`` all_reduces issued from Python (two of the activations, the rest one element);
  median step time;
- ``ddp``: the DDP MLP job (tests/jobs/train_job.py) under ``ncclscope run`` with and without the
  hook (``--no-hook``), ``--nproc`` ranks; median step time of rank 0.

    python benchmarks/hook_overhead.py micro --backend nccl --repeats 3
    python benchmarks/hook_overhead.py tp --backend nccl --repeats 3
    python benchmarks/hook_overhead.py ddp --backend gloo --steps 60 --repeats 3

Prints each run, the median per variant and the ratio (and the difference per collective for
``micro``) traced / bare, both measured in this run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "train_job.py"


# --- the jobs (run in a child process: ``hook_overhead.py _child KIND ...``) ---------------------

def _init(backend: str) -> tuple[object, object]:
    import torch
    import torch.distributed as dist

    if backend == "nccl":
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    return dist, dev


def _sync(backend: str) -> None:
    if backend == "nccl":
        import torch

        torch.cuda.synchronize()


def child_micro(args: argparse.Namespace) -> dict[str, object]:
    import torch

    dist, dev = _init(args.backend)
    x = torch.ones(1, device=dev)  # type: ignore[call-overload]
    per_call: list[float] = []
    cpu_per_call: list[float] = []
    for block in range(args.blocks + 1):
        _sync(args.backend)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.calls):
            dist.all_reduce(x)  # type: ignore[attr-defined]
        _sync(args.backend)
        if block:  # the first block warms up
            per_call.append((time.perf_counter() - t0) / args.calls * 1e6)
            cpu_per_call.append((time.process_time() - c0) / args.calls * 1e6)  # all threads of the process
    dist.destroy_process_group()  # type: ignore[attr-defined]
    return {"us_per_call": statistics.median(per_call), "cpu_us_per_call": statistics.median(cpu_per_call),
            "blocks": per_call}


def child_tp(args: argparse.Namespace) -> dict[str, object]:
    import torch

    dist, dev = _init(args.backend)
    dtype = torch.bfloat16 if args.backend == "nccl" else torch.float32
    g = torch.Generator(device="cpu").manual_seed(0)
    h, t = args.hidden, args.tokens
    ws = [(torch.randn(h, 2 * h, generator=g) / h ** 0.5).to(dev, dtype) for _ in range(args.layers)]
    vs = [(torch.randn(2 * h, h, generator=g) / h ** 0.5).to(dev, dtype) for _ in range(args.layers)]
    x0 = torch.randn(t, h, generator=g).to(dev, dtype)
    small = torch.ones(1, device=dev)  # type: ignore[call-overload]
    times: list[float] = []
    for step in range(args.steps):
        _sync(args.backend)
        t0 = time.perf_counter()
        x = x0
        for w, v in zip(ws, vs):
            y = torch.nn.functional.gelu(x @ w)
            dist.all_reduce(y)  # type: ignore[attr-defined]  # column-parallel output (as a sequence-parallel gather would)
            x = y @ v
            dist.all_reduce(x)  # type: ignore[attr-defined]  # row-parallel partial sums
            for _ in range(args.colls - 2):
                dist.all_reduce(small)  # type: ignore[attr-defined]  # norms, flags, scales
        _sync(args.backend)
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1000.0)
    dist.destroy_process_group()  # type: ignore[attr-defined]
    return {"ms_per_step": statistics.median(times), "colls_per_step": args.layers * args.colls}


# --- the runner ------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def other_hook_site(run_dir: Path, src: Path) -> Path:
    """A hook site made from another copy of ``analyzer/hook`` (an older version, to compare)."""
    from ncclscope.launch import HOOK_FILES, HOOK_PACKAGE, HOOK_SITE

    site = run_dir / HOOK_SITE
    (site / HOOK_PACKAGE).mkdir(parents=True)
    shutil.copyfile(src / "sitecustomize.py", site / "sitecustomize.py")
    for name in HOOK_FILES:
        shutil.copyfile(src / name, site / HOOK_PACKAGE / name)
    return site


def hook_summary(path: Path) -> str:
    """What the traced process wrote: coll / done lines, the last heartbeat's counts, errors."""
    n: dict[str, int] = {}
    last_hb: dict[str, object] = {}
    if path.exists():
        for line in path.open():
            try:
                rec = json.loads(line)
            except ValueError:
                n["bad"] = n.get("bad", 0) + 1
                continue
            n[rec.get("type")] = n.get(rec.get("type"), 0) + 1
            if rec.get("type") == "hb":
                last_hb = rec
    return (f"coll {n.get('coll', 0)} done {n.get('done', 0)} error {n.get('error', 0)} "
            f"sampled_out {last_hb.get('sampled_out', 0)} dropped {last_hb.get('dropped', 0)}")


def run_child(kind: str, variant: str, args: argparse.Namespace, work: Path, n: int) -> dict[str, object]:
    from ncclscope.launch import merge_env, prepare_hook_site, tracing_env

    run_dir = work / f"{kind}-{variant}-{n}"
    run_dir.mkdir(parents=True)
    traced = variant != "bare"
    site = None if not traced else prepare_hook_site(run_dir) if variant == "traced" else other_hook_site(run_dir, args.other_hook)
    env, _, _ = merge_env(dict(os.environ), tracing_env(run_dir, False, site))
    env.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(_free_port()), "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")})
    cmd = [sys.executable, str(Path(__file__).resolve()), "_child", kind] + args.child_argv
    try:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout, check=False)
    finally:
        if site is not None:
            shutil.rmtree(site, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {variant} failed (exit {proc.returncode}): {proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if traced:
        result["hook_lines"] = hook_summary(run_dir / "ncclscope-rank0.jsonl")
    return dict(result)


def run_ddp(variant: str, args: argparse.Namespace, work: Path, n: int) -> float:
    traced = variant != "bare"
    out = work / f"ddp-{variant}-{n}"
    out.mkdir(parents=True)
    env = dict(os.environ)
    env.update({"JOB_BACKEND": args.backend, "JOB_STEPS": str(args.steps), "JOB_DIM": str(args.dim),
                "JOB_LAYERS": str(args.layers), "JOB_BATCH": str(args.batch), "JOB_OUT": str(out),
                "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"), "MASTER_ADDR": "127.0.0.1"})
    if args.backend == "gloo":
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    launch = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={args.nproc}",
              "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0", str(JOB)]
    cmd = [sys.executable, "-m", "ncclscope", "run", "--quiet", "--run-dir", str(out / "run")]
    cmd += ([] if traced else ["--no-hook"]) + ["--"] + launch
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"ddp run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    times = json.loads((out / "result_rank0.json").read_text())["step_times"][args.warmup:]
    return statistics.median(times) * 1000.0


def measure(args: argparse.Namespace) -> dict[str, list[float]]:
    key = {"micro": "us_per_call", "tp": "ms_per_step"}.get(args.kind)
    variants = ["bare", "traced"] + (["other"] if args.other_hook else [])
    got: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ncclscope-bench-") as tmp:
        for n in range(args.repeats):
            for name in (variants if n % 2 == 0 else variants[::-1]):
                if key is None:
                    value = run_ddp(name, args, Path(tmp), n)
                    extra = ""
                else:
                    res = run_child(args.kind, name, args, Path(tmp), n)
                    value = float(res[key])  # type: ignore[arg-type]
                    extra = f"  hook records {res['hook_lines']}" if name != "bare" else ""
                    if "cpu_us_per_call" in res:
                        cpu.setdefault(name, []).append(float(res["cpu_us_per_call"]))  # type: ignore[arg-type]
                        extra = f"  (process CPU {float(res['cpu_us_per_call']):.2f} us per call){extra}"  # type: ignore[arg-type]
                got[name].append(value)
                print(f"repeat {n} {name:6s} {value:9.3f} {'us per call' if args.kind == 'micro' else 'ms per step'}{extra}",
                      flush=True)
    for name, values in cpu.items():
        print(f"{name:6s} median process CPU {statistics.median(values):9.3f} us per call "
              f"({statistics.median(values) - statistics.median(cpu['bare']):+.2f} vs bare)")
    return got


def report(args: argparse.Namespace, got: dict[str, list[float]]) -> None:
    bare, traced = statistics.median(got["bare"]), statistics.median(got["traced"])
    unit = "us per call" if args.kind == "micro" else "ms per step"
    for name in got:
        print(f"{name:6s} median {statistics.median(got[name]):9.3f} {unit}  ({', '.join(f'{x:.3f}' for x in got[name])})")
    pairs = [t - b for b, t in zip(got["bare"], got["traced"])]
    print(f"ratio traced / bare: {traced / bare:.4f}  (+{(traced / bare - 1) * 100:.2f} %)")
    if args.kind == "micro":
        print(f"added per traced collective: {traced - bare:+.2f} us (pairs: {', '.join(f'{p:+.2f}' for p in pairs)})")
    elif args.kind == "tp":
        n = args.layers * args.colls
        print(f"added per collective in the step: {(traced - bare) * 1000.0 / n:+.2f} us ({n} collectives a step)")
    if "other" in got:
        other = statistics.median(got["other"])
        print(f"other hook ({args.other_hook}): ratio other / bare {other / bare:.4f}, "
              f"added {other - bare:+.3f} {unit.split(' ')[0]}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        return _child_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kind", choices=["micro", "tp", "ddp"])
    p.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    p.add_argument("--repeats", type=int, default=3, help="bare/traced pairs")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--other-hook", type=Path, default=None,
                   help="micro/tp: also time a hook copied from this folder (e.g. an older analyzer/hook), as 'other'")
    p.add_argument("--calls", type=int, default=3000, help="micro: all_reduces per block")
    p.add_argument("--blocks", type=int, default=5, help="micro: timed blocks per process (after one warm-up block)")
    p.add_argument("--layers", type=int, default=None, help="tp: layers (32); ddp: MLP depth (gloo 4, nccl 8)")
    p.add_argument("--colls", type=int, default=8, help="tp: all_reduces per layer")
    p.add_argument("--hidden", type=int, default=4096, help="tp: hidden size")
    p.add_argument("--tokens", type=int, default=1024, help="tp: tokens per step")
    p.add_argument("--steps", type=int, default=None, help="tp (30) / ddp (60) steps")
    p.add_argument("--warmup", type=int, default=None, help="steps dropped (tp 5, ddp 10)")
    p.add_argument("--nproc", type=int, default=2, help="ddp: ranks")
    p.add_argument("--dim", type=int, default=None, help="ddp: MLP width (gloo 256, nccl 2048)")
    p.add_argument("--batch", type=int, default=None, help="ddp: batch (gloo 32, nccl 64)")
    args = p.parse_args(argv)
    gpu = args.backend == "nccl"
    if args.kind == "tp":
        args.layers, args.steps, args.warmup = args.layers or 32, args.steps or 30, args.warmup or 5
        if args.backend == "gloo":
            args.hidden, args.tokens = min(args.hidden, 256), min(args.tokens, 64)
        if args.colls < 2:
            p.error("--colls must be at least 2 (the two activation all_reduces)")
    elif args.kind == "ddp":
        args.layers, args.steps, args.warmup = args.layers or (8 if gpu else 4), args.steps or 60, args.warmup or 10
        args.dim, args.batch = args.dim or (2048 if gpu else 256), args.batch or (64 if gpu else 32)
        if args.steps <= args.warmup + 5:
            p.error("--steps must exceed --warmup by more than 5")
    args.child_argv = ["--backend", args.backend, "--calls", str(args.calls), "--blocks", str(args.blocks),
                       "--layers", str(args.layers or 0), "--colls", str(args.colls), "--hidden", str(args.hidden),
                       "--tokens", str(args.tokens), "--steps", str(args.steps or 0), "--warmup", str(args.warmup or 0)]
    got = measure(args)
    what = {"micro": f"world size 1, {args.calls} one-element all_reduces x {args.blocks} blocks",
            "tp": f"world size 1, {args.layers} layers x {args.colls} all_reduces, hidden {args.hidden}, "
                  f"{args.tokens} tokens, {args.steps} steps (first {args.warmup} dropped)",
            "ddp": f"{args.nproc} ranks, MLP {args.layers} x {args.dim}, batch {args.batch}, {args.steps} steps "
                   f"(first {args.warmup} dropped)"}[args.kind]
    print(f"{args.kind}: backend {args.backend}, {what}, {args.repeats} interleaved pairs")
    report(args, got)
    return 0


def _child_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["micro", "tp"])
    for name in ("calls", "blocks", "layers", "colls", "hidden", "tokens", "steps", "warmup"):
        p.add_argument(f"--{name}", type=int, default=0)
    p.add_argument("--backend", default="gloo")
    args = p.parse_args(argv)
    result = child_micro(args) if args.kind == "micro" else child_tp(args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
