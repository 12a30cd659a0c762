"""What ncclscope's in-process hook costs: per collective, per tensor-parallel-style step, per DDP step,
and its wrapper alone.

Four jobs, each timed in separate processes per variant, the order of the variants turned round
every repeat; every process but ``bare-noenv`` has the environment ``ncclscope run`` sets
(NCCL_DEBUG, Flight Recorder, TORCH_NCCL_ENABLE_TIMING, ...), and only the hook variants have the
hook on PYTHONPATH:

- ``micro``: world size 1, a loop of one-element ``dist.all_reduce`` (the CPU path of a collective,
  which is all the hook adds to): per-call time of each block of ``--calls``, median over blocks;
- ``tp``: world size 1, a tensor-parallel-style step: ``--layers`` layers, each two matmuls and
  ``--colls`` all_reduces issued from Python (two of the activations, the rest one element);
  median step time;
- ``ddp``: the DDP MLP job (tests/jobs/train_job.py) under ``ncclscope run`` with and without the
  hook (``--no-hook``), ``--nproc`` ranks; median step time of rank 0;
- ``wrapper``: world size 1, the hook's ``_wrap`` around a no-op that takes the real one-element
  tensor (CUDA with ``--backend nccl``: exactly the blocking GPU path; CPU with gloo: the blocking
  CPU path, which also makes the ``done`` record; ``--meta``, a meta tensor: the blocking GPU
  path's code on a machine without a GPU), called from one line in blocks of ``--calls``
  (5,000), bare and wrapped in turns, ``--blocks`` (40) pairs in one traced process whose threads
  run (the writer empties the queue between pairs, so no record is dropped, as at a real
  collective's rate): the training thread's CPU added per call, in ns, from the fastest blocks
  (min) and the median ones, without the collective's own time and noise. Variants: ``traced``
  (this checkout's hook) and ``other``; ``--repeats`` processes each.

``--variants`` (micro, tp) separates the suspects: ``bare-noenv`` (no ncclscope environment),
``bare`` (the environment only, the baseline), ``traced`` (the hook), ``hook-nothreads`` (the
per-collective path alone), ``hook-nowriter``, ``hook-noticker`` (no poll, heartbeat or Flight
Recorder read), ``hook-nofr`` (no Flight Recorder read), ``other`` (a hook copied from
``--other-hook DIR``, e.g. an older analyzer/hook, timed in the same run).

    python benchmarks/hook_overhead.py micro --backend nccl --repeats 5
    python benchmarks/hook_overhead.py tp --backend nccl --repeats 5 --variants bare-noenv,traced,hook-nothreads,hook-noticker
    python benchmarks/hook_overhead.py ddp --backend gloo --steps 60 --repeats 3
    python benchmarks/hook_overhead.py wrapper --backend nccl --repeats 3 --other-hook git:REV

Prints each run, then per variant the median (wall and process CPU, which counts every thread),
the median of the per-repeat ratios to ``bare`` and the time added per collective (``wrapper``:
per variant the min and the median over its processes of the ns added per call).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "train_job.py"


# --- the jobs (run in a child process: ``hook_overhead.py _child KIND ...``) ---------------------

# --- the variants that separate what the hook costs (applied in the child, before the group exists) ----
# bare-noenv: no ncclscope environment at all; bare: ncclscope's environment, no hook; traced: the hook;
# hook-nothreads: the hook's per-collective path only (writer and ticker threads exit at once, so the
# queue fills and drops); hook-nowriter: no writer thread; hook-noticker: no poll / heartbeat / Flight
# Recorder read; hook-nofr: ticker runs, no Flight Recorder read; other: a hook copied from --other-hook
VARIANTS = ("bare-noenv", "bare", "traced", "hook-nothreads", "hook-nowriter", "hook-noticker", "hook-nofr", "other")


def apply_variant(variant: str) -> None:
    if not variant.startswith("hook-"):
        return
    from _ncclscope_hook import tracer as T  # the hook on PYTHONPATH, as ncclscope run installs it

    def nothing(self: object) -> None:
        return None

    def no_fr(self: object) -> dict[str, object]:
        return {}

    # the writer's and the poller's thread bodies: their own classes, or (an older hook) the tracer's methods
    writer, poller = getattr(T, "Writer", None), getattr(T, "Poller", None)
    if variant in ("hook-nothreads", "hook-nowriter"):
        if writer is not None:
            writer._loop = nothing
        else:
            T.Tracer._write_loop = nothing  # type: ignore[method-assign, assignment]
    if variant in ("hook-nothreads", "hook-noticker"):
        if poller is not None:
            poller._loop = nothing
        else:
            T.Tracer._tick_loop = nothing  # type: ignore[method-assign, assignment]
    if variant == "hook-nofr":
        if poller is not None:
            poller._fr_status = no_fr
        else:
            T.Tracer._fr_status = no_fr  # type: ignore[method-assign, assignment]


def _init(backend: str) -> tuple[object, object]:
    import torch
    import torch.distributed as dist

    apply_variant(os.environ.get("HOOK_BENCH_VARIANT", ""))

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


def _hook_threads_cpu() -> float:
    """CPU seconds the hook's own threads (writer, ticker) have used so far; 0 without the hook."""
    import threading

    total = 0.0
    for t in threading.enumerate():
        if t.name.startswith("ncclscope-") and t.ident is not None:
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            except (OSError, AttributeError):
                pass
    return total


