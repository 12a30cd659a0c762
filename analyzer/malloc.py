"""Keep freed memory in the process for reuse, instead of handing it back to the kernel at once.

glibc's malloc maps every block over its mmap threshold (128 KB, raised as blocks are freed, up
to 32 MB) on its own and unmaps it when freed; the next block of that size is mapped again and the
kernel faults in and zeroes every page once more. Parsing and analysing a run allocates arrays of
megabytes to hundreds of megabytes over and over, and on the virtual machines this runs on a page
fault is expensive (memory is reclaimed behind the guest's back; docs/performance.md has the
figures).

``keep_freed_memory()`` raises both thresholds, so that blocks up to 256 MB come from the heap and up
to 512 MB of freed heap is kept. Only for processes that end when the analysis does (``analyze``, the
parse workers, ``bench``); the long-running ``serve`` and ``watch`` keep glibc's defaults. A no-op
where malloc is not glibc's.
"""
from __future__ import annotations

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int = 256 << 20, trim_threshold: int = 512 << 20) -> bool:
    """True when glibc took both settings."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        kept = bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, trim_threshold))
    except (OSError, AttributeError):  # not glibc: its defaults
        return False
    if kept and trim_threshold > HEAP_WARM_MAX and not _KEPT:
        _KEPT.append(True)
    return kept


_KEPT: list[bool] = []  # whether keep_freed_memory took effect in this process

HEAP_WARM_MAX = 448 << 20  # below the trim threshold: the warmed heap stays the process's
HEAP_WARM_PIECE = 64 << 20  # each piece under the mmap threshold, so it comes from (and goes back to) the heap


def warm_heap(nbytes: int) -> int:
    """Fault in up to ``nbytes`` (at most ``HEAP_WARM_MAX``) of fresh heap and free it again, so that the
    arrays made next reuse pages the kernel has already mapped and zeroed: for a process with time to
    spare now (waiting for its parse workers) and large arrays to make after (the model's table and its
    temporaries). Only once ``keep_freed_memory`` has taken effect in this process (else the pieces
    would go back to the kernel at once); returns the bytes warmed."""
    if not _KEPT:
        return 0
    import numpy as np

    pieces = []
    left = min(nbytes, HEAP_WARM_MAX)
    while left > 0:
        piece = np.empty(min(left, HEAP_WARM_PIECE), dtype=np.uint8)
        piece[::4096] = 0  # one write a page
        pieces.append(piece)
        left -= len(piece)
    warmed = sum(len(p) for p in pieces)
    del pieces
    return warmed
