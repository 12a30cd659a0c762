"""A small real DDP training job whose faults are chosen by environment variables.

Run it under a launcher: ``python -m torch.distributed.run --standalone --nproc_per_node=3
tests/jobs/train_job.py``. Works on CPU (gloo) and GPU (nccl). Each step: forward of an MLP,
backward (DDP bucket all-reduces, issued from C++), SGD, then a Python ``dist.all_reduce`` of
the loss. Before the loop: broadcast, all_gather and barrier from Python.

Settings (all optional):
  JOB_BACKEND       gloo | nccl (default: nccl when CUDA is available, else gloo)
  JOB_STEPS         number of steps (20)
  JOB_STEP_S        extra sleep per step on every rank, seconds (0)
  JOB_DIM, JOB_LAYERS, JOB_BATCH   MLP width (64), depth (2), batch (16)
  JOB_PG_TIMEOUT    process group timeout, seconds (30)
  JOB_DDP           1: DistributedDataParallel (default); 0: Python all_reduce of each gradient
  JOB_SUBGROUP      1: also all_reduce on a dist.new_group of all ranks each step
  JOB_HANG_RANK, JOB_HANG_STEP (10), JOB_HANG_S (3600)   that rank sleeps at that step
  JOB_CRASH_RANK, JOB_CRASH_STEP (10), JOB_CRASH_CODE (3), JOB_CRASH_MODE (exit | raise | memory | hook | sigkill)
                    memory: a MemoryError stands in for an out-of-memory error on that rank; hook: a
                    DDP communication hook raises on that rank at that step (inside torch's machinery)
  JOB_DESYNC_RANK, JOB_DESYNC_STEP (10), JOB_DESYNC_KIND (skip | op | size | dtype)
                    at that step the rank skips the loss all_reduce, calls a broadcast instead,
                    all-reduces 7 elements, or all-reduces float64
  JOB_STRAGGLER_RANK, JOB_STRAGGLER_S (0.25), JOB_STRAGGLER_FROM (5)   extra sleep per step
  JOB_PAUSE_S, JOB_PAUSE_STEP (10)   every rank pauses (a healthy pause)
  JOB_OUT           folder for result_rank<R>.json (final loss, parameter checksum, step times)
  JOB_FR_DUMP       1: write the Flight Recorder pickle to JOB_OUT/fr_end_rank<R>.pkl at the end
  JOB_SYNC_CUDA     1: torch.cuda.synchronize() after each step when timing (default 1 on nccl)
  JOB_LAUNCH        spawn: run as ``python train_job.py`` and start JOB_WORLD (2) ranks with
                    torch.multiprocessing.spawn instead of a launcher (MASTER_PORT from JOB_PORT or free)
"""
from __future__ import annotations

import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn


def env_int(name: str, default: int | None) -> int | None:
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def env_float(name: str, default: float) -> float:
    v = os.environ.get(name, "")
    return float(v) if v.strip() else default