def _hook_all_reduce(dist: object) -> object:
    """The hook's wrapper of ``all_reduce`` (also while the call budget has put torch's function back
    on ``torch.distributed``), else whatever ``dist.all_reduce`` is now."""
    try:
        from _ncclscope_hook import budget
    except ImportError:
        return dist.all_reduce  # type: ignore[attr-defined]
    for module, name, _original, wrapper in budget.WRAPPERS.items:
        if module is dist and name == "all_reduce":
            return wrapper
    return dist.all_reduce  # type: ignore[attr-defined]


def _ab(dist: object, x: object, calls: int, blocks: int, sync: Callable[[], None]) -> list[float]:
    """In one traced process, blocks of the bare collective (the function under the hook's wrapper)
    and of the traced one, alternating: the training thread's CPU per call traced minus bare, one
    value per pair of blocks. Both run with the hook's threads alive, so this is the per-call path
    alone, measured a few milliseconds apart (machine drift falls on both)."""
    traced = _hook_all_reduce(dist)
    bare = getattr(traced, "__wrapped__", None)
    if bare is None or not getattr(traced, "__ncclscope_wrapped__", False):
        return []
    out: list[float] = []
    for k in range(blocks):
        got = {}
        for name in (("bare", "traced") if k % 2 == 0 else ("traced", "bare")):
            fn = bare if name == "bare" else traced
            sync()
            m0 = time.thread_time()
            for _ in range(calls):
                fn(x)
            sync()
            got[name] = (time.thread_time() - m0) / calls * 1e6
        out.append(got["traced"] - got["bare"])
    return out


def child_micro(args: argparse.Namespace) -> dict[str, object]:
    import torch

    dist, dev = _init(args.backend)
    x = torch.ones(1, device=dev)  # type: ignore[call-overload]
    wall: list[float] = []
    cpu: list[float] = []
    main_cpu: list[float] = []
    h0 = 0.0
    for block in range(args.blocks + 1):
        _sync(args.backend)
        if block == 1:
            h0 = _hook_threads_cpu()
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        for _ in range(args.calls):
            dist.all_reduce(x)  # type: ignore[attr-defined]
        _sync(args.backend)
        if block:  # the first block warms up
            wall.append((time.perf_counter() - t0) / args.calls * 1e6)
            cpu.append((time.process_time() - c0) / args.calls * 1e6)  # all threads of the process
            main_cpu.append((time.thread_time() - m0) / args.calls * 1e6)  # the training thread alone
    threads_us = (_hook_threads_cpu() - h0) / (args.calls * args.blocks) * 1e6
    ab = _ab(dist, x, args.calls, args.blocks, lambda: _sync(args.backend))
    dist.destroy_process_group()  # type: ignore[attr-defined]
    out: dict[str, object] = {"us_per_call": statistics.median(wall), "best_us_per_call": min(wall),
                              "cpu_us_per_call": statistics.median(cpu),
                              "main_cpu_us_per_call": statistics.median(main_cpu),
                              "hook_threads_us_per_call": threads_us, "blocks": wall}
    if ab:
        out["ab_us_per_call"] = statistics.median(ab)
    return out


