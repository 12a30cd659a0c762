"""What a Ray executor's layout says about ranks (vLLM's Ray executor, Ray Train): Ray forwards each worker actor's
output to the driver's console behind a prefix (``(RayWorkerWrapper pid=41, ip=10.0.0.2) ``, vLLM's ``(RayWorkerVllm
pid=41) ``), the driver's own lines carry none, and Ray gives each GPU actor its own ``CUDA_VISIBLE_DEVICES``, so
that the device a worker's message names is its first visible one, not its rank's."""
from __future__ import annotations

from collections.abc import Iterable

from ..sources.ray_workers import RAY_WORKER_RE


def worker_line(text: str) -> bool:
    """The line is a Ray worker actor's output, forwarded to the driver's console behind its prefix."""
    return RAY_WORKER_RE.search(text[:300]) is not None


def driver_rank_absent(never: Iterable[int], waiting_lines: Iterable[str]) -> bool:
    """The one rank missing from a collective is rank 0, and every rank waiting in it printed through Ray's worker
    prefix: an executor of a driver and Ray workers (vLLM's Ray executor), where rank 0 is the driver process, whose
    console carries no prefix, and the workers only run a step the driver dispatched, the step it runs too. Its watchdog
    line missing from the input says nothing of where it is: it is no culprit (the whole group stalled)."""
    lines = list(waiting_lines)
    return tuple(never) == (0,) and bool(lines) and all(worker_line(t) for t in lines)


def device_not_rank(line: str) -> bool:
    """A worker actor's message naming a GPU (``GPU 0 has a total capacity ...``, ``cuda:0``): Ray set the actor's
    ``CUDA_VISIBLE_DEVICES`` to its own GPU, so the index is the first device the actor sees, whatever its rank."""
    return worker_line(line)
