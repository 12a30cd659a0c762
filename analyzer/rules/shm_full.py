"""A Python process that ran out of room in /dev/shm: ``OSError: [Errno 28] No space left on device`` (or PyTorch's
``No space left on device (28)``) raised where Python or PyTorch creates a shared-memory object: a semaphore of
``multiprocessing`` (``SemLock``: a DataLoader's worker queues and locks), a ``SharedMemory`` block, a tensor moved
to shared memory. These live in /dev/shm, whose tmpfs a container keeps at 64 MB unless told otherwise, so the
error is the container's setting, not a full disk. The same error raised anywhere else (a checkpoint written to a
full disk) is not this."""
from __future__ import annotations

import re
from collections.abc import Sequence

ENOSPC_RE = re.compile(r"\[Errno 28\]|No space left on device")
# the innermost frames of a shared-memory object being made: multiprocessing's semaphores, blocks and heap, and
# PyTorch's sharing of a tensor or storage between processes
SHM_FRAME_RE = re.compile(r"multiprocessing[/\\](?:synchronize|shared_memory|heap|queues)\.py:\d+"
                          r"|torch[/\\]multiprocessing[/\\]reductions\.py:\d+|\bin (?:_share_filename_\w*|share_memory_)\b")
INNERMOST = 3  # frames looked at, innermost first


def shm_full(message: str, frames: Sequence[str]) -> bool:
    """The error is ENOSPC raised while making a shared-memory object (``frames``: outermost first, as printed)."""
    return bool(ENOSPC_RE.search(message)) and any(SHM_FRAME_RE.search(f) for f in frames[-INNERMOST:])