def child_wrapper(args: argparse.Namespace) -> dict[str, object]:
    """The hook's wrapper alone (the ``wrapper`` job): ``_wrap`` around a no-op taking the real
    tensor, bare and wrapped blocks in turns, the training thread's CPU (``thread_time_ns``) per call.
    ``dropped`` is the hook's own counter over the timed blocks: on the GPU path it also counts the
    written collectives whose done line the poller stopped awaiting past its bound (a no-op never
    completes in Flight Recorder), which happens on the hook's threads, not on the path timed."""
    import torch
    from _ncclscope_hook import tracer as T  # the hook on PYTHONPATH, as ncclscope run installs it

    dist, dev = _init(args.backend)
    dist.all_reduce(torch.ones(1, device=dev))  # type: ignore[attr-defined, call-overload]  # the tracer starts
    _sync(args.backend)
    # --meta: a tensor not on the CPU, so the wrapper takes the blocking GPU path's code on any machine
    x = torch.ones(1, device="meta" if args.meta else dev)  # type: ignore[call-overload]
    tr = T._TRACER
    if tr is None:
        raise SystemExit("the hook's tracer did not start")
    tr.calls_s = 0  # every call traced from the poller's next tick: the call budget is not what is timed

    def noop(tensor: object, op: object = None, group: object = None, async_op: bool = False) -> None:
        return None

    wrapped = T._wrap(noop, "all_reduce", "tensor", False)

    def block(fn: Callable[[object], None]) -> float:
        t0 = time.thread_time_ns()
        for _ in range(args.calls):
            fn(x)  # one call site for both: the wrapper's site cache hits from the second call on
        return (time.thread_time_ns() - t0) / args.calls

    block(noop), block(wrapped)  # warm-up: the first wrapped call builds the site's line format
    time.sleep(3 * tr.poll_s)  # the budget off (calls_s 0) from here on
    dropped0 = tr.dropped
    got: dict[str, list[float]] = {"bare": [], "wrapped": []}
    for k in range(args.blocks):
        # the writer takes the queue between pairs: a pair never meets a full queue (no record dropped)
        tr.flushed.clear()
        tr.flushed.wait(2 * tr.write_s + 0.5)
        for name in (("bare", "wrapped") if k % 2 == 0 else ("wrapped", "bare")):
            got[name].append(block(noop if name == "bare" else wrapped))
    bare, wrap = got["bare"], got["wrapped"]
    dist.destroy_process_group()  # type: ignore[attr-defined]
    return {"added_ns_min": min(wrap) - min(bare), "added_ns_median": statistics.median(wrap) - statistics.median(bare),
            "bare_ns_min": min(bare), "wrapped_ns_min": min(wrap), "dropped": tr.dropped - dropped0,
            "path": "blocking CPU (coll and done records)" if x.is_cpu else
                    f"blocking GPU (coll record{', meta tensor' if args.meta else ''})"}


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

    def step(all_reduce: Callable[..., object]) -> tuple[float, float, float]:
        """(wall ms, process CPU ms, training-thread CPU ms) of one step."""
        _sync(args.backend)
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        x = x0
        for w, v in zip(ws, vs):
            y = torch.nn.functional.gelu(x @ w)
            all_reduce(y)  # column-parallel output (as a sequence-parallel gather would)
            x = y @ v
            all_reduce(x)  # row-parallel partial sums
            for _ in range(args.colls - 2):
                all_reduce(small)  # norms, flags, scales
        _sync(args.backend)
        return ((time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0,
                (time.thread_time() - m0) * 1000.0)

    h0 = 0.0
    got = []
    for n in range(args.steps):
        if n == args.warmup:
            h0 = _hook_threads_cpu()
        one = step(dist.all_reduce)  # type: ignore[attr-defined]
        if n >= args.warmup:
            got.append(one)
    threads_ms = (_hook_threads_cpu() - h0) / len(got) * 1000.0
    out: dict[str, object] = {"ms_per_step": statistics.median(r[0] for r in got), "best_ms_per_step": min(r[0] for r in got),
                              "cpu_ms_per_step": statistics.median(r[1] for r in got),
                              "main_cpu_ms_per_step": statistics.median(r[2] for r in got),
                              "hook_threads_us_per_call": threads_ms * 1000.0 / (args.layers * args.colls),
                              "colls_per_step": args.layers * args.colls}
    traced = _hook_all_reduce(dist)
    bare = getattr(traced, "__wrapped__", None)
    if bare is not None and getattr(traced, "__ncclscope_wrapped__", False) and not args.budget_only:
        # steps with the bare collective (under the hook's wrapper) and the traced one, alternating,
        # in this one process: the training thread's CPU a step traced minus bare
        diffs = []
        for n in range(max(4, args.steps - args.warmup)):
            pair = [step(bare)[2], step(traced)[2]] if n % 2 == 0 else [step(traced)[2], step(bare)[2]][::-1]
            diffs.append((pair[1] - pair[0]) * 1000.0 / (args.layers * args.colls))
        out["ab_us_per_call"] = statistics.median(diffs)
        out.update(_threads_ab(lambda: step(traced), args.layers * args.colls))
    looked_up = lambda y: dist.all_reduce(y)
    if not args.budget_only:
        out.update(_budget_ab(lambda: step(looked_up), args.layers * args.colls))
    # the function the hook wrapped; without the hook dist.all_reduce itself (torch's own decorator has a
    # __wrapped__ too), so that the bare variant's figure is this measure's noise floor
    plain = bare if bare is not None and getattr(traced, "__ncclscope_wrapped__", False) else traced
    seen = [0, 0]  # calls, and those that found the hook's wrapper on torch.distributed

    def counted(y: object) -> object:
        fn = dist.all_reduce  # type: ignore[attr-defined]
        seen[0] += 1
        seen[1] += fn is traced
        return fn(y)

    out.update(_budget_vs_bare(lambda: step(lambda y: plain(y)), lambda: step(looked_up),  # one call level each
                               lambda: step(counted), seen, pairs=args.pairs, block=args.block_steps))
    if not getattr(traced, "__ncclscope_wrapped__", False):
        out.pop("user_traced_pct")  # no hook: nothing to trace
    dist.destroy_process_group()  # type: ignore[attr-defined]
    return out


def _budget_vs_bare(bare_step: Callable[[], tuple[float, float, float]],
                    user_step: Callable[[], tuple[float, float, float]],
                    counted_step: Callable[[], tuple[float, float, float]], seen: list[int],
                    pairs: int = 24, block: int = 8) -> dict[str, float]:
    """What the hook costs a step as user code meets it, in one process: blocks of ``block`` steps that
    look ``dist.all_reduce`` up on every call (the hook's wrapper, or torch's function where the call
    budget has put it back) against blocks calling torch's function, in turns (the order turned round
    every pair): the median of the pairs' ratios of the blocks' median steps, wall and training-thread
    CPU, in percent. Process-to-process noise (the GPU host's bare step moved 7.0 -> 9.1 ms between
    processes) falls on both halves alike; the bare variant's figure is this measure's noise floor.
    Then, untimed, the same pattern with a lookup that counts (``counted_step``, ``seen``: calls, and
    those that found the hook's wrapper): the share of the user blocks' collectives the hook traced."""
    tr = _tracer()
    calls_s = getattr(tr, "calls_s", 0)
    if calls_s:
        # the budget is per second of wall time and the user blocks are half of it: at half the rate
        # they see the share of traced calls that steps of user code alone would see
        tr.calls_s = max(1, calls_s // 2)
    bare_step(), user_step()  # one of each first: the budget engages on its first tick
    wall: list[float] = []
    cpu: list[float] = []
    fastest: list[float] = []  # the blocks' fastest steps: a busy host's interruptions only ever add time
    for n in range(pairs):
        halves = {}
        for which in (("bare", "user") if n % 2 == 0 else ("user", "bare")):
            steps = [(bare_step if which == "bare" else user_step)() for _ in range(block)]
            halves[which] = (statistics.median(r[0] for r in steps), statistics.median(r[2] for r in steps),
                             min(r[0] for r in steps))
        wall.append((halves["user"][0] / halves["bare"][0] - 1.0) * 100.0)
        cpu.append((halves["user"][1] / halves["bare"][1] - 1.0) * 100.0)
        fastest.append((halves["user"][2] / halves["bare"][2] - 1.0) * 100.0)
    for _ in range(max(6, pairs // 4)):
        for _ in range(block):
            bare_step()
        for _ in range(block):
            counted_step()
    if calls_s:
        tr.calls_s = calls_s
    return {"user_vs_bare_wall_pct": statistics.median(wall), "user_vs_bare_main_cpu_pct": statistics.median(cpu),
            "user_vs_bare_wall_mean_pct": statistics.fmean(wall), "user_vs_bare_wall_ci_pct": _ci95(wall),
            "user_vs_bare_fastest_pct": statistics.median(fastest), "user_vs_bare_fastest_mean_pct": statistics.fmean(fastest),
            "user_vs_bare_fastest_ci_pct": _ci95(fastest),
            "user_traced_pct": 100.0 * seen[1] / max(1, seen[0])}


def _tracer() -> Any:
    """The hook's tracer in this process, or None (no hook, or not this checkout's kind)."""
    try:
        from _ncclscope_hook import tracer as T
    except ImportError:
        return None
    return getattr(T, "_TRACER", None)


def _ci95(values: list[float]) -> float:
    """Half-width of a normal 95 % interval for the mean of ``values`` (0 for fewer than two)."""
    return 1.96 * statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0


def _budget_ab(one_step: Callable[[], tuple[float, float, float]], colls: int) -> dict[str, float]:
    """Steps that look ``dist.all_reduce`` up on every call (as user code does) with the hook's call
    budget on and off (``calls_s`` 0: every call traced), in turns, in this one process: what the
    budget saves the training thread per collective. Empty where the hook has no budget."""
    tr = _tracer()
    if tr is None or not hasattr(tr, "calls_s"):
        return {}
    calls_s = tr.calls_s or 500
    cpu: list[float] = []
    for _ in range(4):
        got = {}
        for on in (True, False):
            tr.calls_s = calls_s if on else 0
            time.sleep(3 * tr.poll_s + 0.05)  # a few ticks: the wrappers back in, the new budget set
            steps = [one_step() for _ in range(8)]
            got[on] = statistics.median(r[2] for r in steps)
        cpu.append((got[True] - got[False]) * 1000.0 / colls)
    tr.calls_s = calls_s
    return {"budget_main_cpu_us_per_call": statistics.median(cpu)}


def _threads_ab(one_step: Callable[[], tuple[float, float, float]], colls: int) -> dict[str, float]:
    """Traced steps with the hook's threads at their cadence and with them paused (writer and
    ticker asleep for 2 s: no batch written, no poll, heartbeat or Flight Recorder read), in turns,
    in this one process: what the threads cost the training, per collective, in wall time and in
    the training thread's CPU. Empty where the hook is not this checkout's kind."""
    tr = _tracer()
    if tr is None or not hasattr(tr, "write_s") or not hasattr(tr, "poll_s"):
        return {}
    cadence = (tr.write_s, tr.poll_s)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(4):
        got = {}
        for paused in (False, True):
            tr.write_s, tr.poll_s = (2.0, 2.0) if paused else cadence
            time.sleep(max(cadence) + 0.3)  # the threads' current sleeps end, the next ones are the new length
            steps = [one_step() for _ in range(8)]
            got[paused] = (statistics.median(r[0] for r in steps), statistics.median(r[2] for r in steps))
        wall.append((got[False][0] - got[True][0]) * 1000.0 / colls)
        cpu.append((got[False][1] - got[True][1]) * 1000.0 / colls)
    tr.write_s, tr.poll_s = cadence
    return {"threads_wall_us_per_call": statistics.median(wall), "threads_main_cpu_us_per_call": statistics.median(cpu)}


# --- the runner ------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def other_hook_site(run_dir: Path, src: Path) -> Path:
    """A hook site made from another copy of ``analyzer/hook`` (an older version, to compare):
    a folder, or ``git:REV`` for the hook as this repository had it at REV."""
    from ncclscope.launch import HOOK_FILES, HOOK_PACKAGE, HOOK_SITE

    site = run_dir / HOOK_SITE
    (site / HOOK_PACKAGE).mkdir(parents=True)
    for name in ("sitecustomize.py", *HOOK_FILES):
        dest = site / name if name == "sitecustomize.py" else site / HOOK_PACKAGE / name
        rev = str(src)[4:] if str(src).startswith("git:") else None
        optional = name not in ("sitecustomize.py", "tracer.py")  # an older hook may lack a later module
        if rev is None:
            if (src / name).exists() or not optional:
                shutil.copyfile(src / name, dest)
            continue
        got = subprocess.run(["git", "show", f"{rev}:analyzer/hook/{name}"], cwd=ROOT, capture_output=True,
                             check=False)
        if got.returncode != 0 and optional:
            continue
        if got.returncode != 0:
            raise SystemExit(f"--other-hook {src}: {got.stderr.decode(errors='replace').strip()}")
        dest.write_bytes(got.stdout)
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
    traced = not variant.startswith("bare")
    site = None
    if traced:
        src = args.other_hook if variant == "other" else args.hook
        site = other_hook_site(run_dir, src) if src is not None else prepare_hook_site(run_dir)
    wanted = {} if variant == "bare-noenv" else tracing_env(run_dir, False, site)
    env, _, _ = merge_env(dict(os.environ), wanted)
    env.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(_free_port()), "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
                "HOOK_BENCH_VARIANT": variant})
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


METRICS = ("", "best_", "cpu_", "main_cpu_")  # median wall, fastest block / step, process CPU, training thread CPU
METRIC_NAMES = {"": "wall (median)", "best_": "wall (fastest)", "cpu_": "process CPU", "main_cpu_": "training-thread CPU"}


def measure(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """metric -> variant -> one value per repeat; the order of the variants turns round every
    repeat, so drift of the machine falls on all of them alike."""
    key = {"micro": "us_per_call", "tp": "ms_per_step"}.get(args.kind)
    variants = args.variants
    got: dict[str, dict[str, list[float]]] = {}
    unit = "us per call" if args.kind == "micro" else "ms per step"
    with tempfile.TemporaryDirectory(prefix="ncclscope-bench-") as tmp:
        for n in range(args.repeats):
            k = n % len(variants)
            order = variants[k:] + variants[:k]
            for name in (order if n % 2 == 0 else order[::-1]):
                extra = ""
                if key is None:
                    got.setdefault("", {}).setdefault(name, []).append(run_ddp(name, args, Path(tmp), n))
                else:
                    res = run_child(args.kind, name, args, Path(tmp), n)
                    for m in METRICS:
                        if m + key in res:
                            got.setdefault(m, {}).setdefault(name, []).append(float(res[m + key]))  # type: ignore[arg-type]
                    extra = "  " + " ".join(f"{METRIC_NAMES[m].split(' ')[0]}{'' if m != 'best_' else '-best'} "
                                            f"{float(res[m + key]):.3f}" for m in METRICS[1:] if m + key in res)  # type: ignore[arg-type]
                    for e in EXTRA:
                        if e in res:
                            got.setdefault(e, {}).setdefault(name, []).append(float(res[e]))  # type: ignore[arg-type]
                            extra += f" {e.split('_')[0]} {float(res[e]):+.3f}"  # type: ignore[arg-type]
                    if "hook_lines" in res:
                        extra += f"  hook records {res['hook_lines']}"
                print(f"repeat {n} {name:14s} {got[''][name][-1]:9.3f} {unit}{extra}", flush=True)
    return got


EXTRA = {"ab_us_per_call": "per-call path alone (training-thread CPU, traced minus bare blocks in one process)",
         "hook_threads_us_per_call": "the hook's threads (writer, ticker) CPU per collective",
         "threads_wall_us_per_call": "what the running threads add to a traced step's wall time, per collective "
                                     "(threads at their cadence minus paused, in one process)",
         "threads_main_cpu_us_per_call": "what the running threads add to the training thread's CPU, per collective",
         "budget_main_cpu_us_per_call": "what the call budget changes in the training thread's CPU, per collective "
                                        "(budget on minus off, dist.all_reduce looked up per call, in one process)",
         "user_vs_bare_wall_pct": "a step as user code meets the hook (dist.all_reduce looked up per call, the "
                                  "budget on) against the bare function, wall %, pairs in one process",
         "user_vs_bare_main_cpu_pct": "the same, training-thread CPU %",
         "user_vs_bare_wall_mean_pct": "the same, wall, the mean over the pairs",
         "user_vs_bare_wall_ci_pct": "the same, half-width of the mean's 95 % interval",
         "user_vs_bare_fastest_pct": "the same pairs, the blocks' fastest steps, median over the pairs",
         "user_vs_bare_fastest_mean_pct": "the same, the mean over the pairs",
         "user_vs_bare_fastest_ci_pct": "the same, half-width of the mean's 95 % interval",
         "user_traced_pct": "the share of those steps' collectives the hook traced (the rest: call budget), %"}


WRAPPER_KEYS = ("added_ns_min", "added_ns_median")


def measure_wrapper(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """``wrapper``: key -> variant -> one value per process (variants in turns, as ``measure``)."""
    got: dict[str, dict[str, list[float]]] = {}
    variants = args.variants
    with tempfile.TemporaryDirectory(prefix="ncclscope-bench-") as tmp:
        for n in range(args.repeats):
            order = variants if n % 2 == 0 else variants[::-1]
            for name in order:
                res = run_child("wrapper", name, args, Path(tmp), n)
                ns = {k: float(v) for k, v in res.items() if k.endswith(("_min", "_median"))}  # type: ignore[arg-type]
                for key in WRAPPER_KEYS:
                    got.setdefault(key, {}).setdefault(name, []).append(ns[key])
                print(f"repeat {n} {name:8s} added {ns['added_ns_min']:6.0f} ns a call (min), "
                      f"{ns['added_ns_median']:6.0f} (median); bare {ns['bare_ns_min']:.0f} ns, "
                      f"wrapped {ns['wrapped_ns_min']:.0f} ns; {res['path']}; dropped {res['dropped']}", flush=True)
    return got


def report_wrapper(got: dict[str, dict[str, list[float]]]) -> None:
    for key in WRAPPER_KEYS:
        print(f"-- ns added per call by the wrapper, {key.split('_')[-1]} over blocks (per variant: "
              "min and median over processes)")
        for name, values in got[key].items():
            print(f"{name:8s} min {min(values):6.0f}  median {statistics.median(values):6.0f}  "
                  f"(per process {', '.join(f'{v:.0f}' for v in values)})")


def report(args: argparse.Namespace, got: dict[str, dict[str, list[float]]]) -> None:
    """Per metric and variant: the median over repeats, the median of the per-repeat ratios to
    ``bare`` (each ratio of two processes run close together) and the time added per collective."""
    unit = "us per call" if args.kind == "micro" else "ms per step"
    per = 1.0 if args.kind == "micro" else 1000.0 / (args.layers * args.colls) if args.kind == "tp" else 0.0
    for m, by_variant in got.items():
        if m in EXTRA:
            print(f"-- {EXTRA[m]}, {'%' if m.endswith('_pct') else 'us'}")
            for name, values in by_variant.items():
                print(f"{name:14s} {statistics.median(values):+9.3f}  (per repeat {', '.join(f'{v:+.3f}' for v in values)})")
            continue
        print(f"-- {METRIC_NAMES[m]}, {unit}")
        base = statistics.median(by_variant["bare"])
        for name, values in by_variant.items():
            med = statistics.median(values)
            ratios = [v / b for v, b in zip(values, by_variant["bare"])]
            line = (f"{name:14s} {med:9.3f}  ratio {statistics.median(ratios):.4f} "
                    f"({(statistics.median(ratios) - 1) * 100:+6.2f} %; per repeat {', '.join(f'{r:.3f}' for r in ratios)})")
            if per:
                line += f"  {(med - base) * per:+.2f} us per collective"
            print(line)


def gpu_local_cpus(n: int = 2) -> str:
    """The first ``n`` CPUs this process may use that sit on GPU 0's NUMA node (the PCI device's
    ``local_cpulist``), else the first ``n`` it may use, comma-separated."""
    allowed = sorted(os.sched_getaffinity(0))
    local: set[int] = set()
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        domain, rest = bus.split(":", 1)
        text = Path(f"/sys/bus/pci/devices/{domain[-4:]}:{rest}".lower()).joinpath("local_cpulist").read_text()
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            local.update(range(int(lo), int(hi or lo) + 1))
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    chosen = [c for c in allowed if c in local] or allowed
    return ",".join(str(c) for c in chosen[:n])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        return _child_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kind", choices=["micro", "tp", "ddp", "wrapper"])
    p.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    p.add_argument("--repeats", type=int, default=3, help="rounds (each runs every variant once)")
    p.add_argument("--variants", default="bare,traced",
                   help=f"micro/tp: comma-separated, 'bare' always included; of {', '.join(VARIANTS)}")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--other-hook", type=Path, default=None,
                   help="micro/tp: also time a hook copied from this folder (e.g. an older analyzer/hook), or "
                        "git:REV (analyzer/hook at that revision), as 'other'")
    p.add_argument("--hook", type=Path, default=None,
                   help="micro/tp: the hook variants (traced, hook-*) use a hook copied from this folder (or git:REV), not analyzer/hook")
    p.add_argument("--calls", type=int, default=None, help="micro: all_reduces per block (3000); wrapper: calls per block (5000)")
    p.add_argument("--blocks", type=int, default=None,
                   help="micro: timed blocks per process, after one warm-up block (5); wrapper: pairs of blocks (40)")
    p.add_argument("--layers", type=int, default=None, help="tp: layers (32); ddp: MLP depth (gloo 4, nccl 8)")
    p.add_argument("--colls", type=int, default=8, help="tp: all_reduces per layer")
    p.add_argument("--hidden", type=int, default=4096, help="tp: hidden size")
    p.add_argument("--tokens", type=int, default=1024, help="tp: tokens per step")
    p.add_argument("--steps", type=int, default=None, help="tp (30) / ddp (60) steps")
    p.add_argument("--warmup", type=int, default=None, help="steps dropped (tp 5, ddp 10)")
    p.add_argument("--nproc", type=int, default=2, help="ddp: ranks")
    p.add_argument("--dim", type=int, default=None, help="ddp: MLP width (gloo 256, nccl 2048)")
    p.add_argument("--batch", type=int, default=None, help="ddp: batch (gloo 32, nccl 64)")
    p.add_argument("--pairs", type=int, default=24,
                   help="tp: pairs of blocks in the step-as-user-code-meets-it measure (24)")
    p.add_argument("--block-steps", type=int, default=8, help="tp: steps a block in that measure (8)")
    p.add_argument("--budget-only", action="store_true",
                   help="tp: only that measure (no every-call A/B, no thread or budget A/B)")
    p.add_argument("--cpus", default="",
                   help="pin every timed process to these CPUs (e.g. 2,3; auto: two on GPU 0's NUMA node): the "
                        "host's scheduler moving a process between cores and sockets is noise")
    p.add_argument("--meta", action="store_true",
                   help="wrapper: a meta tensor (not on the CPU: the blocking GPU path's code, without a GPU)")
    args = p.parse_args(argv)
    gpu = args.backend == "nccl"
    wrapper = args.kind == "wrapper"
    args.calls = args.calls or (5000 if wrapper else 3000)
    args.blocks = args.blocks or (40 if wrapper else 5)
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
                       "--tokens", str(args.tokens), "--steps", str(args.steps or 0), "--warmup", str(args.warmup or 0),
                       "--pairs", str(args.pairs), "--block-steps", str(args.block_steps), "--cpus", args.cpus]
    if args.cpus == "auto":
        args.cpus = gpu_local_cpus() if gpu else ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:2])
        args.child_argv[-1] = args.cpus
    if args.budget_only:
        if args.kind != "tp":
            p.error("--budget-only is for the tp job")
        args.child_argv.append("--budget-only")
    if args.meta:
        if not wrapper:
            p.error("--meta is for the wrapper job")
        args.child_argv.append("--meta")
    if wrapper:  # the wrapper is timed against its bare function inside one traced process: no bare process
        args.variants = ",".join(v for v in args.variants.split(",") if v != "bare") or "traced"
        if set(args.variants.split(",")) - {"traced", "other"}:
            p.error("wrapper runs traced and other only")
    args.variants = ([] if wrapper else ["bare"]) + [v for v in args.variants.split(",") if v and v != "bare"]
    if args.other_hook is not None and "other" not in args.variants:
        args.variants.append("other")
    unknown = sorted(set(args.variants) - set(VARIANTS))
    if unknown:
        p.error(f"unknown variants: {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    if "other" in args.variants and args.other_hook is None:
        p.error("the variant 'other' needs --other-hook DIR")
    if args.kind == "ddp" and set(args.variants) - {"bare", "traced"}:
        p.error("ddp runs bare and traced only")
    if wrapper:
        got = measure_wrapper(args)
        print(f"wrapper: backend {args.backend}, world size 1, _wrap around a no-op on a one-element "
              f"{'meta' if args.meta else 'CUDA' if gpu else 'CPU'} tensor, {args.calls} calls a block x {args.blocks} pairs, "
              f"{args.repeats} processes a variant")
        report_wrapper(got)
        return 0
    got = measure(args)
    what = {"micro": f"world size 1, {args.calls} one-element all_reduces x {args.blocks} blocks",
            "tp": f"world size 1, {args.layers} layers x {args.colls} all_reduces, hidden {args.hidden}, "
                  f"{args.tokens} tokens, {args.steps} steps (first {args.warmup} dropped)",
            "ddp": f"{args.nproc} ranks, MLP {args.layers} x {args.dim}, batch {args.batch}, {args.steps} steps "
                   f"(first {args.warmup} dropped)"}[args.kind]
    if args.kind == "tp":
        what += f"; user-code measure {args.pairs} pairs of {args.block_steps}-step blocks"
    if args.cpus:
        what += f"; processes pinned to CPUs {args.cpus}"
    print(f"{args.kind}: backend {args.backend}, {what}, {args.repeats} interleaved rounds")
    report(args, got)
    report_hook_minus_floor(got)
    return 0


def report_hook_minus_floor(got: dict[str, dict[str, list[float]]]) -> None:
    """tp: the hook's step-as-user-code-meets-it figure less the same measure in the bare processes
    (its floor), per hook variant: the difference of the processes' means, with a 95 % interval from
    the spread between processes (each process's own figure is a mean over its pairs)."""
    for key, what in (("user_vs_bare_wall_mean_pct", "blocks' median steps"),
                      ("user_vs_bare_fastest_mean_pct", "blocks' fastest steps")):
        means = got.get(key, {})
        floor = means.get("bare", [])
        for name, values in means.items():
            if name == "bare" or len(values) < 2 or len(floor) < 2:
                continue
            diff = statistics.fmean(values) - statistics.fmean(floor)
            half = 1.96 * (statistics.variance(values) / len(values) + statistics.variance(floor) / len(floor)) ** 0.5
            print(f"-- {name} less the floor (bare processes), wall, {what}, mean of {len(values)} and {len(floor)} "
                  f"processes: {diff:+.3f} % (95 % interval {diff - half:+.3f} to {diff + half:+.3f} %)")


def _child_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["micro", "tp", "wrapper"])
    for name in ("calls", "blocks", "layers", "colls", "hidden", "tokens", "steps", "warmup", "pairs", "block-steps"):
        p.add_argument(f"--{name}", type=int, default=0)
    p.add_argument("--backend", default="gloo")
    p.add_argument("--cpus", default="")
    p.add_argument("--meta", action="store_true")
    p.add_argument("--budget-only", action="store_true")
    args = p.parse_args(argv)
    if args.cpus:  # before torch starts its threads: they inherit the mask
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    result = {"micro": child_micro, "tp": child_tp, "wrapper": child_wrapper}[args.kind](args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
