"""The sweep itself, run by every rank inside a torchrun job.

Per collective and size: ``warmup`` calls, then ``iters`` timed calls; on NCCL the time is taken
with CUDA events around the timed calls, on gloo with the wall clock between barriers. Each rank's
time per call is averaged over the ranks (nccl-tests' default ``-a 1``). With ``check``, one more
call on known data counts wrong elements (nccl-tests' ``#wrong``). Rank 0 returns the ``Sweep``;
the others return None.
"""
from __future__ import annotations

import os
import socket
import time
import warnings
from collections.abc import Callable
from typing import Any

from .bw import SPECS, bandwidths, busbw_factor, elements_for
from .table import OpResult, RankInfo, Row, Sweep, SweepParams


def _collective(op: str, dist: Any) -> Callable[..., Any]:
    """The torch.distributed call for ``op`` taking (out, inp); newer names first (2.13 deprecates the old)."""
    if op == "all_reduce":
        return lambda out, inp: dist.all_reduce(inp)
    if op == "broadcast":
        return lambda out, inp: dist.broadcast(inp, 0)
    if op == "all_gather":
        fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda out, inp: fn(out, inp)
    if op == "reduce_scatter":
        fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda out, inp: fn(out, inp)
    if op == "all_to_all":
        return lambda out, inp: dist.all_to_all_single(out, inp)
    raise ValueError(op)


def _buffers(op: str, count: int, n: int, torch: Any, device: Any) -> tuple[Any, Any]:
    """(out, inp) for a full buffer of ``count`` elements (nccl-tests' size)."""
    z = lambda k: torch.zeros(k, dtype=torch.float32, device=device)
    if op in ("all_reduce", "broadcast"):
        return None, z(count)
    if op == "all_gather":
        return z(count), z(count // n)
    if op == "reduce_scatter":
        return z(count // n), z(count)
    return z(count), z(count)  # all_to_all


def _expected_wrong(op: str, out: Any, inp: Any, rank: int, n: int, torch: Any) -> int:
    """Count elements that differ from what the collective must produce on input ``rank + 1`` everywhere."""
    if op == "all_reduce":
        return int((inp != n * (n + 1) / 2).sum().item())
    if op == "broadcast":
        return int((inp != 1.0).sum().item())
    if op == "reduce_scatter":
        return int((out != n * (n + 1) / 2).sum().item())
    # all_gather, all_to_all: chunk j comes from rank j, which sent j + 1
    want = torch.arange(1, n + 1, dtype=out.dtype, device=out.device).repeat_interleave(out.numel() // n)
    return int((out != want).sum().item())


def run_sweep(ops: list[str], params: SweepParams, versions: dict[str, str | None],
              emit: Callable[[str], None] | None = None) -> Sweep | None:
    """Run inside an initialised process group. ``emit`` gets each finished table line on rank 0."""
    import torch
    import torch.distributed as dist

    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed.*")
    rank, n = dist.get_rank(), dist.get_world_size()
    nccl = params.backend == "nccl"
    if nccl:
        device = torch.device("cuda", torch.cuda.current_device())
        info = RankInfo(rank, socket.gethostname(), os.getpid(), str(device.index), _bus_id(device, torch),
                        torch.cuda.get_device_name(device))
    else:
        device = torch.device("cpu")
        info = RankInfo(rank, socket.gethostname(), os.getpid(), "cpu", "-", "CPU")
    infos: list[Any] = [None] * n
    dist.all_gather_object(infos, info)
    sweep = Sweep(params, n, list(infos), versions) if rank == 0 else None

    from .bw import sizes as size_list

    for op in ops:
        spec = SPECS[op]
        fn = _collective(op, dist)
        rows = []
        if sweep is not None and emit:
            from .table import format_header

            for line in format_header(op, sweep):
                emit(line)
        for size in size_list(params.min_bytes, params.max_bytes, params.factor):
            count = elements_for(op, size, n)
            if count == 0:
                continue
            out, inp = _buffers(op, count, n, torch, device)
            t_us = _time_calls(fn, out, inp, params, nccl, torch, dist)
            wrong = None
            if params.check:
                inp.fill_(rank + 1)
                fn(out, inp)
                if nccl:
                    torch.cuda.synchronize(device)
                w = torch.tensor([_expected_wrong(op, out, inp, rank, n, torch)], dtype=torch.int64, device=device)
                dist.all_reduce(w)
                wrong = int(w.item())
            del out, inp
            nbytes = count * 4
            algbw, busbw = bandwidths(nbytes, t_us, op, n)
            row = Row(nbytes, count, params.dtype, spec.redop, spec.root, t_us, algbw, busbw, wrong)
            rows.append(row)
            if sweep is not None and emit:
                from .table import format_row

                emit(format_row(row))
        res = OpResult(op, n, busbw_factor(op, n), tuple(rows))
        if sweep is not None:
            sweep.results.append(res)
            if emit:
                from .table import format_footer

                for line in format_footer(res, params.check):
                    emit(line)
    return sweep


def _bus_id(device: Any, torch: Any) -> str:
    try:
        props = torch.cuda.get_device_properties(device)
        return f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}"
    except Exception:  # noqa: BLE001 - cosmetic
        return "-"


def _time_calls(fn: Callable[..., Any], out: Any, inp: Any, params: SweepParams, nccl: bool, torch: Any,
                dist: Any) -> float:
    """Average microseconds per call over the ranks."""
    for _ in range(params.warmup):
        fn(out, inp)
    if nccl:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(params.iters):
            fn(out, inp)
        end.record()
        end.synchronize()
        t_us = start.elapsed_time(end) * 1000.0 / params.iters
        dev = torch.device("cuda", torch.cuda.current_device())
    else:
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(params.iters):
            fn(out, inp)
        t_us = (time.perf_counter() - t0) * 1e6 / params.iters
        dev = torch.device("cpu")
    t = torch.tensor([t_us], dtype=torch.float64, device=dev)
    dist.all_reduce(t)
    return float(t.item()) / dist.get_world_size()