def main() -> int:
    backend = os.environ.get("JOB_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    steps = env_int("JOB_STEPS", 20) or 0
    step_s = env_float("JOB_STEP_S", 0.0)
    dim, layers, batch = env_int("JOB_DIM", 64) or 64, env_int("JOB_LAYERS", 2) or 2, env_int("JOB_BATCH", 16) or 16
    timeout = datetime.timedelta(seconds=env_float("JOB_PG_TIMEOUT", 30.0))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", timeout=timeout, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group(backend, timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    sync = backend == "nccl" and os.environ.get("JOB_SYNC_CUDA", "1") == "1"

    hang_rank, hang_step = env_int("JOB_HANG_RANK", None), env_int("JOB_HANG_STEP", 10)
    crash_rank, crash_step = env_int("JOB_CRASH_RANK", None), env_int("JOB_CRASH_STEP", 10)
    desync_rank, desync_step = env_int("JOB_DESYNC_RANK", None), env_int("JOB_DESYNC_STEP", 10)
    strag_rank, strag_from = env_int("JOB_STRAGGLER_RANK", None), env_int("JOB_STRAGGLER_FROM", 5)
    pause_s, pause_step = env_float("JOB_PAUSE_S", 0.0), env_int("JOB_PAUSE_STEP", 10)

    torch.manual_seed(0)
    mods: list[nn.Module] = []
    for _ in range(layers):
        mods += [nn.Linear(dim, dim), nn.GELU()]
    model: nn.Module = nn.Sequential(*mods).to(device)
    use_ddp = os.environ.get("JOB_DDP", "1") == "1"
    if use_ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[local] if backend == "nccl" else None)
        if os.environ.get("JOB_CRASH_MODE") == "hook" and env_int("JOB_CRASH_RANK", None) == dist.get_rank():
            model.register_comm_hook(None, _failing_hook(env_int("JOB_CRASH_STEP", 10) or 0))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(batch, dim, generator=gen).to(device)

    t = torch.ones(1024, device=device) * (rank + 1)
    dist.broadcast(t, src=0)
    gathered = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(gathered, t)
    dist.barrier()
    sub = dist.new_group(list(range(world))) if os.environ.get("JOB_SUBGROUP") == "1" else None

    step_times: list[float] = []
    last = time.perf_counter()
    loss_value = 0.0
    for step in range(steps):
        if hang_rank == rank and step == hang_step:
            print(f"rank {rank}: stuck at step {step}", flush=True)
            time.sleep(env_float("JOB_HANG_S", 3600.0))  # JOB_HANG_LINE
        if crash_rank == rank and step == crash_step and os.environ.get("JOB_CRASH_MODE") != "hook":
            code = env_int("JOB_CRASH_CODE", 3) or 3
            print(f"rank {rank}: crashing at step {step} with exit code {code}", flush=True)
            mode = os.environ.get("JOB_CRASH_MODE", "exit")
            if mode == "raise":
                raise RuntimeError(f"simulated failure on rank {rank} at step {step}")
            if mode == "memory":
                raise MemoryError(f"simulated out of memory on rank {rank} at step {step}")
            if mode == "sigkill":  # as the kernel's OOM killer or a scheduler would: no exit record, no traceback
                import signal

                os.kill(os.getpid(), signal.SIGKILL)
            sys.stdout.flush()
            os._exit(code)
        if strag_rank == rank and step >= (strag_from or 0):
            time.sleep(env_float("JOB_STRAGGLER_S", 0.25))
        if pause_s > 0 and step == pause_step:
            time.sleep(pause_s)
        if step_s > 0:
            time.sleep(step_s)
        loss = model(x).pow(2).mean()
        loss.backward()
        if not use_ddp:
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
        opt.step()
        opt.zero_grad()
        lv = loss.detach().clone()
        kind = os.environ.get("JOB_DESYNC_KIND", "skip")
        if desync_rank == rank and step == desync_step:
            print(f"rank {rank}: desync ({kind}) at step {step}", flush=True)
            if kind == "op":
                dist.broadcast(lv, src=0)
            elif kind == "size":
                dist.all_reduce(torch.ones(7, device=device))
            elif kind == "dtype":
                dist.all_reduce(lv.double())
        else:
            dist.all_reduce(lv)
        if sub is not None:
            dist.all_reduce(torch.ones(4, device=device), group=sub)
        loss_value = float(lv.item()) / world
        if sync:
            torch.cuda.synchronize()
        now = time.perf_counter()
        step_times.append(now - last)
        last = now
        if rank == 0 and (step % 5 == 0 or step == steps - 1):
            print(f"step {step} loss {loss_value:.6f}", flush=True)
    checksum = float(sum(p.detach().double().sum().item() for p in model.parameters()))
    out = os.environ.get("JOB_OUT")
    if out:
        with open(os.path.join(out, f"result_rank{rank}.json"), "w") as f:
            json.dump({"rank": rank, "loss": loss_value, "checksum": checksum, "step_times": step_times}, f)
        if os.environ.get("JOB_FR_DUMP") == "1":
            import torch._C._distributed_c10d as c10d_c

            fn = getattr(c10d_c, "_dump_nccl_trace", None) if backend == "nccl" else None
            fn = fn or c10d_c._dump_fr_trace
            with open(os.path.join(out, f"fr_end_rank{rank}.pkl"), "wb") as f:
                f.write(fn())
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: done", flush=True)
    return 0


def _failing_hook(at_step: int):  # noqa: ANN202 - a DDP comm hook
    """DDP's default all-reduce, until the bucket of step ``at_step``: then it raises, inside DDP."""
    calls = {"n": 0}

    def hook(state, bucket):  # type: ignore[no-untyped-def]  # DDP checks annotations, as objects, if any
        if bucket.is_last():
            calls["n"] += 1
        if calls["n"] > at_step:
            raise RuntimeError(f"simulated failure in a DDP communication hook on rank {dist.get_rank()}")
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()  # type: ignore[union-attr]
        return fut.then(lambda f: f.value()[0] / dist.get_world_size())

    return hook


def _spawned(index: int, world: int) -> None:
    os.environ.update({"RANK": str(index), "LOCAL_RANK": str(index), "WORLD_SIZE": str(world)})
    main()


def spawn() -> int:
    """torch.multiprocessing.spawn: one process per rank, no launcher; a rank's exception ends the
    others (ProcessRaisedException in the parent)."""
    import socket

    import torch.multiprocessing as mp

    world = env_int("JOB_WORLD", 2) or 2
    port = os.environ.get("JOB_PORT")
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = port
    mp.spawn(_spawned, args=(world,), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(spawn() if os.environ.get("JOB_LAUNCH") == "spawn" else main())
